"""Failed evaluations (Optuna's failed trials): a NaN or infinite observation is kept in the record,
flagged, excluded from every model and never chosen as the best; ``minimize``, ``algo.update`` and
``ask_tell`` agree (``ntkbo.data``, ``ntkbo.loop``, ``ntkbo.ask_tell``).

Cheap by construction: tiny widths, candidate sets and budgets; each compiled run is shared through a
module-scoped fixture.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ntkbo
from ntkbo import ask_tell
from ntkbo import data as D

BRANIN = ntkbo.benchmarks.get("branin")
MID = float(jnp.mean(BRANIN.bounds[:, 0]))  # x_0 > MID: the objective fails (half the box)


class HalfNaN(NamedTuple):
    """Branin on ``x_0 <= MID``, NaN on the other half (a NamedTuple: hashable for jit caches)."""

    fn: Any

    def __call__(self, x):
        return jnp.where(x[0] > MID, jnp.nan, self.fn(x))


PROBLEM = BRANIN.replace(fn=HalfNaN(BRANIN.fn))

FAMILIES = {
    "gp": lambda: ntkbo.algorithms.gp(acquisition="ei", fit=dict(enabled=True, num_steps=5),
                                      search=dict(num_candidates=64, num_restarts=2,
                                                  num_steps=3)),
    "ntk_gp_ts": lambda: ntkbo.algorithms.ntk_gp(acquisition="ts",
                                                 search=dict(num_ts_candidates=64)),
    "neural_bo": lambda: ntkbo.algorithms.neural_bo(network=dict(width=32),
                                                    training=dict(num_steps=20),
                                                    search=dict(num_candidates=64,
                                                                num_perturbations=16)),
    "neural_linear": lambda: ntkbo.algorithms.neural_linear(network=dict(width=8, depth=1),
                                                            training=dict(num_steps=20),
                                                            search=dict(num_candidates=64,
                                                                        num_restarts=2,
                                                                        num_steps=2)),
}
BUDGET, N_INIT = 12, 6


_RUNS = {}


def _run(name):
    """``minimize`` of the family ``name`` on the half-NaN problem, compiled once per module."""
    if name not in _RUNS:
        algo = FAMILIES[name]()
        _RUNS[name] = name, algo, ntkbo.minimize(algo, PROBLEM, BUDGET, jax.random.PRNGKey(3),
                                                 n_init=N_INIT)
    return _RUNS[name]


@pytest.fixture(scope="module", params=["ntk_gp_ts", "neural_bo", "neural_linear"])
def run(request):
    return _run(request.param)


def test_minimize_records_failures_and_never_picks_one(run):
    """Catches: best_y = NaN (argmin over NaN), NaN rows fit by the model (NaN or -inf acquisition
    values in later rounds, NaN points), failures dropped from the record."""
    name, _, r = run
    y = np.asarray(r.y)
    fails = ~np.isfinite(y)
    np.testing.assert_array_equal(np.asarray(r.failed), fails)
    assert fails.any() and (~fails).any(), name  # the design straddles x_0 = MID
    assert np.all(np.isfinite(r.x)), name
    assert np.isfinite(r.best_y) and r.best_y == y[~fails].min(), name
    assert float(r.best_x[0]) <= MID
    assert np.all(np.isfinite(np.asarray(r.info.acq_value))), name  # still sighted
    buf = r.state.data
    assert int(buf.count) == BUDGET  # failed rows occupy their slots ...
    np.testing.assert_array_equal(np.asarray(D.failed(buf))[:BUDGET], fails)  # ... flagged
    np.testing.assert_array_equal(np.asarray(D.mask(buf))[:BUDGET], ~fails)
    # the metric's running minimum skips failures: finite once a finite evaluation happened
    first = int(np.argmax(~fails))
    assert np.all(np.isfinite(np.asarray(r.metric)[first:])), name


def test_update_with_a_failed_row_equals_update_without_it():
    """``algo.update`` excludes a failed row from the model: the fitted GP hyper-parameters, and a
    trained network, equal those fitted on the finite rows alone. Tolerance: the same sums in a
    different order (float64), far below the change one extra data point makes (checked).
    Catches: a NaN row entering the fit (NaN parameters) or a failed row fit as y = 0."""
    x = np.asarray(ntkbo.loop.initial_design(jax.random.PRNGKey(0), BRANIN.bounds, 6))
    y = np.asarray(jax.vmap(BRANIN.fn)(jnp.asarray(x)))
    y_nan = y.copy()
    y_nan[2] = np.nan
    keep = np.arange(6) != 2
    for name in ("gp", "neural_bo"):
        algo = FAMILIES[name]()
        s0 = algo.init(jax.random.PRNGKey(1), BRANIN.bounds, 16)
        update = jax.jit(algo.update)
        with_fail, _ = update(s0, x, y_nan)
        without, _ = update(s0, x[keep], y[keep])
        with_zero, _ = update(s0, x, np.where(keep, y, 0.0))  # what a NaN must not become
        a, b, c = (jax.tree_util.tree_leaves(s.params) for s in (with_fail, without, with_zero))
        for u, v in zip(a, b):
            np.testing.assert_allclose(u, v, rtol=1e-9, atol=1e-12, err_msg=name)
        assert any(not np.allclose(u, w, rtol=1e-6) for u, w in zip(a, c)), name
        assert int(with_fail.data.count) == 6 and np.isnan(with_fail.data.y[2])


def test_ask_tell_agrees_with_minimize_on_failures():
    """The same key gives ask/tell the points ``minimize`` evaluates, failures included, and the
    same best point (NTK-GP Thompson sampling, no hyper-parameter fit, a noise-free problem).
    Catches: tell rejecting NaN, or storing/fitting it differently from minimize."""
    _, algo, r = _run("ntk_gp_ts")
    assert PROBLEM.noise_std == 0.0
    study = ask_tell.start(algo, PROBLEM.bounds, jax.random.PRNGKey(3), n_init=N_INIT)
    for _ in range(BUDGET):
        x, study = ask_tell.ask(algo, study)
        study = ask_tell.tell(algo, study, x, np.asarray(jax.vmap(PROBLEM.fn)(jnp.asarray(x))))
    xs, ys = ask_tell.observations(study)
    np.testing.assert_allclose(xs, r.x, rtol=1e-9)  # rounding of separately compiled programs
    np.testing.assert_array_equal(np.isnan(ys), np.asarray(r.failed))
    assert ask_tell.failed(study).sum() == int(np.asarray(r.failed).sum()) > 0
    bx, by = ask_tell.best(study)
    np.testing.assert_allclose(by, r.best_y, rtol=1e-12)
    np.testing.assert_allclose(bx, r.best_x, rtol=1e-9)


def test_best_and_metric_when_everything_fails():
    """Catches: an exception or a silently finite best when no evaluation succeeded."""
    x = jnp.zeros((3, 2))
    y = jnp.array([jnp.nan, jnp.inf, -jnp.inf])
    c = jnp.zeros((3, 0))
    _, by, _, ok = ntkbo.loop._best(x, y, y, c)
    assert not np.isfinite(by) and not bool(ok)
    assert np.all(np.asarray(ntkbo.loop.best_regret_plus_violation(y, c, 0.0)) == np.inf)
    # a -inf observation is a failure, not the best value
    y2 = jnp.array([3.0, -jnp.inf, 1.0])
    assert float(ntkbo.loop._best(x, y2, y2, c)[1]) == 1.0


@pytest.mark.parametrize("name", ["gp", "neural_linear"])
def test_ei_without_a_successful_evaluation_falls_back_and_says_so(name):
    """Every evaluation so far failed: EI has no incumbent. The prior mean stands in for it, so the
    acquisition is finite (not -inf everywhere, a blind argmax), and info.acq_fallback counts
    the round; after one success the rule is EI again. Catches: the fallback removed (the
    tests/fuzz.py defect: acq_value -inf in every candidate), the counter missing or stuck."""
    algo = FAMILIES[name]()
    suggest = jax.jit(algo.suggest)
    state = algo.init(jax.random.PRNGKey(0), BRANIN.bounds, 8)
    x0 = jnp.array([[0.0, 1.0], [5.0, 5.0], [-2.0, 10.0]])
    failed, _ = algo.update(state, x0, jnp.full(3, jnp.nan))
    x, info = suggest(jax.random.PRNGKey(1), failed)
    assert np.all(np.isfinite(np.asarray(info.acq_value)))
    if name == "gp":  # EI itself (not its log): > 0 with the prior mean as incumbent, 0 without
        assert np.all(np.asarray(info.acq_value) > 0)
    assert int(np.asarray(info.acq_fallback).sum()) == 1
    lo, hi = np.asarray(BRANIN.bounds)
    assert np.all((np.asarray(x) >= lo) & (np.asarray(x) <= hi))
    ok, _ = algo.update(failed, x0[:1], BRANIN.fn_batch(x0[:1]))
    _, info = suggest(jax.random.PRNGKey(1), ok)
    assert int(np.asarray(info.acq_fallback).sum()) == 0
