"""The duplicate guard (``search.avoid_observed``, ``ntkbo.optimize`` stage 5) is an option: off in
a paper's preset, where a Thompson draw's pick is the draw's own arg-max even at an observed
point, and, when on, it still replaces such a pick by a point that is not observed.

NeuralBO's ``preset="paper"`` (Algorithm 1, an independent draw per candidate) at a small width,
``nu = 0`` (the draw is then the network mean ``h``, which the test evaluates itself with the
trained parameters) and a candidate set of one Sobol point and the 4 best observed points (no
perturbations): the mean interpolates the data, so its minimiser over the candidates is the best
observed point. About 10 s on two loaded cores (two small programs compiled).

The default, ``"auto"``: on for a noise-free problem, off for a noisy one, resolved where the
algorithm meets the problem (``ntkbo.minimize``, ``ntkbo.algorithms.for_problem`` and
``problem_options``, which the study runner and ``ntkbo run`` call). The same preset with
``search.avoid_observed="auto"`` run by ``minimize`` for one round after 6 initial points, on
Branin and on Branin with noise: two more small programs."""

import functools
import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ntkbo
from ntkbo.algorithms.observations import to_unit
from ntkbo.experiments.spec import Spec
from ntkbo.optimize import MIN_DISTANCE, avoid_observed_for, near_observed

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
    change of the default leaves the papers' presets alone), and the default is ``"auto"``.
    Mutation caught: ``avoid_observed=False`` dropped from one preset (``gp_bo``'s
    ``_PAPER_GP``: checked), or another default."""
    assert ntkbo.optimize.AVOID_OBSERVED == "auto"
    sourced = {"paper", "authors", "appendix_f", "section2", "sto_bnts"}
    seen = 0
    for name in ntkbo.algorithms.names():
        for preset, options in ntkbo.algorithms.presets(name).items():
            if preset in sourced:
                assert options.get("search", {}).get("avoid_observed") is False, (name, preset)
                seen += 1
    assert seen >= 25  # every source-named preset of the registry (a guard against an empty loop)



# ---- "auto": on for a noise-free problem, off for a noisy one --------------------------------

NOISY = BRANIN.replace(noise_std=1e-3)  # small: the picks are those of the noise-free fit
AUTO = dict(SMALL, search={**SMALL["search"], "avoid_observed": "auto"})


@functools.lru_cache(maxsize=None)
def _auto_run(noisy: bool):
    """``minimize`` of the paper preset with ``avoid_observed="auto"`` on Branin (``noisy``:
    with noise), budget 7 after 6 initial points: ``(the pick (d,), the observed (6, d), the
    round's duplicates_replaced)``; one compile per problem, shared by the tests."""
    algo = ntkbo.algorithms.neural_bo(preset="paper", **AUTO)
    r = ntkbo.minimize(algo, NOISY if noisy else BRANIN, 7, jax.random.PRNGKey(3), n_init=6)
    return r.x[6], r.x[:6], int(np.sum(r.info.duplicates_replaced))


def _on_observed(pick, observed) -> bool:
    unit = jnp.stack([jnp.zeros(2), jnp.ones(2)])
    return bool(near_observed(to_unit(pick[None], BRANIN.bounds),
                              to_unit(observed, BRANIN.bounds), unit, MIN_DISTANCE)[0])


def test_the_rule_auto_is_on_exactly_without_noise():
    """``avoid_observed_for``, the one rule of every path, against its table; a bool holds
    whatever the noise; anything else is refused. Mutations caught: ``"auto"`` treated as on
    or as off (one row fails each)."""
    assert avoid_observed_for("auto", noisy=False) is True
    assert avoid_observed_for("auto", noisy=True) is False
    for value in (True, False):
        for noisy in (True, False):
            assert avoid_observed_for(value, noisy) is value
    with pytest.raises(ValueError, match="avoid_observed"):
        avoid_observed_for("on", noisy=False)
    assert ntkbo.objective.is_noisy(NOISY) and not ntkbo.objective.is_noisy(BRANIN)
    assert ntkbo.objective.is_noisy(BRANIN.replace(constraint_noise_std=0.1))


def test_minimize_keeps_an_observed_pick_on_a_noisy_problem():
    """Noisy Branin: ``minimize`` runs the preset with the guard off, so the draw's arg-max,
    here an observed point (as in the first test), is evaluated again and nothing is
    replaced. Mutation caught (checked): ``"auto"`` treated as on in ``avoid_observed_for``
    (``resolve_guard`` then keeps the algorithm as built): the pick is replaced."""
    pick, observed, replaced = _auto_run(True)
    assert replaced == 0
    assert _on_observed(pick, observed)


def test_minimize_replaces_an_observed_pick_on_a_noise_free_problem():
    """Branin without noise, the same key: the guard is on, so the observed pick is replaced
    by a point at least ``MIN_DISTANCE`` from every observed one. Mutation caught (checked):
    ``"auto"`` treated as off in ``avoid_observed_for``: the observed pick stays."""
    pick, observed, replaced = _auto_run(False)
    assert replaced == 1
    assert not _on_observed(pick, observed)


def test_for_problem_and_the_specs_resolve_auto_by_the_problems_noise():
    """``for_problem`` (and ``problem_options`` beneath it, which ``ntkbo run`` calls) records
    the resolved guard: on for Branin, off for noisy Branin; a preset's ``False`` and a given
    ``True`` stay. A study's noise-free cell records ``True`` and hashes as a cell that gave
    ``True``; the noisy cell records ``False``. Mutation caught (checked): ``problem_options``
    not resolving ``"auto"`` (the noise-free cell's options then carry ``"auto"`` and its
    digest changes)."""
    def guard(problem, **options):
        algo = ntkbo.algorithms.for_problem("gp_ei", problem, **options)
        return algo.config["search"]["avoid_observed"]

    assert guard(BRANIN) is True and guard(NOISY) is False
    assert guard(BRANIN, preset="paper") is False
    assert guard(NOISY, search={"avoid_observed": True}) is True

    def cells(search):
        spec = Spec.from_dict({
            "name": "guard", "budget": 10, "seeds": 1,
            "problems": [{"name": "branin", "label": "quiet"},
                         {"name": "branin", "label": "noisy", "noise_std": 0.1}],
            "algorithms": [{"name": "gp_ei", "options": {"search": search}}]})
        return {c.problem.id: c for c in spec.resolve("full")}

    auto, on = cells({"num_candidates": 64}), cells({"num_candidates": 64,
                                                      "avoid_observed": True})
    assert auto["quiet"].options["avoid_observed"] is True
    assert auto["quiet"].digest == on["quiet"].digest
    assert auto["noisy"].options["avoid_observed"] is False
    assert auto["noisy"].digest != on["noisy"].digest


def test_minimize_refuses_auto_on_a_traced_problem():
    """A problem passed as an argument of ``jax.jit`` has a traced ``noise_std``: ``"auto"``
    cannot be resolved, and ``minimize`` says so (before tracing anything) rather than guess.
    An algorithm built by ``for_problem`` has the guard resolved and runs. Mutation caught:
    a traced noise read as noise-free (``is_noisy`` returning False on a tracer)."""
    algo = ntkbo.algorithms.neural_bo(preset="paper", **AUTO)
    run = jax.jit(lambda p, k: ntkbo.minimize(algo, p, 7, k, n_init=6))
    with pytest.raises(ValueError, match="traced"):
        run(NOISY, jax.random.PRNGKey(3))
    built = ntkbo.algorithms.for_problem("neural_bo", NOISY, preset="paper", **AUTO)
    assert ntkbo.algorithms.resolve_guard(built, NOISY) is built


def test_resolve_guard_rebuilds_once_and_keeps_the_preset_design():
    """The algorithm ``minimize`` runs on a noisy problem is rebuilt from the record with the
    guard off, once (the same object again, so jit's caches hit), with the preset's ``n_init``;
    on a noise-free problem the algorithm itself."""
    algo = ntkbo.algorithms.neural_bo(preset="paper", **AUTO)
    quiet = ntkbo.algorithms.resolve_guard(algo, BRANIN)
    noisy = ntkbo.algorithms.resolve_guard(algo, NOISY)
    assert quiet is algo
    assert noisy is ntkbo.algorithms.resolve_guard(algo, NOISY)
    assert noisy.config["search"]["avoid_observed"] is False and noisy.n_init == algo.n_init == 5
    assert {k: v for k, v in noisy.config.items() if k != "search"} == {
        k: v for k, v in algo.config.items() if k != "search"}
