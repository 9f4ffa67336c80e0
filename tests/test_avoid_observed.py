"""The duplicate guard (``search.avoid_observed``, ``ntkbo.optimize`` stage 5) is an option: off in
a paper's preset, where a Thompson draw's pick is the draw's own arg-max even at an observed
point, and, when on, it still replaces such a pick by a point that is not observed.

NeuralBO's ``preset="paper"`` (Algorithm 1, an independent draw per candidate) at a small width,
``nu = 0`` (the draw is then the network mean ``h``, which the test evaluates itself with the
trained parameters) and a candidate set of one Sobol point and the 4 best observed points (no
perturbations): the mean interpolates the data, so its minimiser over the candidates is the best
observed point. About 10 s on two loaded cores (two small programs compiled)."""

import importlib

import jax
import jax.numpy as jnp
import numpy as np

import ntkbo
from ntkbo.algorithms.observations import to_unit
from ntkbo.optimize import MIN_DISTANCE, near_observed

nb = importlib.import_module("ntkbo.algorithms.neural_bo")  # the module, not the factory

BRANIN = ntkbo.benchmarks.get("branin")
SMALL = dict(network={"width": 16}, nu=0.0,
             search={"num_candidates": 1, "num_best": 4, "num_perturbations": 0})


def _pick(avoid_observed):
    """``(x (1, d), info, state, observed (6, d))`` of one suggest after 6 observations."""
    search = dict(SMALL["search"])
    if avoid_observed is not None:
        search["avoid_observed"] = avoid_observed
    algo = ntkbo.algorithms.neural_bo(preset="paper", **{**SMALL, "search": search})
    x = ntkbo.loop.initial_design(jax.random.PRNGKey(0), BRANIN.bounds, 6)
    y = jax.vmap(BRANIN.fn)(x)
    state = algo.init(jax.random.PRNGKey(1), BRANIN.bounds, 8)
    state, _ = jax.jit(algo.update)(state, x, y)
    pick, info = jax.jit(algo.suggest)(jax.random.PRNGKey(2), state)
    return pick, info, state, x


def _mean(state, x):
    """``h`` at ``x`` ``(n, d)``: the trained network of the paper preset's architecture."""
    p = nb.PRESETS["paper"]["network"]
    _, apply_fn, _ = nb.network(x.shape[-1], p["depth"], 16, p["activation"], p["W_std"],
                                p["b_std"], "sphere")
    z = nb.embed(to_unit(x, state.bounds), "sphere")
    return np.asarray(apply_fn(state.params, z)[:, 0])


def test_a_thompson_preset_picks_the_draws_argmax_even_at_an_observed_point():
    """Guard off (the preset's ``search.avoid_observed=False``, not overridden): the pick is the
    candidate of lowest ``h`` (the arg-max of the draw ``-h`` at ``nu = 0``), here an observed
    point, and nothing is replaced. Mutation caught (checked): the guard applied whatever the
    option (``optimize.guarded`` returning the points when off): the pick is the Sobol point."""
    assert ntkbo.algorithms.presets("neural_bo")["paper"]["search"]["avoid_observed"] is False
    pick, info, state, x = _pick(None)
    assert int(info.duplicates_replaced) == 0
    unit = jnp.stack([jnp.zeros(2), jnp.ones(2)])
    on_observed = near_observed(to_unit(pick, state.bounds), to_unit(x, state.bounds), unit)
    assert bool(on_observed[0])
    # The draw's arg-max over the observed candidates (the 4 best) is the pick: its h is the
    # lowest of theirs (float64 rounding of one network evaluation: 1e-12 relative).
    best4 = x[np.argsort(np.asarray(jax.vmap(BRANIN.fn)(x)))[:4]]
    h_pick, h_best = _mean(state, pick), _mean(state, best4)
    assert h_pick[0] <= h_best.min() + 1e-12 * max(1.0, abs(h_best.min()))
    np.testing.assert_allclose(-float(info.acq_value[0]), h_pick[0], rtol=1e-9, atol=1e-12)


def test_the_guard_when_on_replaces_the_observed_pick():
    """``search.avoid_observed=True`` on the same preset, state and key: the observed pick is
    replaced by the one candidate that is not observed (the Sobol point), at least
    ``MIN_DISTANCE`` of the box from every observed point, and counted. Mutation caught
    (checked): ``avoid_observed`` ignored in ``neural_bo``'s suggest (``dup`` always None): the
    pick stays the observed point."""
    pick, info, state, x = _pick(True)
    assert int(info.duplicates_replaced) == 1
    unit = jnp.stack([jnp.zeros(2), jnp.ones(2)])
    assert not bool(near_observed(to_unit(pick, state.bounds), to_unit(x, state.bounds), unit,
                                  MIN_DISTANCE)[0])


def test_every_source_named_preset_runs_without_the_guard():
    """Every ``"paper"``, ``"authors"``, ``"appendix_f"``, ``"section2"`` and ``"sto_bnts"``
    preset of every algorithm with a search sets ``search.avoid_observed=False`` itself (so a
    change of the default leaves the papers' presets alone), and the default is off.
    Mutation caught: ``avoid_observed=False`` dropped from one preset (``gp_bo``'s
    ``_PAPER_GP``: checked), or the default turned on."""
    assert ntkbo.optimize.AVOID_OBSERVED is False
    sourced = {"paper", "authors", "appendix_f", "section2", "sto_bnts"}
    seen = 0
    for name in ntkbo.algorithms.names():
        for preset, options in ntkbo.algorithms.presets(name).items():
            if preset in sourced:
                assert options.get("search", {}).get("avoid_observed") is False, (name, preset)
                seen += 1
    assert seen >= 25  # every source-named preset of the registry (a guard against an empty loop)

