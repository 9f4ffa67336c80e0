"""Ask/tell for parallel workers (``ntkbo.ask_tell``, "Parallel workers"): asks conditioned on the
pending trials, trial ids, failed and abandoned trials, pending trials saved and resumed,
``recommend``, and ``ntkbo.space`` studies that keep their space.

Cost: compilation dominates, so each algorithm's study (three design points told, then four
asks with no tell) is built once per module and shared; every tell and every conditioning
update is of one point, so each algorithm compiles one ``update`` and one ``suggest``.
"""

import math
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ntkbo
from ntkbo import ask_tell as AT
from ntkbo import data as D
from ntkbo import space as S
from ntkbo.base import Algorithm

BRANIN = ntkbo.benchmarks.get("branin")
BOUNDS = np.asarray(BRANIN.bounds)
N_INIT = 3
N_PENDING = 4


def unit(x):
    return (np.asarray(x, np.float64) - BOUNDS[0]) / (BOUNDS[1] - BOUNDS[0])


def min_distance(xs):
    """The smallest pairwise Chebyshev distance of the rows of ``xs`` in the unit box."""
    u = unit(xs)
    d = np.max(np.abs(u[:, None] - u[None]), axis=-1)
    return d[np.triu_indices(len(u), 1)].min()


class Run(NamedTuple):
    algo: Algorithm
    told: AT.Study  # the design told, nothing pending
    studies: list  # told, then after each of the N_PENDING asks (no tell)
    ids: list
    xs: np.ndarray  # (N_PENDING, 2)
    guarded: int  # the asks' warnings that the distinctness guard replaced a point


def run(algo) -> Run:
    study = AT.start(algo, BRANIN.bounds, jax.random.PRNGKey(0), n_init=N_INIT)
    for _ in range(N_INIT):
        tid, x, study = AT.ask_trial(algo, study)
        study = AT.tell(algo, study, tid, float(BRANIN.fn(jnp.asarray(x))))
    studies, ids, xs = [study], [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(N_PENDING):
            tid, x, study = AT.ask_trial(algo, study)
            studies.append(study)
            ids.append(tid)
            xs.append(x)
    guarded = sum("pending trial's point" in str(w.message) for w in caught)
    return Run(algo, studies[0], studies, ids, np.stack(xs), guarded)


@pytest.fixture(scope="module")
def gp_run():
    return run(ntkbo.algorithms.gp())


@pytest.fixture(scope="module")
def ntk_gp_run():
    return run(ntkbo.algorithms.ntk_gp())


@pytest.fixture(scope="module")
def network_run():
    return run(ntkbo.algorithms.neural_ucb(network=dict(width=16)))


RUNS = ["gp_run", "ntk_gp_run", "network_run"]


@pytest.mark.parametrize("name", RUNS)
def test_four_pending_asks_are_distinct_and_pending(name, request):
    """Four asks with no tell give four distinct points (pairwise Chebyshev distance in the unit
    box > 1e-4, ``ntkbo.optimize.MIN_DISTANCE``), all listed as pending with consecutive ids, and
    distinct by the conditioning itself: the distinctness guard replaced none. Catches: ``ask``
    not conditioning on the pending points (mutation: ``_conditioned`` returning
    ``study.state``: NTK-GP-UCB and NeuralUCB then suggest the pending point again, which only
    the guard replaces, with its warning; GP-EI asks the same maximiser again 9e-4 apart in the
    unit box, against 0.039 conditioned, hence the 1e-2 for the kernel models); ``ask`` not
    registering its point as pending (mutation: ``_add_pending`` returning the study unchanged:
    ``pending`` is empty)."""
    r = request.getfixturevalue(name)
    assert r.guarded == 0
    assert r.ids == list(range(N_INIT, N_INIT + N_PENDING))
    assert [t.id for t in AT.pending(r.studies[-1])] == r.ids
    np.testing.assert_array_equal(np.stack([t.x for t in AT.pending(r.studies[-1])]), r.xs)
    assert min_distance(r.xs) > 1e-4
    if name != "network_run":
        assert min_distance(r.xs) > 1e-2
    # Asking changes no observation and never the real state: the told state is the design's.
    for s in r.studies[1:]:
        assert s.state is r.told.state
        assert s.told_x.shape == (N_INIT, 2)


@pytest.mark.parametrize("name", RUNS)
def test_a_pending_point_changes_the_next_suggestion(name, request):
    """With trial ``t`` pending, the next ask differs from the ask of the same study after
    ``abandon(t)`` (same key, same state), and that one is ``algo.suggest`` on the real state:
    the pending point, and only it, is what conditions the ask. Catches: no conditioning
    (mutation: ``_conditioned`` returning ``study.state``: both asks are then the same point, for
    every model, where the distance-based test above cannot see it for the network); an
    abandoned trial still conditioning (mutation: ``abandon`` leaving the status pending: the
    second ask would differ from the bare suggest)."""
    r = request.getfixturevalue(name)
    one = r.studies[1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # conditioned, not replaced by the guard
        x_cond, _ = AT.ask(r.algo, one)
    x_bare, _ = AT.ask(r.algo, AT.abandon(one, r.ids[0]))
    assert np.max(np.abs(unit(x_cond) - unit(x_bare))) > 1e-4
    _, k_suggest, _ = jax.random.split(one.key, 3)
    expected, _ = AT._jitted(r.algo)[0](k_suggest, one.state)
    np.testing.assert_array_equal(x_bare, np.asarray(expected))


class _ConstState(NamedTuple):
    data: D.Data
    bounds: jax.Array


def _constant_algorithm() -> Algorithm:
    """Always suggests the box's centre (ignores its data)."""
    return Algorithm(
        init=lambda key, bounds, cap: _ConstState(D.empty(cap, 2, bounds.dtype),
                                                  jnp.asarray(bounds)),
        suggest=lambda key, s: (((s.bounds[0] + s.bounds[1]) / 2)[None], {}),
        update=lambda s, x, y: (s._replace(data=D.append(s.data, x, y)), ntkbo.NoInfo()))


def test_a_suggestion_never_coincides_with_a_pending_point():
    """An algorithm that ignores its state (always the centre) still gets three distinct points
    while they are pending: the second and third are replaced by uniform random points of the
    box, with a warning. Catches: no distinctness guard (mutation: ``_away_from`` returning ``x``:
    three identical centres)."""
    algo = _constant_algorithm()
    study = AT.start(algo, BRANIN.bounds, jax.random.PRNGKey(1), n_init=0)
    x0, study = AT.ask(algo, study)
    np.testing.assert_array_equal(x0[0], BOUNDS.mean(axis=0))
    xs = [x0[0]]
    for _ in range(2):
        with pytest.warns(UserWarning, match="pending trial's point"):
            x, study = AT.ask(algo, study)
        xs.append(x[0])
    assert min_distance(np.stack(xs)) > 1e-4
    assert np.all((unit(xs) >= 0) & (unit(xs) <= 1))
    # Told, the centre is no longer pending and is suggested again without a warning.
    study = AT.tell(algo, study, 0, 1.0)
    study = AT.abandon(AT.abandon(study, 1), 2)
    x, _ = AT.ask(algo, study)
    np.testing.assert_array_equal(x[0], BOUNDS.mean(axis=0))


def test_lies():
    """The lie of each rule (closed form on told values 1, 2, 6 and a failure): mean 3, best 1,
    worst 6, failures ignored, 0 before any success; constraints always at their mean. Catches a
    lie that ignores ``lie`` (mutation: always the mean) or counts a failed NaN (mean NaN)."""
    study = AT.Study(None, None, None, None, np.zeros((4, 1)),
                     np.array([[1.0, -1.0], [2.0, 0.0], [6.0, 4.0], [np.nan, 0.0]]))
    np.testing.assert_array_equal(AT._lies(study, "mean"), [3.0, 1.0])
    np.testing.assert_array_equal(AT._lies(study, "best"), [1.0, 1.0])
    np.testing.assert_array_equal(AT._lies(study, "worst"), [6.0, 1.0])
    empty = study._replace(told_x=np.zeros((0, 1)), told_y=np.zeros((0, 2)))
    np.testing.assert_array_equal(AT._lies(empty, "best"), [0.0, 0.0])
    with pytest.raises(ValueError, match="lie must be one of"):
        AT._lies(study, "min")


def test_saved_pending_trials_resume_after_load(gp_run, tmp_path):
    """A study saved with two pending trials loads with them pending (same ids and points); the
    next ask of the loaded study is the unsaved study's (it conditions on them), and telling them
    by id, in the other order, gives the same state and record as on the unsaved study. Catches:
    pending trials not saved (mutation: ``save`` leaving out ``"trials"``: the loaded study has
    none pending, its ask differs and ``tell`` of trial 4 raises "no such trial")."""
    algo, study = gp_run.algo, gp_run.studies[2]
    AT.save(tmp_path / "s.msgpack", study)
    back = AT.load(tmp_path / "s.msgpack", algo, BRANIN.bounds)
    assert [t.id for t in AT.pending(back)] == gp_run.ids[:2]
    np.testing.assert_array_equal(np.stack([t.x for t in AT.pending(back)]), gp_run.xs[:2])
    np.testing.assert_array_equal(AT.ask(algo, back)[0], AT.ask(algo, study)[0])
    ys = [float(BRANIN.fn(jnp.asarray(x))) for x in gp_run.xs[:2]]
    done = []
    for s in (study, back):
        for tid, y in zip(gp_run.ids[:2][::-1], ys[::-1]):
            s = AT.tell(algo, s, tid, y)
        done.append(s)
    assert AT.pending(done[1]) == []
    for a, b in zip(jax.tree_util.tree_leaves(done[0].state),
                    jax.tree_util.tree_leaves(done[1].state)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(AT.observations(done[1])[1][N_INIT:], ys[::-1])
    assert [t.status for t in AT.trials(done[1])] == ["complete"] * (N_INIT + 2)


def test_failed_abandoned_and_bad_input_lose_nothing(tmp_path):
    """Trial bookkeeping with random search: a NaN told and an explicit ``fail`` are failed
    trials (recorded, marked by ``failed``), an abandoned trial is recorded nowhere; telling an
    unknown id, a trial twice, an abandoned trial or a wrong shape raises ``ValueError`` naming
    the argument and the study keeps everything. Points told by value close the pending trial
    asked there; a point asked nowhere is a new trial. Catches: ``fail`` not recording
    (mutation: returning the study: the trial stays pending); telling twice accepted (mutation:
    ``check_trial`` not checking the status: a second row for trial 0)."""
    algo = ntkbo.algorithms.random_search()
    study = AT.start(algo, BRANIN.bounds, jax.random.PRNGKey(2), n_init=2)
    ids, xs = [], []
    for _ in range(5):
        tid, x, study = AT.ask_trial(algo, study)
        ids.append(tid)
        xs.append(x)
    assert ids == [0, 1, 2, 3, 4]
    study = AT.tell(algo, study, 3, 7.0)  # out of order
    study = AT.tell(algo, study, 0, math.nan)
    study = AT.fail(algo, study, 1)
    study = AT.abandon(study, 2)
    assert [t.status for t in AT.trials(study)] == ["failed", "failed", "abandoned", "complete",
                                                   "pending"]
    assert [t.id for t in AT.pending(study)] == [4]
    np.testing.assert_array_equal(AT.observations(study)[0], np.stack([xs[3], xs[0], xs[1]]))
    assert AT.failed(study).tolist() == [False, True, True]
    assert AT.best(study)[1] == 7.0
    before = AT.observations(study)
    for call, match in [
        (lambda: AT.tell(algo, study, 9, 1.0), r"trial 9: no such trial"),
        (lambda: AT.tell(algo, study, 3, 1.0), r"trial 3: .*already told \(complete\)"),
        (lambda: AT.tell(algo, study, 1, 1.0), r"trial 1: .*already told \(failed\)"),
        (lambda: AT.tell(algo, study, 2, 1.0), r"trial 2: .*abandoned"),
        (lambda: AT.fail(algo, study, 2), r"trial 2: cannot fail it"),
        (lambda: AT.abandon(study, 3), r"trial 3: cannot abandon it"),
        (lambda: AT.tell(algo, study, 4, [1.0, 2.0]), r"y must be one value for trial 4"),
        (lambda: AT.tell(algo, study, xs[4][None], [1.0, 2.0]), r"y must have shape \(1,\)"),
        (lambda: AT.tell(algo, study, 4, 1.0, [0.0]), r"c was given"),
    ]:
        with pytest.raises(ValueError, match=match):
            call()
        after = AT.observations(study)
        np.testing.assert_array_equal(after[0], before[0])
        np.testing.assert_array_equal(after[1], before[1])
        assert [t.id for t in AT.pending(study)] == [4]
    # By value: trial 4's point closes trial 4; a point never asked is a new, complete trial 5.
    study = AT.tell(algo, study, np.stack([BOUNDS.mean(axis=0), xs[4]]), [1.0, 2.0])
    assert AT.pending(study) == []
    assert [(t.id, t.status, t.y) for t in AT.trials(study)[4:]] == [(4, "complete", 2.0),
                                                                     (5, "complete", 1.0)]
    AT.save(tmp_path / "r.msgpack", study)
    back = AT.load(tmp_path / "r.msgpack", algo, BRANIN.bounds)
    assert [(t.id, t.status) for t in AT.trials(back)] == [(t.id, t.status)
                                                           for t in AT.trials(study)]


def test_recommend_prefers_the_best_posterior_mean(gp_run):
    """On replicated noisy observations (five points, three values each) the best observation
    (-0.5, a lucky draw at a point of mean 0.67) and the best posterior mean (the point of mean
    0) differ; ``recommend`` gives both, the posterior mean in ``y``'s units near the replicates'
    mean 0 (0.25: the GP shrinks it toward the other points). Catches: the model's pick being the
    best observation (mutation: ``j = i``), the largest mean (mutation: ``argmax``), or a mean
    left standardised (mutation: dropping ``mean + std *``: about -1.1)."""
    algo = gp_run.algo
    points = BOUNDS[0] + (BOUNDS[1] - BOUNDS[0]) * np.array(
        [[0.1, 0.1], [0.9, 0.9], [0.1, 0.9], [0.9, 0.1], [0.5, 0.5]])
    values = [[0.0, 0.1, -0.1], [-0.5, 1.2, 1.3], [2.0, 2.1, 1.9], [3.0, 3.1, 2.9],
              [1.0, 1.1, 0.9]]
    study = AT.start(algo, BRANIN.bounds, jax.random.PRNGKey(3), n_init=0)
    for rep in range(3):
        for p, v in zip(points, values):
            study = AT.tell(algo, study, p, [v[rep]])
    rec = AT.recommend(algo, study)
    assert rec.y == -0.5 and rec.trial == 1
    np.testing.assert_array_equal(rec.x, points[1])
    np.testing.assert_array_equal(rec.model_x, points[0])
    assert rec.model_trial in (0, 5, 10)
    assert abs(rec.model_mean) < 0.25


SPACE = S.Space([
    S.Float("lr", 1e-5, 1e-1, log=True),
    S.Int("layers", 1, 8),
    S.Categorical("act", ("relu", "tanh", "gelu")),
])


def test_space_round_trips_as_json():
    """``Space.from_json(to_json())`` is the same space; a Float and an Int of the same fields
    are not (catches ``__eq__`` comparing the NamedTuples' fields only, as tuples compare); a
    choice JSON cannot hold is refused naming the parameter."""
    assert S.Space.from_json(SPACE.to_json()) == SPACE
    assert S.Space([S.Float("a", 0, 1)]) != S.Space([S.Int("a", 0, 1)])
    with pytest.raises(ValueError, match="parameter 'f': choice"):
        S.Space([S.Categorical("f", (len, abs))]).to_json()


def test_space_study_keeps_its_space_and_pending_trials(tmp_path):
    """A space study saved with a pending trial loads with its space (no space passed) and the
    trial still pending; telling it by id records the canonical encoding and the score's sign.
    Telling a parameter dict closes the pending trial it was asked as. Catches: the space not
    saved (mutation: ``save`` leaving out ``"space"``: ``load`` raises "records no space");
    ``maximize`` ignored for trial ids (mutation: ``y = score``: best is then -0.3)."""
    algo = ntkbo.algorithms.random_search()
    study = S.start(algo, SPACE, jax.random.PRNGKey(4), n_init=1)
    t0, p0, study = S.ask_trial(algo, study)
    t1, p1, study = S.ask_trial(algo, study)
    [p2], study = S.ask(algo, study)
    AT.save(tmp_path / "s.msgpack", study)
    back = S.load(tmp_path / "s.msgpack", algo)
    assert back.space == SPACE
    assert [t.id for t in AT.pending(back)] == [t0, t1, 2]
    back = S.tell(algo, back, t1, 0.3, maximize=True)
    back = S.tell(algo, back, SPACE, [p2], [0.1], maximize=True)  # closes trial 2 by value
    assert [t.id for t in AT.pending(back)] == [t0]
    x, y = AT.observations(back)
    np.testing.assert_array_equal(x, np.stack([SPACE.to_unit(p1), SPACE.to_unit(p2)]))
    np.testing.assert_array_equal(y, [-0.3, -0.1])
    best_params, best_score = S.best(back, maximize=True)
    assert best_score == 0.3 and best_params["lr"] == pytest.approx(p1["lr"], rel=1e-12)
    assert {k: best_params[k] for k in ("layers", "act")} == {k: p1[k] for k in ("layers", "act")}
    with pytest.raises(ValueError, match="differs from the saved space"):
        S.load(tmp_path / "s.msgpack", algo, S.Space([S.Float("lr", 0.0, 1.0)]))
    with pytest.raises(ValueError, match="trial 1: .*already told"):
        S.tell(algo, back, t1, 0.3)
