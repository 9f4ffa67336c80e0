"""Presets: ``get(name, preset=P, **options)`` is the algorithm ``get(name,
**{**presets(name)[P], **options})`` for every registered name and each of its presets; the given
options win; a name without presets, or an unknown preset, is refused naming ``preset``; a module
whose names have different settings keys them per registry name (``PRESETS_BY_NAME``) and a preset
never changes the argument a named partial fixes (``gp_ucb``'s acquisition).

Only factory builds (no ``init``, no compilation) in the tests of the mechanism: they take about
a second. The reference each compares with is built independently: the expanded call, with the
preset's options spelled out by the test, not through ``preset=``.

Then the presets that name a source (``"paper"``, ``"authors"``): each value against the number as
the source writes it, with a comment citing where (section, equation, or the authors' code's
setting) and naming the mutation it catches. One of them trains (NeuralBO's ``"authors"`` against
the authors' network and optimiser written in JAX: about 5 s on two loaded cores)."""

import functools
import importlib
import inspect
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.flatten_util import ravel_pytree

import ntkbo
from ntkbo import algorithms as A
from ntkbo.kernels import mlp
from ntkbo.parts import merge, set_option

# The modules (``ntkbo.algorithms.neural_ucb`` the attribute is the recorded factory).
go_ucb, gp_bo, neural_bo, neural_linear, neural_ucb, pinn_bo = (
    importlib.import_module(f"ntkbo.algorithms.{m}")
    for m in ("go_ucb", "gp_bo", "neural_bo", "neural_linear", "neural_ucb", "pinn_bo"))

#: A problem with a PDE, for the names that need one (PINN-BO); the others need nothing here.
PDE_PROBLEM = ntkbo.benchmarks.get("dropwave_pde")

PAIRS = [(n, p) for n in A.names() for p in A.presets(n)]
NO_PRESETS = [n for n in A.names() if not A.presets(n)]


def _needs(name):
    """What ``get(name, ...)`` needs from a problem (PINN-BO's ``pde``), else nothing; not the
    guard ``problem_options`` also resolves, which would override a preset's."""
    return {"pde": A.problem_options(name, PDE_PROBLEM)["pde"]} if A.uses_pde(name) else {}


def _bound_keywords(name):
    """The keywords a named partial fixes (``gp_ucb``: ``acquisition="ucb"``), ``{}`` otherwise."""
    f = A._FACTORIES[name].__wrapped__
    return dict(f.keywords) if isinstance(f, functools.partial) else {}


def _dotted(config: dict) -> dict:
    """A record with each part's fields as ``"part.field"`` entries."""
    out = {}
    for k, v in config.items():
        if k in ntkbo.parts.PARTS and isinstance(v, dict):
            out.update({f"{k}.{f}": x for f, x in v.items()})
        else:
            out[k] = v
    return out


def _plain_preset(name, preset):
    """A preset's options under the implementation's plain names (``train_penalty``, ``width``),
    the names the papers' and the authors' settings are compared with below."""
    return A.layout(A._FACTORIES[name]).flatten(A.presets(name)[preset], name)


def _override(name, options):
    """``(key, value)``: an option of the preset ``options`` (dotted: ``"network.width"``) and a
    value of it the factory takes that differs from the preset's: the factory's default where the
    preset changes it, else one more than an integer option's value (widths, steps: any positive
    integer is valid)."""
    defaults = _dotted(A.defaults(name))
    options = _dotted(options)
    for key, value in options.items():
        if key in defaults and defaults[key] != value:
            return key, defaults[key]
    for key, value in options.items():
        if isinstance(value, int) and not isinstance(value, bool):
            return key, value + 1
    raise AssertionError(f"{name}: no option of {options} to override")


def _public(name, key):
    """Where plain option ``key`` of ``name`` is given and recorded: ``(part, field)`` or
    ``(key,)``."""
    return tuple(A.layout(A._FACTORIES[name]).public_name(key).split("."))


def _given(path, value):
    """The keyword arguments giving ``value`` at ``path`` (``_public``)."""
    return {path[0]: {path[1]: value}} if len(path) == 2 else {path[0]: value}


def _at(config, path):
    return config[path[0]][path[1]] if len(path) == 2 else config[path[0]]


def test_the_presets_cover_the_papers_algorithms():
    """The names this issue gives paper settings to have a ``"paper"`` preset (a guard that the
    parametrised tests below see them: an empty ``PAIRS`` would pass them vacuously).
    Mutation caught: ``presets`` back to the module's ``PRESETS`` only (``PRESETS_BY_NAME``
    ignored): ``neural_ucb``, ``dngo``, ``pinn_bo``, ``gp_ei`` lose their presets."""
    for name in ("go_ucb", "neural_greedy", "simple_smb", "posterior_smb", "neural_ucb",
                 "neural_ts", "dngo", "neural_lin_ts", "pinn_bo", "pinn_ntk_gp", "gp_ei",
                 "gp_ucb", "gp_ts", "gp_pi", "neural_bo"):
        assert "paper" in A.presets(name), name


@pytest.mark.parametrize("name, preset", PAIRS)
def test_a_preset_builds_and_is_its_expanded_options(name, preset):
    """``get(name, preset=P)`` builds, records ``name`` and the same resolved options as the call
    with ``presets(name)[P]`` written out, every option of the preset in effect, no ``preset``
    entry; ``resolved_options`` (the experiment cells' digests) agrees.
    Mutations caught: a preset key misspelt (``num_acq_step``: the factory raises ``TypeError``);
    a value the factory refuses (``u="dense"``: ``ValueError``); the preset dropped in
    ``recorded``'s ``build`` (the record is the defaults'); a preset for a partial's name written
    through the partial's own keyword (next test)."""
    need = _needs(name)
    options = A.presets(name)[preset]
    algo = A.get(name, preset=preset, **need)
    expanded = A.get(name, **options, **need)
    assert algo.name == name
    assert algo.config == expanded.config
    assert "preset" not in algo.config.to_json()
    resolved = A.resolved_options(name, preset=preset, **need)
    assert resolved == A.resolved_options(name, **options, **need)
    # the preset's options under the plain names the records hash
    for key, value in A.layout(A._FACTORIES[name]).flatten(options, name).items():
        assert resolved[key] == value, key
    config = _dotted(algo.config.to_json())
    for key, value in _dotted(options).items():
        assert config[key] == value, key


@pytest.mark.parametrize("name, preset", PAIRS)
def test_a_preset_keeps_what_a_named_partial_fixes(name, preset):
    """A preset shared by a factory's named partials (``gp_ei``/``gp_ucb``, ``simple_smb``/
    ``posterior_smb``, ``go_ucb``/``go_ucb_joint``) leaves the argument each name fixes as the name
    says: ``gp_ucb(preset="paper")`` is still UCB.
    Mutation caught: ``acquisition="ei"`` added to ``gp_bo``'s ``_PAPER_GP`` (``gp_ucb``,
    ``gp_ts``, ``gp_pi`` silently become EI); ``smb="simple"`` in ``neural_greedy``'s preset."""
    config = A.get(name, preset=preset, **_needs(name)).config
    for key, value in _bound_keywords(name).items():
        assert config[key] == value, (key, config[key], value)


@pytest.mark.parametrize("name, preset", PAIRS)
def test_an_option_given_with_a_preset_wins(name, preset):
    """An option given with the preset overrides the preset's value of it, the preset's other
    options stay, and ``resolved_options`` agrees. The override (``_override``) is the factory's
    own default of an option the preset changes, else one more unit of an integer option of the
    preset (a preset may equal today's defaults: ``neural_bo``'s ``"paper"``).
    Mutation caught: the merge order flipped in ``with_preset`` (``{**options, **preset}``: the
    preset's value survives the override)."""
    need = _needs(name)
    options = A.presets(name)[preset]
    key, value = _override(name, options)
    override: dict = {}
    set_option(override, key, value)  # a part's field: {"network": {"width": ...}}
    written_out = merge(options, override)
    algo = A.get(name, preset=preset, **override, **need)
    expected = A.get(name, **written_out, **need)
    assert algo.config == expected.config
    config = _dotted(algo.config.to_json())
    assert config[key] == value != _dotted(options)[key]
    for other, value in _dotted(options).items():
        if other != key:
            assert config[other] == value, other
    assert (A.resolved_options(name, preset=preset, **override, **need)
            == A.resolved_options(name, **written_out, **need))


@pytest.mark.parametrize("name", NO_PRESETS)
def test_a_name_without_presets_refuses_one(name):
    """``preset=`` on a name without presets is an error naming ``preset`` (not silently the
    defaults), from ``get``, the factory attribute and ``resolved_options`` alike.
    Mutation caught: ``with_preset`` returning the options when the preset is unknown."""
    need = _needs(name)
    with pytest.raises(ValueError, match="preset"):
        A.get(name, preset="paper", **need)
    with pytest.raises(ValueError, match="preset"):
        A.resolved_options(name, preset="paper", **need)


def test_an_unknown_preset_is_refused_naming_the_choices():
    """A preset the name does not have is refused, naming ``preset`` and the ones it has; a
    ``PRESETS_BY_NAME`` entry of one name is not another's (``neural_ts`` has no ``"paper"`` of
    ``neural_ucb``'s kind: its presets are its own).
    Mutation caught: ``with_preset`` ignoring an unknown preset."""
    with pytest.raises(ValueError, match=r"preset.*'paper'.*'sto_bnts'"):
        A.get("neural_ucb", preset="greedy")
    with pytest.raises(ValueError, match="preset"):
        A.neural_ts(preset="authors")


def test_presets_are_looked_up_by_registry_name_then_module():
    """``presets(name)``: the module's ``PRESETS_BY_NAME[name]`` (``neural_ucb`` and ``neural_ts``,
    one module, different settings; ``dngo`` and ``neural_lin_ts``, partials of one function),
    else the module's ``PRESETS`` (``neural_bo``, ``go_ucb_joint``); a name of a module with a
    by-name table that it does not list gets none (``gp``, ``ntk_gp``, ``neural_linear``).
    Mutations caught: the lookup keyed by the function's ``__name__`` instead of the registry
    name (``dngo`` would get ``neural_linear``'s entry, none); the by-name table of one name
    returned for another (``neural_ts`` would get NeuralUCB's Greedy-paper network)."""
    assert A.presets("neural_ucb") == neural_ucb.PRESETS_BY_NAME["neural_ucb"]
    assert A.presets("neural_ts") == neural_ucb.PRESETS_BY_NAME["neural_ts"]
    assert A.presets("neural_ucb")["paper"] != A.presets("neural_ts")["paper"]
    assert A.presets("dngo") == neural_linear.PRESETS_BY_NAME["dngo"]
    assert A.presets("neural_lin_ts") == neural_linear.PRESETS_BY_NAME["neural_lin_ts"]
    assert A.presets("pinn_bo") == pinn_bo.PRESETS_BY_NAME["pinn_bo"]
    assert A.presets("pinn_ntk_gp") == pinn_bo.PRESETS_BY_NAME["pinn_ntk_gp"]
    for name in ("gp_ei", "gp_ucb", "gp_ts", "gp_pi"):
        assert A.presets(name) == gp_bo.PRESETS_BY_NAME[name]
    assert A.presets("neural_bo") == neural_bo.PRESETS
    assert A.presets("go_ucb_joint") == A.presets("go_ucb") == go_ucb.PRESETS
    for name in ("gp", "gp_logei", "ntk_gp", "ntk_gp_ucb", "neural_linear", "random_search"):
        assert A.presets(name) == {}, name
    # The by-name table is keyed by registry names the registry knows (a misspelt key would be
    # dead: its name would silently get no presets).
    for module in (gp_bo, neural_linear, neural_ucb, pinn_bo):
        assert set(module.PRESETS_BY_NAME) <= set(A.names()), module.__name__


def test_preset_differences_are_where_the_records_differ():
    """``preset_differences(name, P)`` lists exactly the options whose recorded values (the
    ``Algorithm``'s ``config``, built by the factory) differ between the defaults and the preset,
    with both values, for every name and preset. Mutations caught: listing every option the preset
    sets (``neural_bo``'s ``"paper"`` sets 17, of which only ``nu`` and ``warm_start`` differ); the
    two values swapped."""
    for name in A.names():
        for preset in A.presets(name):
            need = _needs(name)
            default = _dotted(A.get(name, **need).config.to_json())
            chosen = _dotted(A.get(name, preset=preset, **need).config.to_json())
            expect = {k: (default[k], chosen[k]) for k in chosen if default.get(k) != chosen[k]}
            got = A.preset_differences(name, preset)
            # the problem's options (PINN-BO's pde) are not defaults: leave them out of both
            assert {k: v for k, v in got.items() if k not in need} == \
                {k: v for k, v in expect.items() if k not in need}, (name, preset)
    assert A.preset_differences("neural_bo", "paper") == {"nu": ("by_dimension", 1.0),
                                                          "training.warm_start": (True, False),
                                                          "search.avoid_observed": ("auto", False)}
    # The papers' GP baselines are ARD squared-exponential GPs (gp_bo's _PAPER_GP comment): with
    # gp's default ard="auto" the preset must set ARD itself. Mutation caught (checked):
    # ard=True dropped from _PAPER_GP (the preset would then choose by BIC like the default).
    assert A.preset_differences("gp_ei", "paper") == {"fit.refit_ratio": (1.1, 1.0),
                                                      "search.log_ei": (True, False),
                                                      "fit.ard": ("auto", True),
                                                      "search.avoid_observed": ("auto", False)}


# ---- Presets that name a source: every value against the number as the source writes it ----------
# A preset called "paper" or "authors" is a promise: each test below writes the source's number
# (with where it is written) and compares the preset's value with it, or with its conversion to
# ntkbo's conventions; where the source is ambiguous, the preset's comment names the reading it
# takes and the other reading is one argument away.

neural_cbo_m, sto_bnts_m = (importlib.import_module(f"ntkbo.algorithms.{m}")
                            for m in ("neural_cbo", "sto_bnts"))


def _preset_comment(module) -> str:
    """The ``#:`` comment block that documents ``module``'s ``PRESETS`` / ``PRESETS_BY_NAME``
    (the nearest one above the assignment), as one string."""
    lines = inspect.getsource(module).splitlines()
    starts = ("PRESETS = ", "PRESETS_BY_NAME = ")
    i = next(k for k, line in enumerate(lines) if line.startswith(starts))
    while not lines[i].startswith("#:"):
        i -= 1
    block = []
    while lines[i].startswith("#:"):
        block.append(lines[i][2:].strip())
        i -= 1
    return " ".join(reversed(block))


def _hidden_weights_count(depth, width, d):
    """Parameters of ntkbo's bias-free MLP with ``depth`` hidden layers on ``d`` inputs (their
    shapes only: ``jax.eval_shape`` of the initialisation, nothing computed)."""
    init_fn, _, _ = mlp(depth, width)
    shapes = jax.eval_shape(lambda: init_fn(jax.random.PRNGKey(0), (-1, d))[1])
    return sum(math.prod(v.shape) for v in jax.tree_util.tree_leaves(shapes))


def test_neural_bo_paper_preset_is_the_papers_numbers():
    """``neural_bo(preset="paper")``: Section 7's network and constants and Algorithms 1-2's
    training, and its comment says how it departs from Section 7's SGD."""
    p = _plain_preset("neural_bo", "paper")
    # NeuralBO paper, Sec. 7: "two-layer neural networks f(x; theta) = sqrt(m) W_2 sigma(W_1 x)
    # with network width m = 500": two weight matrices, one hidden layer, no biases.
    # Mutations caught: width=200 (the authors' code's); depth=2 (the two layers read as hidden).
    assert p["width"] == 500
    assert p["depth"] == 2 - 1
    assert p["b_std"] is None and p["activation"] == "relu"
    # Sec. 7: weights N(0, 1/m) with the output times sqrt(m): W_std="paper", (sqrt(d), 1), in
    # NTK parameterisation. Mutation caught: W_std=1.0 (the first layer also divided by sqrt(d)).
    assert p["W_std"] == "paper"
    # Sec. 7: "regularizer lambda = 0.01". Mutation caught: lam=0.005 (the authors' code's).
    assert p["lam"] == 0.01
    # Sec. 7: nu_t = nu, grid search over {0.1, 1, 10}, the choice per problem not reported: the
    # preset takes the grid's middle, 1, as its comment says. Mutations caught: nu=0.3 (the
    # default); nu=0.1 or 10 (the grid's other points, which the former `in` grid check let pass).
    assert p["nu"] == 1.0
    # Alg. 1 line 3: sigma_t from g(x; theta_0). Mutation caught: features="dynamic".
    assert p["features"] == "static" and p["thompson"] == "independent"
    # Alg. 2: L = 1/2 sum_i (h(x_i) - y_i)^2 + 1/2 m lam |theta - theta^(0)|^2, gradient descent
    # from theta^(0) = theta_0. Mutations caught (each): loss_reduction="mean", reg_center="zero",
    # warm_start=True, optimizer="adam", train_penalty=0.01 / 500 (the penalty must be lam).
    assert (p["loss_reduction"], p["reg_center"], p["warm_start"], p["optimizer"],
            p["train_penalty"]) == ("sum", "init", False, "gd", None)
    # Sec. 7: "SGD optimizer with batch size 50, epochs 50, learning rate 0.001": not expressible
    # (TrainNN is full batch), so the preset keeps Alg. 2's GD and says so. Mutation caught: the
    # departure's sentence dropped from the PRESETS comment.
    text = _preset_comment(neural_bo)
    for words in ("SGD", "batch 50", "50 epochs", "1e-3"):
        assert words in text, words


# The authors' code (github.com/phantrdat/neuralbo, first commit d32f12a),
# config/Ackley/DIM_2/NeuralBO_ackley2.json and baselines/neuralbo.py, as written there.
AUTHORS_NEURALBO = dict(L=2, W=200, learning_rate=0.001, epochs=100, weight_decay=0.005,
                        normalized_inputs=True, normalized_outputs=False, n_raw_samples=50000,
                        exploration_coeff=3.0, feature_mode="dynamic",
                        use_matrix_inversion_appoximation=False)


def test_neural_bo_authors_preset_is_the_codes_numbers():
    """``neural_bo(preset="authors")``: each value is the authors' configuration's, converted to
    ntkbo's parameterisation where it has to be (``PRESETS`` comment)."""
    c, p = AUTHORS_NEURALBO, _plain_preset("neural_bo", "authors")
    # "L": 2 nn.Linear layers (BaseNN: n_layers - 1 hidden), "W": 200, ReLU, biases on.
    # Mutations caught: depth=2 (L read as hidden layers); width=500 (the paper's); b_std=None.
    assert (p["depth"], p["width"], p["activation"]) == (c["L"] - 1, c["W"], "relu")
    # "weight_decay": 0.005 is also their lambda (U_0 = weight_decay I, the variance prefactor).
    # Mutation caught: lam=0.01 (the paper's).
    assert p["lam"] == c["weight_decay"]
    # "exploration_coeff": 3.0 multiplies the posterior std. Mutation caught: nu=2.0 (f6637cb's).
    assert p["nu"] == c["exploration_coeff"]
    # "epochs": 100 full-batch Adam steps per round, the optimiser created once (kept), the model
    # never reset. Mutations caught: num_steps=50; keep_optimizer_state=False; warm_start=False.
    assert (p["optimizer"], p["num_steps"]) == ("adam", c["epochs"])
    assert p["warm_start"] is True and p["keep_optimizer_state"] is True
    # torch.optim.Adam(lr=0.001) on W = W^ / sqrt(m): ntkbo's step is lr sqrt(W).
    # Mutation caught: learning_rate=1e-3 (unconverted: sqrt(200) times too small a step).
    assert p["learning_rate"] == pytest.approx(c["learning_rate"] * math.sqrt(c["W"]), rel=1e-15)
    # nn.MSELoss() (a mean, no 1/2) + Adam's weight_decay (wd/2 |W|^2) is twice ntkbo's mean
    # loss 1/2 mean r^2 + 1/2 penalty |W^|^2 with penalty = wd / (2 W), a decay toward 0.
    # Mutation caught (checked): train_penalty=0.005 / 200 (the 1/2 of the mean loss ignored).
    assert p["train_penalty"] == pytest.approx(c["weight_decay"] / (2 * c["W"]), rel=1e-15)
    assert (p["reg_center"], p["loss_reduction"]) == ("zero", "mean")
    # b_std = 1: every PyTorch parameter, biases included, is ntkbo's divided by sqrt(W), so one
    # learning rate and one penalty convert all of them (next test). Mutation caught (checked):
    # b_std=0.1 (the biases' steps and decay 10 and 100 times off).
    assert p["b_std"] == 1.0
    # "normalized_inputs": true maps the box to [-1, 1]^d; "normalized_outputs": false.
    # Mutations caught: input_map="sphere" (the default); standardize_y=True.
    assert p["input_map"] == "centered" and p["standardize_y"] is c["normalized_outputs"]
    # "n_raw_samples": 50000 Sobol candidates and nothing else. Mutation caught: num_best=4.
    assert (p["num_candidates"], p["num_best"], p["num_perturbations"], p["sampler"]) == (
        c["n_raw_samples"], 0, 0, "sobol")
    # "feature_mode": "dynamic"; the full U^-1 ("use_matrix_inversion_appoximation": false).
    # Mutations caught: features="static"; uncertainty="diag".
    assert p["features"] == c["feature_mode"] and p["uncertainty"] == "primal"
    # The comment names which commit's numbers these are, and the other's (f6637cb: lr 0.002,
    # exploration_coeff 2). Mutation caught: the commit left unnamed.
    text = _preset_comment(neural_bo)
    assert "d32f12a" in text and "f6637cb" in text


def test_neural_bo_authors_preset_trains_as_the_codes_network():
    """The authors' ``h(x) = sqrt(W) (W_2 relu(W_1 x + b_1) + b_2)`` at ``theta = theta^ /
    sqrt(W)`` is ntkbo's network at ``theta^`` with the preset's ``W_std``, ``b_std`` (to
    rounding); their features ``g / sqrt(W)`` are ntkbo's gradient features; and 10 steps of
    ``train`` with the preset's Adam step, penalty and loss are 10 steps of
    ``torch.optim.Adam(lr=0.001, weight_decay=0.005)`` on ``nn.MSELoss()`` (written with optax:
    the decay added to the gradient, then Adam), with their Adam ``eps`` ``2 sqrt(W)`` times
    ntkbo's ``1e-8`` (ntkbo's gradients are ``1 / (2 sqrt(W))`` of theirs): float64, 1e-9.
    Mutations caught (each checked): ``b_std=0.1`` (the networks differ at the start by up to
    1.0); ``train_penalty=0.005 / 200`` (trained parameters up to 3% apart);
    ``learning_rate=1e-3``."""
    c, p = AUTHORS_NEURALBO, _plain_preset("neural_bo", "authors")
    m, d, n, steps = c["W"], 2, 6, 10
    init_fn, apply_fn, feats = neural_bo.network(d, p["depth"], m, p["activation"], p["W_std"],
                                                 p["b_std"], p["input_map"])
    # theta^ ~ N(0, 1) as ntkbo's init draws it (shapes from eval_shape: no flax init to run)
    shapes = jax.eval_shape(lambda: init_fn(jax.random.PRNGKey(0), (-1, d))[1])
    leaves, tree = jax.tree_util.tree_flatten(shapes)
    keys = jax.random.split(jax.random.PRNGKey(0), len(leaves))
    th = jax.tree_util.tree_unflatten(tree, [jax.random.normal(k, v.shape, v.dtype)
                                             for k, v in zip(keys, leaves)])
    z = neural_bo.embed(jax.random.uniform(jax.random.PRNGKey(1), (n, d)), p["input_map"])
    y = jnp.sin(3.0 * z[:, 0]) - z[:, 1]

    def h_torch(t, x):
        layer0, layer1 = t["params"]["Dense_0"], t["params"]["Dense_1"]
        hidden = jax.nn.relu(x @ layer0["kernel"] + layer0["bias"])
        return math.sqrt(m) * (hidden @ layer1["kernel"] + layer1["bias"])[:, 0]

    def mse(t):  # nn.MSELoss()
        return jnp.mean((h_torch(t, z) - y) ** 2)

    torch_adam = optax.chain(optax.add_decayed_weights(c["weight_decay"]),
                             optax.adam(c["learning_rate"], eps=1e-8 * 2 * math.sqrt(m)))

    @jax.jit
    def both(th):
        t = jax.tree_util.tree_map(lambda v: v / math.sqrt(m), th)
        g_torch = jax.vmap(lambda x: ravel_pytree(jax.grad(
            lambda t: h_torch(t, x[None])[0])(t))[0])(z)
        zero = jax.tree_util.tree_map(jnp.zeros_like, th)
        trained, _, _, ok = neural_bo.train(apply_fn, th, zero, z, y, jnp.ones(n, bool),
                                            p["train_penalty"], p["learning_rate"], steps,
                                            optimizer="adam", reduction="mean")

        def step(carry, _):
            t, state = carry
            update, state = torch_adam.update(jax.grad(mse)(t), state, t)
            return (optax.apply_updates(t, update), state), None

        (t_end, _), _ = jax.lax.scan(step, (t, torch_adam.init(t)), None, length=steps)
        return (apply_fn(th, z)[:, 0], h_torch(t, z), feats(z, th), g_torch / math.sqrt(m),
                trained, t_end, ok)

    h_ntkbo, h_theirs, g_ntkbo, g_theirs, trained, t_end, ok = both(th)
    np.testing.assert_allclose(h_ntkbo, h_theirs, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g_ntkbo, g_theirs, rtol=1e-12, atol=1e-12)
    assert bool(ok)
    for a, b in zip(jax.tree_util.tree_leaves(trained), jax.tree_util.tree_leaves(t_end)):
        np.testing.assert_allclose(a / math.sqrt(m), b, rtol=1e-9, atol=1e-12)


def test_neural_cbo_paper_preset_names_its_reading_of_the_depth():
    """The thesis's ``L = 2`` is one hidden layer by Lemma B.1.5's count (the preset) and two by
    Eq. (4.1)'s (``depth=2``, one argument away); the comment names both."""
    p = A.presets("neural_cbo")["paper"]
    L = 2  # thesis Sec. 4.3.1: "We choose the network depth L = 2"
    # Lemma B.1.5: p = m d + m^2 (L - 2) + m, the parameters of ntkbo's bias-free network with
    # L - 1 hidden layers (checked for L = 2 and 3, which tells the counts apart).
    # Mutation caught: depth=2 in the preset (Eq. 4.1's count) without its comment saying so.
    m, d = 8, 3
    for layers in (2, 3):
        assert _hidden_weights_count(layers - 1, m, d) == m * d + m * m * (layers - 2) + m
    assert p["network"]["depth"] == L - 1
    # Eq. (4.1): W^(1) .. W^(L) hidden and the readout q: depth=L, one argument away, the rest
    # of the preset kept.
    alt = A.get("neural_cbo", preset="paper", network=dict(depth=L)).config
    assert alt["network"]["depth"] == L and alt["lam"] == p["lam"]
    # Algorithm 3 line 2: U_{f,0} = U_{c_i,0} = I, i.e. lam = 1. Mutation caught: lam=0.01.
    assert p["lam"] == 1.0
    # Mutation caught: the comment's "Lemma B.1.5" / "depth=2" (the reading, the alternative)
    # dropped.
    text = _preset_comment(neural_cbo_m)
    assert "Lemma B.1.5" in text and "Eq. (4.1)" in text and "depth=2" in text


def test_pinn_paper_presets_count_the_thesis_depth_in_weight_matrices():
    """``pinn_bo`` / ``pinn_ntk_gp`` ``preset="paper"``: Section 5.2's ``L`` counts weight
    matrices, so the grid's smallest depth is one hidden layer, as the ``"authors"`` preset maps
    4 ``Linear`` layers to 3; the other values are the thesis's numbers."""
    # Thesis Sec. 5.2: h = (1/sqrt(m)) W_L psi(W_{L-1} psi(... psi(W_1 x))), p = m d + m^2 (L - 2)
    # + m: L weight matrices, L - 1 hidden layers (the count, checked on ntkbo's network).
    m, d = 8, 3
    for layers in (2, 3, 4):
        assert _hidden_weights_count(layers - 1, m, d) == m * d + m * m * (layers - 2) + m
    # Sec. 5.4.1: "the depth and the learning rate are searched across the values {2, 3, 4} and
    # {0.001, 0.005, 0.01, 0.02, 0.05, 0.1}", width "{100, 200, 500}"; the choices are not
    # reported and the preset takes the smallest depth and width.
    # Mutation caught (checked): depth=2 (the grid's 2 read as hidden layers), in either name.
    depths, widths = (2, 3, 4), (100, 200, 500)
    rates = (0.001, 0.005, 0.01, 0.02, 0.05, 0.1)
    for name in ("pinn_bo", "pinn_ntk_gp"):
        net = A.presets(name)["paper"]["network"]
        assert net["depth"] == min(depths) - 1, name
        assert net["W_std"] == 1.0  # Sec. 5.2: weights N(0, 1)
        assert net["b_std"] is None  # Sec. 5.2: no biases in h
    p = A.presets("pinn_bo")["paper"]
    tr = p["training"]
    # The learning rate: the preset's documented choice from the grid, 1e-2. Mutation caught:
    # learning_rate=1e-3 (another grid point, which an `in rates` check let pass).
    assert p["network"]["width"] == min(widths) and tr["learning_rate"] == 1e-2 in rates
    # Sec. 5.4.1: "... after every 10 optimization iterations with 100 epochs", (stochastic)
    # gradient descent. Mutations caught: num_steps=200; optimizer="adam".
    assert (tr["num_steps"], tr["optimizer"]) == (100, "gd")
    # Eq. (5.1): the sum of the data and the PDE squared errors, unweighted, no regulariser.
    # Mutations caught: loss_reduction="mean"; weight=0.5; lam=0.01.
    assert (tr["loss_reduction"], p["residuals"]["weight"], p["lam"]) == ("sum", 1.0, 0.0)
    # The other reading, one argument away.
    need = _needs("pinn_bo")
    assert A.get("pinn_bo", preset="paper", network=dict(depth=2),
                 **need).config["network"]["depth"] == 2
    assert "depth=2" in _preset_comment(pinn_bo)
    # The authors' code (phantrdat/pinn-bo at 9fcc59da), the Rastrigin-20, Michalewicz-30 and
    # Cosine-Mixture-50 configs: "L" 4 nn.Linear layers, "W" 50, lr 0.01, 200 epochs,
    # n_residuals 40000, n_raw_samples 50000, exploration_coeff 1.
    # Mutations caught: depth=4 (L read as hidden layers); num_residuals=4000.
    a = A.presets("pinn_bo")["authors"]
    assert (a["network"]["depth"], a["network"]["width"], a["training"]["learning_rate"],
            a["training"]["num_steps"]) == (4 - 1, 50, 0.01, 200)
    assert (a["residuals"]["num_points"], a["search"]["num_candidates"], a["nu"]) == (
        40_000, 50_000, 1.0)


# He et al.'s defaults as the authors' repository ships them (github.com/daizhongxiang/sto-bnts at
# f0a1759, bayesian_ntk/config.py: W_std 1.5, b_std 0.05, learning_rate 1e-3, training_steps 1000,
# NOISE_SCALE 1e-1; sto_bnts.py: parameterization='standard'; train.py: optimizers.sgd on the full
# batch, loss 0.5 mean (f - y)^2 + 0.5 noise_scale^2 reg / N).
HE_DEFAULTS = dict(W_std=1.5, b_std=0.05, learning_rate=1e-3, training_steps=1000, noise_scale=0.1,
                   parameterization="standard")


def test_sto_bnts_presets_are_the_papers_and_the_codes_numbers():
    """``sto_bnts`` / ``sto_bnts_linear`` ``"appendix_f"`` (what the experiments ran: He et al.'s
    defaults), ``"section2"`` (Algorithm 1 as Sections 2-3 write it) and ``sto_bnts``'s
    ``"authors"`` (the Lunar-Lander code), every value against its source (whole-dict equality:
    any one-value edit or added option fails; e.g. ``num_steps=10_000`` in ``"appendix_f"``,
    checked); the comment does not call Levenberg-Marquardt's local minimiser of the non-convex
    loss (1) gradient descent's."""
    he = HE_DEFAULTS
    # Secs. 5.2-5.3: "the NN architecture of L=2, m=256" (L hidden layers), ReLU in every
    # real-world task (App. F); App. F: only the architecture varies from He et al.'s defaults.
    arch = dict(width=256, depth=2, activation="relu")
    # App. F: beta_t = 1; continuous domains: "randomly sample 10,000 inputs ... L-BFGS-B with 100
    # random restarts"; no duplicate guard (the paper has none).
    query = dict(search=dict(num_candidates=10_000, num_restarts=100, method="lbfgs",
                             avoid_observed=False))
    appendix_f = dict(
        network=dict(**arch, parameterization=he["parameterization"], W_std=he["W_std"],
                     b_std=he["b_std"]),
        sigma=he["noise_scale"], beta=1.0,
        perturb_targets=False,  # Algorithm 1: loss (1) on y
        input_map="cube",  # App. E: X in [0, 1]^d (the code's inputs)
        training=dict(optimizer="gd", learning_rate=he["learning_rate"],
                      num_steps=he["training_steps"], loss_reduction="mean", tol=None),
        fixed_key=False,  # Algorithm 1 lines 4-5: fresh theta_0, theta_0' for every member
        **query)
    # Secs. 2-3: init draws every parameter N(0, 1) (NTK parameterisation), Arora et al.'s
    # network without biases; "gradient descent till convergence" (Alg. 1 line 6) stood in for by
    # Levenberg-Marquardt to a 1e-4 relative gain, at most 300 steps (the preset's comment).
    section2 = dict(network=dict(**arch, W_std="paper", b_std=None, parameterization="ntk"),
                    beta=1.0, perturb_targets=False, fixed_key=False,
                    training=dict(optimizer="levenberg_marquardt", num_steps=300, tol=1e-4),
                    **query)
    # lunar_sto_bnts.py: configs = {'learning_rate': 1e-3, 'training_steps': 10000,
    # 'noise_scale': 0.1, 'W_std': 1.5, 'b_std': 0.05, 'width': 256, 'depth': 2}, PRNGKey(10)
    # re-created every round (fixed_key).
    authors = dict(appendix_f, training=dict(appendix_f["training"], num_steps=10_000),
                   fixed_key=True)
    got = A.presets("sto_bnts")
    assert got["appendix_f"] == appendix_f
    assert got["section2"] == section2
    assert got["authors"] == authors
    # STO-BNTS-Linear: the same network and query (its training is the closed form).
    linear = A.presets("sto_bnts_linear")
    assert linear["appendix_f"] == {k: v for k, v in appendix_f.items() if k != "training"}
    assert linear["section2"] == {k: v for k, v in section2.items() if k != "training"}
    # Initial designs: App. F.2's 5 random points (RF; no other count is given); the Lunar code's
    # 20 (inits/init_itr_*_init_20.p). Mutation caught: "authors": 5.
    assert {p: A.design("sto_bnts", p) for p in got if p != "linearized"} == {
        "appendix_f": 5, "section2": 5, "authors": 20}
    assert A.design("sto_bnts_linear", "appendix_f") == A.design("sto_bnts_linear", "section2") == 5
    # Mutation caught: the former wording ("GD's minimiser") restored in the comment; the page
    # must say which preset the experiments ran.
    text = _preset_comment(sto_bnts_m)
    assert "GD's minimiser" not in text and "not convex" in text
    assert "Appendix F" in text and "He et al." in text


def test_positional_options_override_a_preset_and_presets_are_copies():
    # The one positional option left is PINN-BO's required pde. Mutations checked: binding it
    # after the preset's options raises "multiple values"; returning the module's dict lets a
    # caller edit it.
    pde = PDE_PROBLEM.pde
    algo = ntkbo.algorithms.pinn_bo(pde, preset="paper")
    assert algo.config == ntkbo.algorithms.pinn_bo(pde=pde, preset="paper").config
    with pytest.raises(TypeError, match="multiple values"):
        ntkbo.algorithms.pinn_bo(pde, pde=pde)
    mine = ntkbo.algorithms.presets("neural_bo")
    mine["paper"]["network"]["width"] = 1
    assert ntkbo.algorithms.presets("neural_bo")["paper"]["network"]["width"] != 1


# ---- Every source-named preset pinned whole: the expected options written out here, each value
# with its source; an exact comparison, so a one-value edit (or an option added or dropped) fails.

NO_GUARD = dict(avoid_observed=False)  # no paper replaces an observed pick (ntkbo.optimize)


def test_go_ucb_paper_preset_is_section_6_and_appendix_d1():
    """Mutation caught (checked): ``learning_rate=1e-10`` for the oracle's SGD."""
    expected = dict(
        # Sec. 6: "linear2(sigmoid(linear1(x)))" with 25 hidden units, on [-5, 5]^d.
        network=dict(width=25, input_scale=5.0),
        n_explore=None,  # Alg. 1 Phase I: n = ceil(sqrt(T)) uniform points
        lam="paper",  # Thm 4.1: lam = sqrt(T) ln^2 T
        beta="paper",  # Thm 4.1: beta_t = p^3 F^4 t / T
        optimistic="joint",  # App. D.1: "gradient ascent algorithm over x and w"
        # App. D.1: "2000 iterations and learning rate 1e-4"
        search=dict(joint_steps=2000, joint_learning_rate=1e-4, **NO_GUARD),
        # App. D.1: the oracle by SGD, "2000 iterations, learning rate 1e-11"; one fit (Alg. 1).
        training=dict(optimizer="sgd", learning_rate=1e-11, num_steps=2000, refit_every=0))
    assert A.presets("go_ucb")["paper"] == expected
    assert A.presets("go_ucb_joint")["paper"] == expected


def test_gp_paper_preset_is_the_papers_baselines():
    """Mutation caught (checked): ``kernel="matern52"``."""
    expected = dict(
        kernel="rbf",  # squared exponential: NeuralBO Sec. 7, STO-BNTS Sec. 5, Be Greedy App. F.1
        fit=dict(enabled=True,  # the hyper-parameters fitted to the data (Be Greedy, App. F.1)
                 refit_ratio=1.0,  # after every observation
                 ard=True),  # a lengthscale per input
        search=dict(log_ei=False, **NO_GUARD))  # EI itself (LogEI is of 2023)
    for name in ("gp_ei", "gp_ucb", "gp_ts", "gp_pi"):
        assert A.presets(name)["paper"] == expected, name


def test_neural_greedy_paper_preset_is_appendix_f2():
    """``neural_greedy`` / ``simple_smb`` / ``posterior_smb`` ``"paper"``. Mutation caught
    (checked): ``network.width=500`` (NeuralLinTS's width)."""
    expected = dict(
        network=dict(width=5000, depth=1),  # App. F.2: one hidden layer of width 5000
        gamma=1.0,  # the baselines' gamma (F.2); its own runs tuned gamma in [0.5, 5]
        sigma=0.0, nu=1.0,  # F.2: sigma^2 = 0, nu = 1
        training=dict(optimizer="adam", num_steps=None,  # F.2: Adam at 1e-3, steps not given
                      learning_rate=1e-3),
        num_explore=10,  # Sec. 2: T_e "typically <= 10"
        # F.2: the surrogate minimised from 10 random restarts, 500 GD steps each
        search=dict(num_candidates=10, num_restarts=10, num_steps=500, sampler="uniform",
                    num_best=0, **NO_GUARD))
    for name in ("neural_greedy", "simple_smb", "posterior_smb"):
        assert A.presets(name)["paper"] == expected, name


def test_neural_ucb_and_neural_ts_presets_are_the_baselines_settings():
    """NeuralUCB ``"paper"`` (Be Greedy's baseline), NeuralUCB / NeuralTS ``"sto_bnts"`` and
    NeuralTS ``"paper"`` (STO-BNTS's baselines). Mutations caught (checked): ``network.width=200``
    for Greedy's NeuralUCB; ``activation="relu"`` there (App. A's tanh is ``"erf"``)."""
    greedy_ucb = dict(
        # Sec. 3: "a 2-hidden layer network of width 20"; App. A: tanh (as "erf", the closest
        # activation ntkbo's networks have); F.2: weights N(0, gamma^2 / fan_in), hidden biases
        # N(0, gamma^2), gamma = 1 for the baselines.
        network=dict(width=20, depth=2, activation="erf", W_std=1.0, b_std=1.0),
        lam=0.01, nu=0.1,  # F.1-F.2: points of the grids lam {1e-2..1e-5}, nu {0.01, 0.1, 1}
        u="full",  # the p x p inverse (Sec. 3: the reason for the small network)
        # F.2: 10 random starts, 500 gradient steps each
        search=dict(num_candidates=10, num_restarts=10, num_steps=500, method="pgd",
                    **NO_GUARD))
    assert A.presets("neural_ucb")["paper"] == greedy_ucb
    # STO-BNTS App. F: the NeuralTS code's defaults with the paper's architecture (depth 2,
    # width 256, ReLU), lam 0.001, nu 1 (the result files), the diagonal U; 10,000 random points,
    # NeuralUCB's refined by L-BFGS(-B) from 100 starts.
    sto = dict(network=dict(width=256, depth=2, activation="relu"), lam=0.001, nu=1.0, u="diag",
               search=dict(num_candidates=10_000, **NO_GUARD))
    assert A.presets("neural_ts")["paper"] == A.presets("neural_ts")["sto_bnts"] == sto
    assert A.presets("neural_ucb")["sto_bnts"] == dict(
        sto, search=dict(num_candidates=10_000, num_restarts=100, method="lbfgs", **NO_GUARD))


def test_dngo_and_neural_lin_ts_presets_are_their_sources():
    """Mutation caught (checked): DNGO ``"paper"`` ``num_steps=100`` (the NeuralBO repo's)."""
    # pybnn.dngo.DNGO's defaults (github.com/automl/pybnn, pybnn/dngo.py): 3 layers of 50 units,
    # Adam lr 1e-2, 500 epochs, no weight decay, normalised outputs, alpha/beta by evidence.
    dngo_paper = dict(network=dict(width=50, depth=3), prior_precision="evidence",
                      noise_precision="evidence",
                      training=dict(learning_rate=1e-2, num_steps=500, weight_decay=0.0),
                      y_transform="standardize", search=dict(NO_GUARD))
    # The NeuralBO repository's DNGO config: num_epochs 100, lr 0.01, hidden_size 10,
    # n_restart 20.
    dngo_authors = dict(dngo_paper, network=dict(width=10, depth=3),
                        training=dict(learning_rate=1e-2, num_steps=100, weight_decay=0.0),
                        search=dict(num_restarts=20, **NO_GUARD))
    assert A.presets("dngo") == {"paper": dngo_paper, "authors": dngo_authors}
    # Be Greedy App. F.1-F.2: one hidden layer of 500, W_std = b_std = gamma = 1, Adam 1e-3;
    # prior gamma I and noise sigma^2 at the middle of their grids (gamma 100: alpha 0.01;
    # sigma^2 0.01: beta 100); 10 random starts, 500 gradient steps each.
    assert A.presets("neural_lin_ts") == {"paper": dict(
        network=dict(width=500, depth=1, W_std=1.0, b_std=1.0), prior_precision=1 / 100,
        noise_precision=1 / 0.01, training=dict(learning_rate=1e-3),
        search=dict(num_candidates=10, num_restarts=10, num_steps=500, method="pgd",
                    **NO_GUARD))}


def test_the_remaining_source_named_presets_are_pinned_whole():
    """NeuralBO's, Neural-CBO's and PINN-BO's presets as whole dicts (their values are checked
    one by one with their sources above; here nothing else may be in them). Mutation caught
    (checked): an option added to NeuralBO's ``"paper"`` (``input_map="cube"``)."""
    p = A.presets("neural_bo")["paper"]
    assert p == dict(network=dict(width=500, depth=1, activation="relu", W_std="paper",
                                  b_std=None),
                     lam=0.01, nu=1.0, features="static", uncertainty="dual",
                     training=dict(optimizer="gd", learning_rate=None, num_steps=200,
                                   warm_start=False, keep_optimizer_state=False,
                                   reg_center="init", penalty=None, loss_reduction="sum"),
                     thompson="independent", search=dict(NO_GUARD))
    c = AUTHORS_NEURALBO
    assert A.presets("neural_bo")["authors"] == dict(
        network=dict(width=c["W"], depth=c["L"] - 1, activation="relu", W_std="paper", b_std=1.0),
        lam=c["weight_decay"], nu=c["exploration_coeff"], input_map="centered",
        features=c["feature_mode"], uncertainty="primal",
        training=dict(optimizer="adam", learning_rate=c["learning_rate"] * math.sqrt(c["W"]),
                      num_steps=c["epochs"], warm_start=True, keep_optimizer_state=True,
                      reg_center="zero", penalty=c["weight_decay"] / (2 * c["W"]),
                      loss_reduction="mean"),
        standardize_y=c["normalized_outputs"],
        search=dict(num_candidates=c["n_raw_samples"], num_best=0, num_perturbations=0,
                    sampler="sobol", **NO_GUARD),
        thompson="independent")
    # Neural-CBO: Lemma B.1.5's L = 2 (one hidden layer), Algorithm 3 line 2's U_0 = I.
    assert A.presets("neural_cbo")["paper"] == dict(network=dict(depth=1), lam=1.0,
                                                    search=dict(NO_GUARD))
    # PINN-BO (thesis Secs. 5.2, 5.4.1, Eq. 5.1; the released code at 9fcc59da).
    assert A.presets("pinn_bo") == {
        "paper": dict(network=dict(width=100, depth=1, W_std=1.0, b_std=None),
                      residuals=dict(weight=1.0), lam=0.0,
                      training=dict(loss_reduction="sum", optimizer="gd", learning_rate=1e-2,
                                    num_steps=100, warm_start=False),
                      search=dict(NO_GUARD)),
        "authors": dict(network=dict(width=50, depth=3),
                        residuals=dict(num_points=40_000, weight=1.0), nu=1.0,
                        training=dict(loss_reduction="mean", reg_center="zero", optimizer="adam",
                                      learning_rate=1e-2, num_steps=200, warm_start=True),
                        search=dict(num_candidates=50_000, method="none", **NO_GUARD))}
    # Definition 5.3.1 / Lemma 5.3.4 on the paper network's NTK, Algorithm 4's nu_t, Thompson.
    assert A.presets("pinn_ntk_gp") == {"paper": dict(
        network=dict(depth=1, W_std=1.0, b_std=None), acquisition="ts", nu="thesis",
        search=dict(NO_GUARD))}


#: Every (name, preset) that names a source, and the test above that pins it.
PINNED = {
    ("go_ucb", "paper"), ("go_ucb_joint", "paper"),
    ("gp_ei", "paper"), ("gp_ucb", "paper"), ("gp_ts", "paper"), ("gp_pi", "paper"),
    ("neural_greedy", "paper"), ("simple_smb", "paper"), ("posterior_smb", "paper"),
    ("neural_ucb", "paper"), ("neural_ucb", "sto_bnts"), ("neural_ts", "paper"),
    ("neural_ts", "sto_bnts"), ("dngo", "paper"), ("dngo", "authors"), ("neural_lin_ts", "paper"),
    ("neural_bo", "paper"), ("neural_bo", "authors"), ("neural_cbo", "paper"),
    ("pinn_bo", "paper"), ("pinn_bo", "authors"), ("pinn_ntk_gp", "paper"),
    ("sto_bnts", "appendix_f"), ("sto_bnts", "section2"), ("sto_bnts", "authors"),
    ("sto_bnts_linear", "appendix_f"), ("sto_bnts_linear", "section2"),
}
#: Presets that name no source: ntkbo's former defaults.
UNSOURCED = {("neural_cbo", "one_layer"), ("sto_bnts", "linearized")}


def test_every_preset_is_pinned_or_names_no_source():
    """The registry's presets are exactly the pinned ones and the two former defaults: a preset
    added without a pin fails here. Mutation caught: a new ``"paper"`` preset for ``ntk_gp``."""
    assert set(PAIRS) == PINNED | UNSOURCED


def test_presets_carry_their_initial_design_and_a_given_n_init_wins():
    """``algo.n_init`` is the source's initial design (NeuralBO: the authors' ``n_init=5``;
    PINN-BO: Sec. 5.4.1's 50; STO-BNTS above), ``None`` without a preset or a source count;
    ``loop.default_n_init`` (what ``minimize`` and ``minimize_chunks`` call), ``ask_tell.start``
    and a study's cells use it when no ``n_init`` is given, and a given one wins. Only factory
    builds, one ``ask_tell.start`` and one spec resolution: no compilation.
    Mutations caught (checked): ``n_init=design(name, preset)`` dropped in ``recorded``;
    ``default_n_init`` ignoring ``algo``; the spec resolving ``n_init`` before the algorithms."""
    need = _needs("pinn_bo")
    assert A.get("neural_bo", preset="paper").n_init == 5
    assert A.get("neural_bo", preset="authors").n_init == 5
    assert A.get("pinn_bo", preset="paper", **need).n_init == 50
    assert A.get("pinn_bo", preset="authors", **need).n_init == 50
    assert A.get("pinn_ntk_gp", preset="paper", **need).n_init == 50
    assert A.get("neural_bo").n_init is None and A.get("go_ucb", preset="paper").n_init is None
    branin = ntkbo.benchmarks.get("branin")
    paper = A.get("neural_bo", preset="paper")
    assert ntkbo.loop.default_n_init(branin, 40, paper) == 5
    assert ntkbo.loop.default_n_init(branin, 4, paper) == 4  # never above the budget
    assert ntkbo.loop.default_n_init(branin, 40, A.get("neural_bo")) == 3  # d + 1
    study = ntkbo.ask_tell.start(paper, branin.bounds, jax.random.PRNGKey(0))
    assert study.design.shape[0] == 5
    study = ntkbo.ask_tell.start(paper, branin.bounds, jax.random.PRNGKey(0), n_init=2)
    assert study.design.shape[0] == 2
    from ntkbo.experiments.spec import AlgorithmSpec, ProblemSpec, Spec
    spec = Spec(name="t", budget=12, seeds=1,
                algorithms=(AlgorithmSpec("neural_bo", {"preset": "paper"}, label="paper"),
                            AlgorithmSpec("neural_bo", label="default")),
                problems=(ProblemSpec("branin"), ProblemSpec("hartmann3", n_init=2)))
    cells = {c.cell_id: c.n_init for c in spec.resolve("full")}
    assert cells == {"paper__branin__d2": 5, "default__branin__d2": 3,
                     "paper__hartmann3__d3": 2, "default__hartmann3__d3": 2}


def test_presets_carry_their_design_sampler_to_every_driver():
    """``algo.design_sampler``: STO-BNTS's source-named presets draw uniform random points
    (Appendix F: initial inputs "selected by random search"), NeuralBO's ``"authors"`` Sobol
    (its code), every other algorithm and preset ``None`` (no sampler named: the drivers'
    scrambled Sobol). ``minimize`` (budget = ``n_init``: the design alone, on random search,
    the cheapest program), ``ask_tell.start`` and a study's cells draw the design with it: the
    points are ``qmc.uniform``'s at the design key ``split(key, 4)[0]``, not ``qmc.sobol``'s; a
    cell's definition names a uniform sampler and no Sobol one (the default, absent from the
    digests of the cells stored before). Mutations caught
    (checked): ``design_sampler=...`` dropped in ``recorded``; ``_init`` or ``ask_tell.start``
    ignoring ``algo.design_sampler``; ``_definition`` leaving a uniform sampler out."""
    for name in ("sto_bnts", "sto_bnts_linear"):
        for preset in ("appendix_f", "section2"):
            assert A.get(name, preset=preset).design_sampler == "uniform", (name, preset)
    assert A.get("sto_bnts", preset="authors").design_sampler == "uniform"
    assert A.get("neural_bo", preset="authors").design_sampler == "sobol"
    named = {("sto_bnts", p) for p in ("appendix_f", "section2", "authors")} | {
        ("sto_bnts_linear", p) for p in ("appendix_f", "section2")} | {("neural_bo", "authors")}
    for name in A.names():
        assert A.design_sampler(name) is None
        for preset in A.presets(name):
            if (name, preset) not in named:
                assert A.design_sampler(name, preset) is None, (name, preset)
    branin = ntkbo.benchmarks.get("branin")
    key = jax.random.PRNGKey(7)
    k_design = jax.random.split(key, 4)[0]
    uniform = ntkbo.qmc.uniform(k_design, 5, branin.bounds)
    assert not np.allclose(uniform, ntkbo.qmc.sobol(k_design, 5, branin.bounds))
    algo = A.get("random_search")._replace(design_sampler="uniform")
    r = ntkbo.minimize(algo, branin, 5, key, n_init=5)
    np.testing.assert_array_equal(r.x, uniform)
    study = ntkbo.ask_tell.start(A.get("sto_bnts", preset="appendix_f"), branin.bounds, key)
    np.testing.assert_array_equal(study.design, uniform)
    from ntkbo.experiments.spec import AlgorithmSpec, ProblemSpec, Spec

    def cells(*algorithms):
        spec = Spec(name="t", budget=12, seeds=1, algorithms=algorithms,
                    problems=(ProblemSpec("branin"),))
        return {c.algorithm.id: c for c in spec.resolve("full")}

    c = cells(AlgorithmSpec("sto_bnts", {"preset": "appendix_f"}, label="f"),
              AlgorithmSpec("neural_bo", {"preset": "authors"}, label="authors"),
              AlgorithmSpec("neural_bo", label="plain"))
    assert c["f"].definition()["design_sampler"] == "uniform"
    assert c["f"].build()[0].design_sampler == "uniform"
    assert "design_sampler" not in c["authors"].definition()
    assert "design_sampler" not in c["plain"].definition()
