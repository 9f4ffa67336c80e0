"""Hyper-parameters as arguments (``ntkbo.base``): the raw functions of ``neural_bo.build`` and
``gp_bo.build_suggest`` under ``jax.vmap`` over NeuralBO's ``nu`` and ``lam`` and GP-UCB's
``beta`` run, for each value, what the factory built with that value runs (a Python loop).

Each run: ``init``, an update with a fixed 3-point design, then two rounds of suggest, evaluate,
update, all in float64 (tests/conftest.py) on Branin with the same keys. The loop side jits each
factory-built algorithm's run; the vmapped side jits one program over all values. Tolerance: a
vmapped program is compiled differently from the single runs (vectorised code, other fusion:
``ntkbo.loop.minimize_chunks``), so the two agree to rounding, not bit for bit; 1e-9 on points of
size ~10 and on the training losses is far above float64 rounding through 5 gradient steps and a
candidate argmax, and far below the distance between the values' own suggestions (asserted).
"""

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ntkbo
from ntkbo.algorithms import gp_bo

NB = importlib.import_module("ntkbo.algorithms.neural_bo")  # the module, not the factory
BRANIN = ntkbo.benchmarks.get("branin")
X0 = jnp.array([[-2.0, 3.0], [4.0, 11.0], [8.0, 1.0]])
KEYS = jax.random.split(jax.random.PRNGKey(3), 2)  # one per round
NEURAL = dict(network=dict(width=16), training=dict(num_steps=5),
              search=dict(num_candidates=64, num_perturbations=8, sampler="kronecker"))
# a shared lengthscale fitted in 5 L-BFGS steps (the prior's lengthscale, unfitted, is so long
# that every beta picks the same corner of the box)
GP = dict(fit=dict(ard=False, num_steps=5),
          search=dict(num_candidates=64, num_restarts=2, num_steps=5))
TOL = 1e-9  # the module docstring


def _run(init, suggest, update):
    """Init, the design, two rounds; returns the points suggested ``(2, 1, 2)``, the suggest
    infos and the update infos stacked (the design's update first), and the final state. The
    rounds are a ``lax.scan``, as in ``ntkbo.minimize``: one ``suggest`` and one round's
    ``update`` in the program instead of one per round (compiling the looped side is most of
    this file's time)."""
    state = init(jax.random.PRNGKey(0), BRANIN.bounds, 8)
    state, first = update(state, X0, BRANIN.fn_batch(X0))

    def round_(state, k):
        x, info = suggest(k, state)
        state, fit = update(state, x, BRANIN.fn_batch(x))
        return state, (x, info, fit)

    state, (xs, infos, fits) = jax.lax.scan(round_, state, KEYS)
    fits = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a[None], b]), first, fits)
    return xs, infos, fits, state


def _assert_same(vmapped, looped):
    for i, one in enumerate(looped):
        for a, b in zip(jax.tree_util.tree_leaves(vmapped),
                        jax.tree_util.tree_leaves(one)):
            a = np.asarray(a)[i]
            if a.dtype == bool or np.issubdtype(a.dtype, np.integer):
                np.testing.assert_array_equal(a, b)
            else:
                np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)


NEURAL_FIXED = dict(nu=1.0, lam=0.01)  # the hyper-parameter not varied keeps its value here
NEURAL_VALUES = {"nu": (0.2, 3.0), "lam": (0.01, 0.5)}


@pytest.fixture(scope="module")
def neural_vmapped():
    """name -> the vmapped raw runs over that hyper-parameter's values: both names' values in
    one program over ``(nu, lam)`` pairs, compiled once for the two parametrisations."""
    raw = NB.build(**NEURAL)
    pairs = [dict(NEURAL_FIXED, **{name: v}) for name, vs in NEURAL_VALUES.items() for v in vs]

    def raw_run(nu, lam):
        return _run(lambda k, b, c: raw.init(k, b, c, lam),
                    lambda k, s: raw.suggest(k, s, nu, lam),
                    lambda s, x, y: raw.update(s, x, y, lam))

    out = jax.jit(jax.vmap(raw_run))(*(jnp.asarray([p[h] for p in pairs]) for h in ("nu", "lam")))
    return {name: jax.tree_util.tree_map(lambda a, i=i: a[2 * i:2 * i + 2], out)
            for i, name in enumerate(NEURAL_VALUES)}


@pytest.mark.parametrize("name,values", list(NEURAL_VALUES.items()))
def test_neural_bo_vmap_over_a_hyper_parameter_equals_a_loop(neural_vmapped, name, values):
    """Mutation caught (checked): the raw ``suggest`` using a fixed ``nu_t`` (1.0) instead of its
    ``nu`` argument (the factory shares the raw function, so it is the not-vacuous check that
    fails). Not caught here (checked), as both sides share the code: ``lam`` dropped from the
    training alone; ``test_neural_bo``'s kernel-regression test covers that use of ``lam``."""
    fixed = NEURAL_FIXED
    vmapped = neural_vmapped[name]
    looped = []
    for v in values:
        algo = ntkbo.algorithms.neural_bo(**NEURAL, **dict(fixed, **{name: v}))
        looped.append(jax.jit(lambda a=algo: _run(a.init, a.suggest, a.update))())
    _assert_same(vmapped, looped)
    # not vacuous: the values lead to different runs
    assert not np.allclose(looped[0][3].params["params"]["Dense_0"]["kernel"],
                           looped[1][3].params["params"]["Dense_0"]["kernel"])
    assert type(looped[0][1]) is NB.NeuralBOSuggestInfo
    assert type(looped[0][2]) is NB.NeuralBOUpdateInfo


def test_gp_ucb_vmap_over_beta_equals_a_loop():
    """Mutation caught (checked): the raw ``suggest`` ignoring its ``beta`` argument for the
    factory's default 4.0 (the not-vacuous check fails: every beta then suggests alike)."""
    betas = (0.0, 64.0)  # 0: the posterior mean alone
    base = ntkbo.algorithms.gp(acquisition="ucb", **GP)
    opts = {**gp_bo.GP_OPTIMIZER_DEFAULTS, **{k: GP["search"][k] for k in (
        "num_candidates", "num_restarts", "num_steps")}}
    raw = gp_bo.build_suggest(gp_bo.stationary_model("rbf", shared=True), acquisition="ucb", q=1,
                              log_ei=True, **{k: opts[k] for k in (
                                  "num_candidates", "num_restarts", "num_steps",
                                  "num_ts_candidates", "jitter")})
    vmapped = jax.jit(jax.vmap(lambda b: _run(base.init, lambda k, s: raw(k, s, b, 0.0),
                                              base.update)))(jnp.asarray(betas))
    looped = []
    for b in betas:
        algo = ntkbo.algorithms.gp(acquisition="ucb", beta=b, **GP)
        looped.append(jax.jit(lambda a=algo: _run(a.init, a.suggest, a.update))())
    _assert_same(vmapped, looped)
    xs = np.stack([np.asarray(one[0]) for one in looped])
    assert np.abs(xs[0] - xs[1]).max() > 1e-3  # beta changes the suggestions
    assert type(looped[0][1]) is gp_bo.GPSuggestInfo and type(looped[0][2]) is ntkbo.NoInfo


def test_build_takes_neural_bos_structural_options_with_the_same_defaults():
    """``neural_bo.build`` repeats ``neural_bo``'s signature without ``nu`` and ``lam`` (those are
    arguments of the raw functions): the two must not drift apart, or the raw functions would
    compute another NeuralBO than the factory. Read with ``inspect`` from both functions.
    Mutation checked: ``build``'s ``num_steps`` default set to 100 fails here."""
    import inspect

    nb = importlib.import_module("ntkbo.algorithms.neural_bo")
    factory = {k: p.default for k, p in inspect.signature(nb.neural_bo).parameters.items()
               if k not in ("nu", "lam", "preset")}
    raw = {k: p.default for k, p in inspect.signature(nb.build).parameters.items()}
    assert raw == factory
