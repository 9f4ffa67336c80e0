"""The host tasks (ntkbo.benchmarks.tasks): definitions against independent computations, the
host callback under jit/vmap/minimize, determinism and failure reporting.

Reference values come from (a) closed forms computed here, (b) gymnasium's own ``heuristic``, or
(c) the authors' implementations run once with their velocity noise set to 0 (their code, not
ours: ``zi-w/Ensemble-Bayesian-Optimization`` commit 4e6f9ed04833 ``push_function.py`` and
``rover_function.py``; ``zi-w/Max-value-Entropy-Search`` commit 8601220334 ``push_world.py``).
Tasks whose packages are missing are skipped with the install command as the reason.
"""

from __future__ import annotations

import importlib.util
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ntkbo
from ntkbo.benchmarks import tasks
from ntkbo.benchmarks.tasks import host, hpo, lunar_lander, robot_push, rover

REASON = "needs the tasks extra: pip install 'ntkbo[tasks]'"


def _need(*modules):
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    return pytest.mark.skipif(bool(missing), reason=f"{', '.join(missing)} missing; {REASON}")


BOX2D = _need("Box2D")
GYM = _need("Box2D", "gymnasium", "pygame")
SKLEARN = _need("sklearn")
SCIPY = _need("scipy")


# ----------------------------------------------------------------------------------------------
# robot pushing


@BOX2D
@pytest.mark.parametrize("x, reward", [
    ([0.929, -2.399, 6.798, 0.19, 16.305, 4.731, -3.521, 3.196, 3.666, 5.742, 7.365, 5.041,
      -3.087, -4.184], 0.07530692879312717),
    ([-3.495, -0.178, 7.894, -1.546, 18.506, 0.154, 1.735, 4.191, 6.537, 7.71, 20.49, 1.543,
      2.685, -2.883], -1.7075385737797246),
])
def test_push14_reproduces_the_authors_simulation(x, reward):
    # reward: EBO's PushReward()(x) with np.random.normal patched to 0 (module docstring). The
    # same Box2D calls in the same order give the same float32 physics: measured bit-identical;
    # 1e-12 allows only the last-bit rounding of the two distance sums. Catches a changed
    # friction, density, size, joint force, controller gain, step count or body creation order.
    assert -robot_push.push14(x) == pytest.approx(reward, abs=1e-12)


@BOX2D
def test_push3_push4_reproduce_the_mes_simulation():
    # MES generate_simudata3/4.py (push_world.py) with goal (4, 3.5) and noise 0: 5 - |g - o|.
    # Catches the push speed (5 vs 10), the hand size (0.3, 1), the angle rule, the offset 5.
    assert -robot_push.push3([1.5, -2.0, 12.0]) == pytest.approx(-0.8320541321539894, abs=1e-12)
    assert -robot_push.push4([-2.5, 1.0, 8.0, 0.7]) == pytest.approx(1.7549431310271895, abs=1e-12)


@BOX2D
def test_push14_untouched_objects_give_zero_reward():
    # Hand-made push: both hands far from the objects (corners (-5, -5) and (5, -5) with angle 0,
    # half-sizes (1, 0.3)) and asked for zero velocity: the objects never move, so the reward is
    # f_max - |g1 - s1| - |g2 - s2| = 0, computed here from the published starts and goals.
    x = [-5, -5, 0, 0, 2, 0, 5, -5, 0, 0, 2, 0, 0, 0]
    o1, o2 = robot_push.push14_positions(x)
    np.testing.assert_allclose(o1, [0, 2], atol=1e-6)  # float32 positions of Box2D
    np.testing.assert_allclose(o2, [0, -2], atol=1e-6)
    f_max = math.hypot(4 - 0, 3.5 - 2) + math.hypot(-4 - 0, 3.5 + 2)
    assert f_max == pytest.approx(11.0727, abs=1e-4)  # |g1 - s1| + |g2 - s2| = 4.2720 + 6.8007
    expected = -(f_max - math.hypot(4 - o1[0], 3.5 - o1[1]) - math.hypot(-4 - o2[0], 3.5 - o2[1]))
    assert robot_push.push14(x) == pytest.approx(expected, abs=1e-12)
    assert robot_push.push14(x) == pytest.approx(0.0, abs=1e-5)  # catches a sign or offset error


@BOX2D
def test_push3_short_push_that_misses_leaves_the_object_at_the_origin():
    # A hand at (5, 5) driven 10 steps at speed 5 travels well under a metre (friction joint);
    # the object (radius 1 at the origin) is never reached, so fn = |g - 0| - 5.
    goal = (4.0, 3.5)
    assert robot_push.push3([5.0, 5.0, 1.0], goal=goal) == pytest.approx(
        math.hypot(*goal) - 5.0, abs=1e-6)


# ----------------------------------------------------------------------------------------------
# rover


def _length_in_obstacles(a, b):
    """Length of the segment a -> b inside the union of trees and outside the unit square, by
    exact slab intersection (independent of the module's sampling)."""
    d = b - a
    intervals = []
    lo, hi = rover.TREES - rover.TREE_HALF_SIDE, rover.TREES + rover.TREE_HALF_SIDE
    for low, h in zip(lo, hi):
        t0, t1 = 0.0, 1.0
        for k in range(2):
            if d[k] == 0:
                if not low[k] <= a[k] < h[k]:
                    t0, t1 = 1.0, 0.0
            else:
                s0, s1 = sorted(((low[k] - a[k]) / d[k], (h[k] - a[k]) / d[k]))
                t0, t1 = max(t0, s0), min(t1, s1)
        if t1 > t0:
            intervals.append((t0, t1))
    intervals.sort()
    total, end = 0.0, -1.0
    for t0, t1 in intervals:
        if t1 > end:
            total += t1 - max(t0, end)
            end = t1
    return total * float(np.linalg.norm(d)), 2 * len(intervals)


@SCIPY
def test_rover_straight_path_cost_by_hand():
    # 30 equally spaced points on the diagonal start -> goal: the smoothing spline through
    # collinear, equally spaced points is the segment itself, sampled evenly. Cost by hand:
    # 0.05 L + 20 (length inside trees) + the miss costs (0 here). The module's trapezoid rule
    # errs by at most 20 * spacing / 2 per boundary crossing; that is the tolerance.
    a, b = rover.START, rover.GOAL
    pts = a + np.linspace(0, 1, rover.N_POINTS)[:, None] * (b - a)
    x = (pts.ravel() - rover.RAW_LOWER) / (rover.RAW_UPPER - rover.RAW_LOWER)
    L = float(np.linalg.norm(b - a))
    inside, crossings = _length_in_obstacles(a, b)
    assert inside > 0  # the diagonal crosses trees: the obstacle term is exercised
    expected = 0.05 * L + 20.0 * inside - 5.0
    tol = crossings * 20.0 * (L / (rover.N_SAMPLES - 1)) / 2 + 1e-9
    assert rover.rover60(x, jitter=0.0) == pytest.approx(expected, abs=tol)
    # a free path: a short horizontal segment above the trees' band misses nothing
    y = 0.97
    a2, b2 = np.array([0.30, y]), np.array([0.31, y])
    assert _length_in_obstacles(a2, b2)[0] == 0
    pts2 = a2 + np.linspace(0, 1, rover.N_POINTS)[:, None] * (b2 - a2)
    x2 = (pts2.ravel() - rover.RAW_LOWER) / (rover.RAW_UPPER - rover.RAW_LOWER)
    miss = 10 * (np.abs(a2 - a).sum() + np.abs(b2 - b).sum())
    assert rover.rover60(x2, jitter=0.0) == pytest.approx(0.05 * 0.01 + miss - 5.0, abs=1e-9)


@SCIPY
def test_rover_reproduces_the_authors_cost():
    # EBO create_large_domain(force_start=False, force_goal=False, l1 miss cost 10 |.|_1) at
    # p = -0.1 + 1.2 x, its jitter replaced by default_rng(0).normal(0, 1e-4, 60) (ours):
    # reward 5 - C = -15.707593814617333. Summation order differs: measured 3e-14.
    x = np.random.default_rng(3).random(60)
    assert -rover.rover60(x) == pytest.approx(-15.707593814617333, abs=1e-9)


# ----------------------------------------------------------------------------------------------
# Lunar Lander


@GYM
def test_lunar_default_parameters_are_gymnasiums_heuristic():
    # Independent: gymnasium's own heuristic(env, s) on the same episode seeds. Identical actions
    # give identical returns, so equality is exact. Catches any changed constant or branch.
    from gymnasium.envs.box2d.lunar_lander import heuristic

    env = lunar_lander.make_env()
    expected = np.mean([lunar_lander.episode_return(env, lambda s: heuristic(env, s), seed)
                        for seed in range(3)])
    env.close()
    assert expected > 200  # the published heuristic lands (the environment's solved threshold)
    assert lunar_lander.lunar_lander12(lunar_lander.DEFAULT_W, episodes=3) == -expected


# ----------------------------------------------------------------------------------------------
# tuning


@SKLEARN
def test_size_constraint_counts_the_fitted_networks_parameters():
    # Independent count: the coefs_/intercepts_ of an sklearn MLP fitted one step on digits.
    from sklearn.neural_network import MLPClassifier

    X, y = hpo.load("digits")
    for x in ([10.0, 10.0, 0, 0], [0.0, 0.0, 0, 0], [5.0, 0.0, 0, 0], [3.3, 7.7, 5, 5]):
        p = hpo.decode(hpo.SIZE_SPACE, x)
        hidden = (p["h1"],) if p["h2"] == 0 else (p["h1"], p["h2"])
        net = MLPClassifier(hidden_layer_sizes=hidden, max_iter=1).partial_fit(
            X[:20], y[:20], classes=np.arange(10))
        count = sum(w.size for w in net.coefs_) + sum(b.size for b in net.intercepts_)
        assert hpo.size_constraint(x) == pytest.approx(count / hpo.SIZE_BUDGET - 1, abs=1e-12)


def test_decoding_hits_every_end_of_every_space():
    # corners decode to the first / last value of every hyper-parameter (equal-width bins)
    for model in hpo.MODELS:
        for regression in (False, True):
            sp = hpo.space(model, regression)
            lo, hi = hpo.decode(sp, np.zeros(len(sp))), hpo.decode(sp, np.full(len(sp), 10.0))
            for p in sp:
                first = p.values[0] if p.kind == "choice" else p.lo
                last = p.values[-1] if p.kind == "choice" else p.hi
                assert lo[p.name] == pytest.approx(first) and hi[p.name] == pytest.approx(last)


# ----------------------------------------------------------------------------------------------
# every task: corners, centre, random points finite and equal on repeat


def _points(t, key=0):
    rng = np.random.default_rng(key)
    return np.stack([t.lower, t.upper, (t.lower + t.upper) / 2,
                     t.lower + (t.upper - t.lower) * rng.random(t.dim)])


CHEAP = [  # (name, options, marks): tuning with 2 folds (the task's definition is unchanged)
    ("robot_push14", {}, BOX2D), ("robot_push3", {}, BOX2D), ("robot_push4", {}, BOX2D),
    ("rover60", {}, SCIPY), ("lunar_lander12", {"episodes": 2}, GYM),
    ("hpo_rf_wine", {"folds": 2}, SKLEARN), ("hpo_hgb_wine", {"folds": 2}, SKLEARN),
    ("hpo_mlp_wine", {"folds": 2}, SKLEARN),
]


@pytest.mark.parametrize("name, options", [pytest.param(n, o, marks=m) for n, o, m in CHEAP])
def test_task_is_finite_and_deterministic_at_corners_centre_and_random(name, options):
    t = tasks.task(name)
    xs = _points(t)
    if name in ("robot_push3", "robot_push4"):  # the centre has rx = ry = 0: singular (below)
        xs = np.delete(xs, 2, axis=0)
    y1 = tasks.evaluate(name, xs, **options)
    assert np.all(np.isfinite(y1))
    again = xs if not name.startswith("hpo") else xs[-1:]  # fits: repeat the random point only
    y2 = tasks.evaluate(name, again, **options)
    np.testing.assert_array_equal(y1[-len(again):], y2)  # catches an unseeded simulator/episode/fold


@SKLEARN
def test_constrained_tuning_problem_evaluates_objective_and_constraint():
    p = ntkbo.benchmarks.get("hpo_mlp_digits_size", folds=2)
    x = jnp.asarray([[0.0, 0.0, 5.0, 5.0]], p.bounds.dtype)  # the smallest network: feasible
    assert p.n_constraints == 1
    c = np.asarray(p.constraints_batch(x))
    assert c.shape == (1, 1) and c[0, 0] == pytest.approx(hpo.size_constraint(x[0]), abs=1e-6)
    assert c[0, 0] < 0
    y = float(p.fn_batch(x)[0])
    assert 0.0 <= y < 0.5  # an error rate, and an 8-unit MLP does learn digits
    assert y == float(p.fn_batch(x)[0])


@BOX2D
def test_singular_push_reports_the_point():
    p = ntkbo.benchmarks.get("robot_push3")
    centre = (p.bounds[0] + p.bounds[1]) / 2
    with pytest.raises(Exception) as info:  # what a user sees: JaxRuntimeError with our text
        jax.block_until_ready(p.fn_batch(centre[None]))
    text = str(info.value)
    assert "robot_push3 failed at x = [0.0, 0.0, 15.5]" in text and "undefined" in text


# ----------------------------------------------------------------------------------------------
# the host callback


def _sphere_host(x):
    return float(np.sum(np.asarray(x) ** 2))


def test_one_code_path_vmapped_minimize_batches_seeds_into_one_host_call():
    # A closed-form function run through the callback reproduces the pure JAX run of the same
    # problem (same keys, same points), and each round of the 2 vmapped seeds is ONE host call
    # of evaluate_rows (catches vmap_method="sequential": one call per seed).
    d, budget, n_init = 3, 8, 4
    pure = ntkbo.benchmarks.get("sphere", dim=d)
    rows = []
    problem = pure.replace(fn=host.host_fn("sphere_host", _sphere_host, d))
    orig = host.evaluate_rows

    def spy(name, evaluate_one, xs, *args):
        rows.append(np.asarray(xs).shape[0])
        return orig(name, evaluate_one, xs, *args)

    algo = ntkbo.algorithms.random_search()
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    host.evaluate_rows = spy
    try:
        res = jax.jit(jax.vmap(lambda k: ntkbo.minimize(algo, problem, budget, k, n_init=n_init))
                      )(keys)
    finally:
        host.evaluate_rows = orig
    ref = jax.vmap(lambda k: ntkbo.minimize(algo, pure, budget, k, n_init=n_init))(keys)
    np.testing.assert_array_equal(res.x, ref.x)
    np.testing.assert_allclose(res.f, ref.f, rtol=1e-6)  # float32: host sums in float64
    assert rows == [2 * n_init] + [2] * (budget - n_init)


@SCIPY
def test_minimize_random_search_on_a_task_and_workers_agree():
    problem = ntkbo.benchmarks.get("rover60")
    algo = ntkbo.algorithms.random_search()
    res = ntkbo.minimize(algo, problem, 6, jax.random.PRNGKey(1), n_init=3)
    direct = tasks.evaluate("rover60", np.asarray(res.x, np.float64))
    np.testing.assert_allclose(res.f, direct, rtol=1e-5)  # float32 result of float64 values
    assert float(res.best_f) == pytest.approx(float(np.min(res.f)))
    # workers=2 (spawned processes) give the same values as this process
    xs = _points(tasks.task("rover60"), key=5)
    np.testing.assert_array_equal(tasks.evaluate("rover60", xs, workers=2),
                                  tasks.evaluate("rover60", xs))


def _die(x):
    os._exit(3)  # a worker that dies, as one re-running an unguarded script or killed for memory


def test_a_dying_worker_is_reported_with_the_main_guard_and_the_next_call_works():
    """A worker process that dies breaks the ``ProcessPoolExecutor``; ``evaluate_rows`` raises a
    ``TaskError`` naming the ``if __name__ == "__main__":`` guard (the usual cause with the spawn
    start method) and drops the broken pool, so the next call evaluates in a new one. Mutations
    caught (checked): the ``except BrokenProcessPool`` removed (a bare ``BrokenProcessPool``
    escapes) and the broken pool kept (``_POOLS.pop`` removed: the next call fails on it)."""
    xs = np.arange(6.0).reshape(3, 2)
    with pytest.raises(host.TaskError, match="__name__ == '__main__'"):
        host.evaluate_rows("dies", _die, xs, workers=2)
    np.testing.assert_array_equal(host.evaluate_rows("sums", np.sum, xs, workers=2), [1, 5, 9])


def test_non_finite_and_raising_host_functions_are_reported_with_the_point():
    nan_fn = host.host_fn("nan_task", lambda x: float("nan"), 2)
    with pytest.raises(Exception) as info:
        jax.block_until_ready(jax.jit(jax.vmap(nan_fn))(jnp.asarray([[0.25, -1.5]])))
    assert "nan_task returned nan at x = [0.25, -1.5]" in str(info.value)
    with pytest.raises(host.TaskError, match=r"boom_task failed at x = \[1.0, 2.0\]: "
                                             r"ZeroDivisionError"):
        host.evaluate_rows("boom_task", lambda x: 1 / 0, np.array([[1.0, 2.0]]))


def test_registry_options_are_validated():
    with pytest.raises(ValueError, match="episodes"):
        ntkbo.benchmarks.get("rover60", episodes=3)
    with pytest.raises(ValueError, match="dim=3"):
        ntkbo.benchmarks.get("robot_push14", dim=3)
    with pytest.raises(ValueError, match="workers"):
        ntkbo.benchmarks.get("ackley", dim=2, workers=2)
    with pytest.raises(ValueError, match="folds"):
        ntkbo.benchmarks.get("hpo_rf_wine", folds=1)
    assert set(tasks.names()) <= set(ntkbo.benchmarks.names())


def test_missing_package_names_the_extra():
    from ntkbo.benchmarks.tasks._deps import require

    with pytest.raises(ImportError, match=r"pip install 'ntkbo\[tasks\]'"):
        require("ntkbo_no_such_package")


@SCIPY
def test_ask_tell_with_a_host_task():
    # the ask/tell loop a user writes around a simulator: ask numpy points, evaluate them on the
    # host (tasks.evaluate, no JAX), tell the values; the study then holds exactly those values
    from ntkbo import ask_tell

    problem = ntkbo.benchmarks.get("rover60")
    algo = ntkbo.algorithms.random_search()
    study = ask_tell.start(algo, problem.bounds, jax.random.PRNGKey(2), n_init=2)
    told = []
    for _ in range(3):
        x, study = ask_tell.ask(algo, study)
        y = tasks.evaluate("rover60", x)
        study = ask_tell.tell(algo, study, x, y)
        told.append(y)
    _, ys = ask_tell.observations(study)
    np.testing.assert_allclose(ys, np.concatenate(told), rtol=1e-6)  # stored in float32
