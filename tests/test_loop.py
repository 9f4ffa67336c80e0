"""Drivers: determinism, vmap over seeds, capacity growth, ask/tell and resumption, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ntkbo
from ntkbo import ask_tell
from ntkbo import data as D
from ntkbo import loop
from ntkbo.algorithms import random_search
from ntkbo.benchmarks.problem import Problem


def sphere(x):
    return jnp.sum((x - 0.3) ** 2)


PROBLEM = Problem(name="sphere", fn=sphere, bounds=jnp.array([[-1.0, -1.0, -1.0], [1.0, 1.0, 1.0]]),
                  noise_std=0.01)
ALGO = random_search(q=2)


def test_plan_covers_budget_with_power_of_two_capacities():
    segs = loop.plan(budget=101, n_init=5, q=2)
    assert sum(s.rounds for s in segs) * 2 + 5 == 101
    caps = [s.capacity for s in segs]
    assert caps == sorted(caps) and all(c & (c - 1) == 0 for c in caps)
    # every round fits: the observations after a round never exceed its segment's capacity
    done = 5
    for s in segs:
        done += 2 * s.rounds
        assert done <= s.capacity


def test_plan_compiles_one_segment_below_min_capacity():
    """A segment is a compiled copy of the step: below ``MIN_CAPACITY`` observations one segment
    serves, of the capacity the budget needs (never more), and above it the capacities double as
    before. Expected plans counted by hand from ``plan``'s rule. Mutations caught: the floor
    dropped (30 evaluations in two segments, 16 and 32); the floor not capped by the budget (30
    evaluations at capacity 128)."""
    caps = lambda budget, n_init=7, **kw: [(s.capacity, s.rounds)  # noqa: E731
                                            for s in loop.plan(budget, n_init, **kw)]
    assert loop.MIN_CAPACITY == 128
    assert caps(30) == [(32, 23)]
    assert caps(100) == [(128, 93)]
    assert caps(300) == [(128, 121), (256, 128), (512, 44)]
    assert caps(30, min_capacity=16) == [(16, 9), (32, 14)]
    assert caps(9, n_init=3) == [(16, 6)]


def test_same_key_same_run_and_vmap_equals_separate_runs():
    key = jax.random.PRNGKey(3)
    a = ntkbo.minimize(ALGO, PROBLEM, 41, key, n_init=5)
    b = ntkbo.minimize(ALGO, PROBLEM, 41, key, n_init=5)
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.y, b.y)
    keys = jax.random.split(jax.random.PRNGKey(4), 8)
    many = jax.vmap(lambda k: ntkbo.minimize(ALGO, PROBLEM, 41, k, n_init=5))(keys)
    assert many.x.shape == (8, 41, 3)
    for i in range(8):
        one = ntkbo.minimize(ALGO, PROBLEM, 41, keys[i], n_init=5)
        np.testing.assert_array_equal(many.x[i], one.x)
        np.testing.assert_array_equal(many.y[i], one.y)


def test_result_fields_and_state():
    r = ntkbo.minimize(ALGO, PROBLEM, 41, jax.random.PRNGKey(0), n_init=5)
    assert r.x.shape == (41, 3) and r.y.shape == (41,) and r.f.shape == (41,)
    np.testing.assert_allclose(r.f, jax.vmap(sphere)(r.x), rtol=1e-12)
    # observations are f plus noise of std 0.01: 41 residuals all within 6 sigma
    assert np.max(np.abs(r.y - r.f)) < 0.06
    i = int(np.argmin(r.y))
    np.testing.assert_array_equal(r.best_x, r.x[i])
    assert r.best_y == r.y.min() and r.best_f == r.f[i]
    # the state holds every observation, in order, in a power-of-two capacity
    assert int(r.state.data.count) == 41 and r.state.data.capacity == 64
    np.testing.assert_array_equal(r.state.data.x[:41], r.x)
    assert np.all(r.x >= -1) and np.all(r.x <= 1)
    np.testing.assert_array_equal(ntkbo.best_so_far(r.y), np.minimum.accumulate(np.asarray(r.y)))


def test_best_so_far_skips_failed_evaluations():
    """``best_so_far`` against a Python loop: the running minimum along the last axis, a NaN (a
    failed evaluation) skipped, NaN only before the first value; the same from numpy (a numpy
    array back), from jax, and from jax under ``jit``; an empty axis stays empty. Exact: a
    minimum selects one of its inputs. Catches (checked): ``np.minimum.accumulate`` (a NaN then
    resets the rest of the curve), the former ``jax.lax.cummin`` (the same, traced)."""
    rng = np.random.default_rng(0)
    v = rng.normal(size=(3, 9))
    v[0, 0] = v[0, 4] = v[1, 8] = v[2, :] = np.nan
    v[2, 3] = 0.5
    ref = np.full(v.shape, np.nan)
    for i, row in enumerate(v):
        best = np.nan
        for j, value in enumerate(row):
            if not np.isnan(value) and not value >= best:
                best = value
            ref[i, j] = best
    got = ntkbo.best_so_far(v)
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(ntkbo.best_so_far(jnp.asarray(v)), ref)
    np.testing.assert_array_equal(jax.jit(ntkbo.best_so_far)(jnp.asarray(v)), ref)
    assert ntkbo.best_so_far(np.zeros((2, 0))).shape == (2, 0)
    assert ntkbo.best_so_far(jnp.zeros((2, 0))).shape == (2, 0)


def test_one_running_minimum():
    """Every best-so-far of the library is ``ntkbo.loop.best_so_far``: no other module of
    ``ntkbo/`` computes a running minimum (``minimum``/``fmin`` ``.accumulate``, ``cummin``).
    Catches (checked): the command line's summary computing its own again
    (``np.fmin.accumulate`` in ``ntkbo/cli.py``)."""
    import pathlib
    import re

    root = pathlib.Path(ntkbo.__file__).parent
    pattern = re.compile(r"(minimum|fmin)\.accumulate|cummin\(")
    found = [f"{p.relative_to(root)}:{i}" for p in sorted(root.rglob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if pattern.search(line) and p.name != "loop.py"]
    assert not found, found


def test_maximize_reports_original_sign():
    r = ntkbo.maximize(ALGO, PROBLEM, 21, jax.random.PRNGKey(0), n_init=5)
    np.testing.assert_allclose(r.f, jax.vmap(sphere)(r.x), rtol=1e-12)
    assert r.best_y == r.y.max()


def test_chunks_match_minimize():
    keys = jax.random.split(jax.random.PRNGKey(9), 3)
    *_, last = loop.minimize_chunks(ALGO, PROBLEM, 41, keys, n_init=5, chunk=4)
    assert last.done == 41
    for i in range(3):
        one = ntkbo.minimize(ALGO, PROBLEM, 41, keys[i], n_init=5)
        np.testing.assert_allclose(last.x[i], one.x, rtol=1e-12)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(budget=0), "budget"),
        (dict(budget=10**9), "budget"),
        (dict(budget=20, n_init=0), "n_init"),
        (dict(budget=20, n_init=25), "n_init"),
        (dict(budget=20, n_init=5), "multiple of q"),
        (dict(budget=20.0), "budget"),
    ],
)
def test_driver_rejects_bad_arguments(kwargs, match):
    budget = kwargs.pop("budget")
    with pytest.raises(ValueError, match=match):
        ntkbo.minimize(ALGO, PROBLEM, budget, jax.random.PRNGKey(0), **kwargs)


def test_data_buffer_append_grow_and_full():
    d = D.empty(4, 2, jnp.float64)
    d = D.append(d, jnp.ones((3, 2)), jnp.arange(3.0))
    # A batch that does not fit: eagerly (count concrete) it raises; under jit the buffer comes
    # back unchanged (count does not move), so nothing already observed is lost.
    with pytest.raises(ValueError, match="do not fit"):
        D.append(d, jnp.zeros((2, 2)), jnp.zeros(2))
    full = jax.jit(D.append)(d, jnp.zeros((2, 2)), jnp.zeros(2))
    np.testing.assert_array_equal(full.y, d.y)
    assert int(full.count) == 3
    g = D.grow(d, 8)
    assert g.capacity == 8 and int(g.count) == 3
    np.testing.assert_array_equal(g.y[:3], [0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="capacity"):
        D.grow(g, 4)
    assert [D.next_capacity(n) for n in (1, 16, 17, 100)] == [16, 16, 32, 128]


# ---- ask/tell ---------------------------------------------------------------------------------


def run_ask_tell(study, algo, rounds, key):
    xs = []
    for _ in range(rounds):
        x, study = ask_tell.ask(algo, study)
        y = np.asarray(jax.vmap(sphere)(jnp.asarray(x)))
        study = ask_tell.tell(algo, study, x, y)
        xs.append(x)
    return study, np.concatenate(xs)


def test_ask_tell_follows_minimize_noise_free():
    """With the same key, ask/tell asks exactly the points minimize evaluates (noise-free)."""
    algo = random_search(q=1)
    problem = PROBLEM.replace(noise_std=0.0)
    r = ntkbo.minimize(algo, problem, 30, jax.random.PRNGKey(5), n_init=4)
    study = ask_tell.start(algo, problem.bounds, jax.random.PRNGKey(5), n_init=4)
    study, xs = run_ask_tell(study, algo, 30, None)
    np.testing.assert_allclose(xs, r.x, rtol=1e-12)
    x_obs, y_obs = ask_tell.observations(study)
    np.testing.assert_allclose(y_obs, r.y, rtol=1e-12)


def test_ask_tell_and_minimize_share_the_default_design():
    """With nothing set, ``ask_tell.start`` asks the ``d + 1`` design points ``minimize`` starts
    with (here ``d = 3``: 4 points; the same Sobol points for the same key), at least 2 in one
    dimension. Mutation checked: ``start``'s former default ``n_init=5`` asks 5 design points."""
    algo = random_search(q=1)
    problem = PROBLEM.replace(noise_std=0.0)
    r = ntkbo.minimize(algo, problem, 10, jax.random.PRNGKey(7))
    study = ask_tell.start(algo, problem.bounds, jax.random.PRNGKey(7))
    assert study.design.shape == (4, 3)
    np.testing.assert_allclose(study.design, r.x[:4], rtol=1e-12)
    assert loop.default_n_init(problem, 10) == 4
    assert [loop.design_size(d) for d in (1, 2, 6)] == [2, 3, 7]


def test_save_load_continue_equals_uninterrupted(tmp_path):
    algo = random_search(q=1)
    full, xs_full = run_ask_tell(ask_tell.start(algo, PROBLEM.bounds, jax.random.PRNGKey(1)),
                                 algo, 25, None)
    half, xs_a = run_ask_tell(ask_tell.start(algo, PROBLEM.bounds, jax.random.PRNGKey(1)),
                              algo, 12, None)
    ask_tell.save(tmp_path / "s.msgpack", half)
    resumed = ask_tell.load(tmp_path / "s.msgpack", algo, PROBLEM.bounds)
    resumed, xs_b = run_ask_tell(resumed, algo, 13, None)
    np.testing.assert_array_equal(np.concatenate([xs_a, xs_b]), xs_full)
    np.testing.assert_array_equal(ask_tell.observations(resumed)[1], ask_tell.observations(full)[1])


def test_tell_rejects_bad_input_and_keeps_observations():
    algo = random_search(q=1)
    study = ask_tell.start(algo, PROBLEM.bounds, jax.random.PRNGKey(2), n_init=2)
    study, _ = run_ask_tell(study, algo, 3, None)
    before = ask_tell.observations(study)
    bad = [
        (np.zeros((1, 2)), [0.0], "shape"),
        (np.zeros((2, 3)), [0.0], "y must have shape"),
        (np.full((1, 3), np.nan), [0.0], "NaN or inf"),  # a NaN y is a failed evaluation,
        (np.full((1, 3), np.inf), [0.0], "NaN or inf"),  # a NaN x is an error
        (np.full((1, 3), 1.5), [0.0], "outside the bounds"),
    ]
    for x, y, match in bad:
        with pytest.raises(ValueError, match=match):
            ask_tell.tell(algo, study, x, y)
    after = ask_tell.observations(study)
    np.testing.assert_array_equal(before[0], after[0])
    np.testing.assert_array_equal(before[1], after[1])
    with pytest.raises(ValueError, match="bounds"):
        ask_tell.start(algo, np.array([[0.0, 1.0], [0.0, 2.0]]), jax.random.PRNGKey(0))


def test_tell_grows_capacity_and_does_not_retrace_within_a_capacity():
    traces = []
    base = random_search(q=1)

    def update(state, x, y):
        traces.append(state.data.capacity)  # runs only when jax traces update
        return base.update(state, x, y)

    algo = ntkbo.Algorithm(base.init, base.suggest, update)
    study = ask_tell.start(algo, PROBLEM.bounds, jax.random.PRNGKey(0), n_init=0)
    n = loop.MIN_CAPACITY + 10
    study, _ = run_ask_tell(study, algo, n, None)
    assert int(ask_tell.observations(study)[0].shape[0]) == n
    # the tells spread over two capacities, MIN_CAPACITY and twice it: one trace each, not one
    # per tell (mutation caught: a capacity grown by one row per tell retraces every time)
    assert traces == [loop.MIN_CAPACITY, 2 * loop.MIN_CAPACITY]


def test_minimize_under_an_outer_jit_with_closed_over_problem():
    """Closed-over concrete bounds become tracers under jit: validation must not break that."""
    run = jax.jit(lambda k: ntkbo.minimize(ALGO, PROBLEM, 21, k, n_init=5).best_y)
    ref = ntkbo.minimize(ALGO, PROBLEM, 21, jax.random.PRNGKey(0), n_init=5).best_y
    np.testing.assert_array_equal(run(jax.random.PRNGKey(0)), ref)
