"""The parts (``ntkbo.parts``): every factory takes at most 12 top-level options, each plain option
of its implementation is reachable through exactly one public name, the records keep the plain
options that experiment cells hash, and a mistake is refused naming what the caller wrote."""

import inspect

import pytest

import ntkbo
from ntkbo import algorithms as A
from ntkbo.parts import PARTS, Layout, Network, PartOption, Search, Training, composed, set_option

#: What ``get(name, ...)`` needs from a problem (PINN-BO's ``pde``).
PDE = ntkbo.benchmarks.get("dropwave_pde").pde
BASES = sorted({A.base_name(n) for n in A.names()})


def _needs(name):
    return {"pde": PDE} if A.uses_pde(name) else {}


def _plain(name):
    f = A._FACTORIES[name].__wrapped__
    return getattr(f, "plain", f)


@pytest.mark.parametrize("name", A.names())
def test_at_most_twelve_top_level_options(name):
    """The 1.0 surface: no factory takes more than 12 options (a part counts as one)."""
    params = inspect.signature(A._FACTORIES[name]).parameters
    assert len(params) <= 12, (name, list(params))


@pytest.mark.parametrize("name", BASES)
def test_every_plain_option_has_exactly_one_public_name(name):
    """The plain options of the implementation are the public options that are not parts plus the
    options the parts stand for, each once. Mutation caught (checked): ``neural_bo``'s
    ``search.num_steps`` mapped to ``num_steps``, the training's (two public names for one
    plain option, none for the ascent's ``num_acq_steps``)."""
    layout = A.layout(A._FACTORIES[name])
    public = {layout.renames.get(k, k)
              for k in inspect.signature(A._FACTORIES[name]).parameters} - set(layout.parts)
    plain = set(inspect.signature(_plain(name)).parameters)
    stood_for = [o for fields in layout.parts.values() for o in fields.values()]
    stood_for += list(layout.custom.values())
    assert len(stood_for) == len(set(stood_for)), name
    assert public.isdisjoint(stood_for), name
    assert public | set(stood_for) == plain, (name, plain ^ (public | set(stood_for)))
    for part, fields in layout.parts.items():
        assert set(fields) <= set(PARTS[part].field_names()), (name, part)


def test_one_field_one_meaning_across_factories():
    """A part's field stands for plain options whose names say the same thing in every factory:
    ``search.num_steps`` is an ascent's steps (``num_steps``, ``num_acq_steps``, ``acq_steps``),
    never a training's. Mutation caught (checked): ``neural_bo``'s ``training.num_steps`` and
    ``search.num_steps`` swapped (each flat option still has one public name, so the import-time
    check of ``composed`` passes it; mapping only one of them fails at import)."""
    seen: dict[tuple[str, str], set[str]] = {}
    for name in BASES:
        layout = A.layout(A._FACTORIES[name])
        for part, fields in layout.parts.items():
            for field, plain in fields.items():
                seen.setdefault((part, field), set()).add(plain)
    allowed = {("search", "num_steps"): {"num_steps", "num_acq_steps", "acq_steps"},
               ("search", "method"): {"method", "acq_method"},
               ("training", "optimizer"): {"optimizer", "oracle_optimizer"},
               ("training", "learning_rate"): {"learning_rate", "oracle_learning_rate"},
               ("training", "num_steps"): {"num_steps", "oracle_steps"},
               ("training", "num_restarts"): {"oracle_restarts"},
               ("training", "penalty"): {"train_penalty"},
               ("training", "loss_reduction"): {"loss_reduction", "loss"},
               ("fit", "enabled"): {"fit"}, ("fit", "method"): {"fit_method"},
               ("fit", "num_steps"): {"num_fit_steps"},
               ("fit", "learning_rate"): {"fit_learning_rate"}, ("fit", "mean"): {"fit_mean"},
               ("residuals", "num_points"): {"num_residuals"},
               ("residuals", "noise_std"): {"rhs_noise_std"},
               ("residuals", "weight"): {"pde_weight"}}
    for (part, field), plains in seen.items():
        assert plains <= allowed.get((part, field), {field}), (part, field, plains)


def test_beta_is_an_exploration_weight_wherever_it_is_an_option():
    """``beta`` weighs exploration in GP-UCB, GO-UCB, Neural-CBO and STO-BNTS; DNGO's noise
    precision (its paper's ``beta``) is the option ``noise_precision`` (and its prior precision
    ``alpha`` is ``prior_precision``), while records keep ``alpha`` and ``beta``, the names its
    cells hash. Mutation caught (checked): the ``renames`` of ``neural_linear``'s ``LAYOUT``
    removed (its signature has ``beta`` again)."""
    for name in BASES:
        params = inspect.signature(A._FACTORIES[name]).parameters
        assert "alpha" not in params, name
        if "beta" in params and A.base_name(name) == "neural_linear":
            raise AssertionError("neural_linear takes beta")
    algo = A.get("dngo", noise_precision=3.0, prior_precision=0.5)
    assert algo.config["noise_precision"] == 3.0 and algo.config["prior_precision"] == 0.5
    flat = A.resolved_options("dngo", noise_precision=3.0, prior_precision=0.5)
    assert flat["beta"] == 3.0 and flat["alpha"] == 0.5
    with pytest.raises(TypeError, match="beta is noise_precision"):
        A.get("dngo", beta=3.0)


def test_records_keep_the_plain_options_the_cells_hash():
    """``resolved_options`` (what an experiment cell's digest hashes) flattens the parts back to
    the plain options: a part's field changes exactly its plain option, the config records the
    part whole, and ``get(name, **config)`` rebuilds the same algorithm. The expected flat dict is
    the defaults' with the two plain names set by hand. Mutation caught (checked): the config
    recording the parts as given instead of whole (``{"width": 16}``)."""
    base = A.resolved_options("neural_bo")
    got = A.resolved_options("neural_bo", network={"width": 16}, search=Search(num_steps=5))
    assert got == {**base, "width": 16, "num_acq_steps": 5}
    algo = A.neural_bo(network=Network(width=16), search={"num_steps": 5})
    assert algo.config["network"] == {"width": 16, "depth": 1, "activation": "relu",
                                      "W_std": "paper", "b_std": None}
    assert algo.config["search"]["num_steps"] == 5
    assert A.get("neural_bo", **algo.config).config == algo.config


@pytest.mark.parametrize("name", BASES)
def test_config_rebuilds_the_algorithm(name):
    """For every factory, the recorded config (parts whole) rebuilds the same record and the same
    hashed options."""
    algo = A.get(name, **_needs(name))
    again = A.get(name, **dict(algo.config))
    assert again.config == algo.config
    assert A.resolved_options(name, **dict(algo.config)) == A.resolved_options(name, **_needs(name))


def test_mistakes_name_what_the_caller_wrote():
    """A plain name that a part stands for, a field the algorithm does not read, a field that no
    part has, a value of the wrong type, and a validation error: each names the option as the
    caller writes it."""
    with pytest.raises(TypeError, match=r"width is network\.width"):
        A.neural_bo(width=64)
    with pytest.raises(ValueError, match=r"num_acq_steps is search\.num_steps"):
        A.resolved_options("neural_bo", num_acq_steps=5)
    with pytest.raises(ValueError, match=r"network\.parameterization is not an option"):
        A.neural_bo(network=Network(parameterization="standard"))
    with pytest.raises(ValueError, match=r"network has no field 'widht'"):
        A.neural_bo(network={"widht": 64})
    with pytest.raises(ValueError, match=r"training must be a Training"):
        A.neural_bo(training=Network(width=3))
    with pytest.raises(ValueError, match=r"training must be a Training"):
        A.neural_bo(training=100)
    # the implementation's check says "num_acq_steps must be ...": rewritten to the public name.
    # Mutation caught (checked): the rewrite removed from ``composed``.
    with pytest.raises(ValueError, match=r"^search\.num_steps must be an int"):
        A.neural_bo(search={"num_steps": -1})
    with pytest.raises(ValueError, match=r"search\.num_restarts=4 exceeds search\.num_candidates"):
        A.neural_bo(thompson="pathwise", search={"num_candidates": 2, "num_restarts": 4})


def test_a_part_given_twice_merges_field_by_field():
    """A preset's part and the caller's merge by field (the caller's win), as do the dotted
    ``--set`` keys; an option that is not a part is replaced."""
    merged = A.with_preset("neural_bo", "authors", {"network": Network(width=64)})
    assert merged["network"] == {**A.presets("neural_bo")["authors"]["network"], "width": 64}
    options: dict = {}
    set_option(options, "network.width", 64)
    set_option(options, "network.depth", 2)
    set_option(options, "lam", 0.1)
    assert options == {"network": {"width": 64, "depth": 2}, "lam": 0.1}
    with pytest.raises(ValueError, match="not a part"):
        set_option(options, "nets.width", 3)


def test_parts_show_what_they_set():
    assert repr(Training(num_steps=3)) == "Training(num_steps=3)"
    assert Training(num_steps=3).given() == {"num_steps": 3}
    assert Network() == Network() and Network(width=2) != Network(width=3)
    assert ntkbo.base.describe(Search(num_candidates=8)) == ({"num_candidates": 8}, True)


def test_a_public_factory_cannot_drift_from_its_implementation():
    """``composed`` checks, once at import, that the public factory's options stand for the
    implementation's flat ones (each through one name) with the same top-level defaults; a
    drift is a ``TypeError`` naming it. The toy implementation here stands in for an algorithm."""
    layout = Layout({"network": {"width": "width"}})

    def plain(*, width=8, lam=0.1):
        return width, lam

    @composed(plain, layout)
    def good(*, network: PartOption = None, lam: float = 0.1):
        return plain(**layout.flatten(dict(network=network, lam=lam), "good"))

    assert good(network={"width": 3}) == (3, 0.1) and good() == (8, 0.1)
    assert good.plain is plain and good.layout is layout
    with pytest.raises(TypeError, match="default of lam is 0.2"):
        @composed(plain, layout)
        def other_default(*, network: PartOption = None, lam: float = 0.2):
            return plain(**layout.flatten(dict(network=network, lam=lam), "other_default"))
    with pytest.raises(TypeError, match="do not stand for"):
        @composed(plain, layout)
        def missing(*, network: PartOption = None):
            return plain(**layout.flatten(dict(network=network), "missing"))


def test_a_network_part_is_what_the_kernels_take():
    """``ntkbo.kernels.network_mlp(Network(...))`` is ``mlp`` with the same fields (the kernels
    compared exactly), and ``ntk_gp`` given the network part suggests exactly what it suggests
    given that kernel function as its custom network: one description of the architecture for
    the kernels and the algorithms. Not vacuous: another ``W_std`` moves the suggestion."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from ntkbo.kernels import mlp, network_mlp

    net = Network(depth=2, width=16, activation="erf", W_std=1.5, b_std=0.1)
    x = jax.random.normal(jax.random.PRNGKey(0), (5, 3))
    for get in ("nngp", "ntk"):
        np.testing.assert_array_equal(network_mlp(net)[2](x, x, get),
                                      mlp(2, 16, "erf", 1.5, 0.1)[2](x, x, get))
    problem = ntkbo.benchmarks.get("branin")
    design = jnp.array([[-2.0, 3.0], [4.0, 11.0], [8.0, 1.0]])
    search = {"num_candidates": 64, "num_restarts": 2, "num_steps": 3}

    def suggestion(network):
        algo = A.ntk_gp(network=network, search=search)
        state = algo.init(jax.random.PRNGKey(0), problem.bounds, 8)
        state, _ = algo.update(state, design, problem.fn_batch(design))
        return np.asarray(algo.suggest(jax.random.PRNGKey(1), state)[0])

    fields = {k: v for k, v in net.given().items() if k != "width"}  # the NTK has no width
    as_part = suggestion(fields)
    np.testing.assert_array_equal(as_part, suggestion(network_mlp(net)[2]))
    assert not np.array_equal(as_part, suggestion({**fields, "W_std": 1.0}))
    with pytest.raises(ValueError, match="network.width"):
        network_mlp(Network(depth=2))
    with pytest.raises(ValueError, match="network.W_std"):
        network_mlp(Network(depth=1, width=8, W_std="paper"))
