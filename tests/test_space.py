"""Search spaces for ask/tell (``ntkbo.space``): encodings against closed forms, round trips,
the maximise flag and errors that name the parameter."""

import math

import jax
import numpy as np
import pytest

import ntkbo
from ntkbo import space as S

SPACE = S.Space([
    S.Float("lr", 1e-5, 1e-1, log=True),
    S.Float("dropout", 0.0, 0.5),
    S.Int("layers", 1, 8),
    S.Int("width", 16, 1024, log=True),
    S.Categorical("act", ("relu", "tanh", "gelu")),
])


def test_dimension_and_bounds():
    """One coordinate per Float/Int, one per category: 1 + 1 + 1 + 1 + 3."""
    assert SPACE.dim == 7
    np.testing.assert_array_equal(SPACE.bounds, np.stack([np.zeros(7), np.ones(7)]))


def test_log_float_is_geometric():
    """Catches a linear map where ``log=True`` is asked (mutation: drop the logs): the middle of
    the coordinate is the geometric mean 1e-3 of [1e-5, 1e-1], a quarter is 1e-4 (closed form;
    1e-12 relative: exp/log rounding)."""
    u = SPACE.to_unit({"lr": 1e-3, "dropout": 0.0, "layers": 1, "width": 16, "act": "relu"})
    assert u[0] == pytest.approx(0.5, abs=1e-12)
    v = SPACE.from_unit(np.array([0.25, 0.5, 0.5, 0.5, 1, 0, 0]))
    assert v["lr"] == pytest.approx(1e-4, rel=1e-12) and v["dropout"] == pytest.approx(0.25)


def test_integers_own_equal_shares():
    """Catches a map onto [low, high] instead of [low - 1/2, high + 1/2] (mutation: the end
    integers would own half shares): decoding a fine uniform grid of the coordinate gives each of
    the 8 layer counts 1/8 of it (grid of 80,001 points: 1e-4 is one grid step)."""
    grid = np.linspace(0, 1, 80001)
    base = np.array([0.5, 0.5, 0.0, 0.5, 1, 0, 0])
    counts = np.zeros(9)
    for t in grid:
        base[2] = t
        counts[SPACE.from_unit(base)["layers"]] += 1
    np.testing.assert_allclose(counts[1:] / grid.size, 1 / 8, atol=1e-4)


def test_log_integers_shrink_like_one_over_v():
    """``log=True`` Int: the share of ``v`` is (log(v + 1/2) - log(v - 1/2)) / (log(1024.5) -
    log(15.5)) (closed form), checked at v = 16 and 1000 on a grid of 200,001 points
    (tolerance 2e-5: a few grid steps)."""
    grid = np.linspace(0, 1, 200001)
    p = S.Space([S.Int("w", 16, 1024, log=True)])
    vals = np.array([p.from_unit(np.array([t]))["w"] for t in grid])
    span = math.log(1024.5) - math.log(15.5)
    for v in (16, 1000):
        share = (math.log(v + 0.5) - math.log(v - 0.5)) / span
        assert np.mean(vals == v) == pytest.approx(share, abs=2e-5)


def test_round_trip_and_canonical_points():
    """``from_unit(to_unit(p)) == p`` for random parameter dicts, and ``to_unit(from_unit(u))`` is a
    fixed point (canonical: integers at their share's centre, categories one-hot). Catches a
    categorical decoded by argmin, or an integer encoded at its share's edge (it would decode to
    its neighbour half the time)."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        p = {"lr": float(np.exp(rng.uniform(np.log(1e-5), np.log(1e-1)))),
             "dropout": float(rng.uniform(0, 0.5)), "layers": int(rng.integers(1, 9)),
             "width": int(rng.integers(16, 1025)), "act": ("relu", "tanh", "gelu")[rng.integers(3)]}
        q = SPACE.from_unit(SPACE.to_unit(p))
        assert q["layers"] == p["layers"] and q["width"] == p["width"] and q["act"] == p["act"]
        assert q["lr"] == pytest.approx(p["lr"], rel=1e-12)
        u = rng.uniform(size=SPACE.dim)
        c = SPACE.to_unit(SPACE.from_unit(u))
        np.testing.assert_allclose(SPACE.to_unit(SPACE.from_unit(c)), c, atol=1e-12)
        assert sorted(c[4:]) == [0.0, 0.0, 1.0]


@pytest.mark.parametrize("params, match", [
    ([], "at least one"),
    ([S.Float("a", 1.0, 1.0)], "'a': Float needs finite low < high"),
    ([S.Float("a", 0.0, 1.0, log=True)], "'a': log=True needs low > 0"),
    ([S.Int("n", 0, 4, log=True)], "'n': log=True needs low >= 1"),
    ([S.Int("n", 0.5, 4)], "'n': Int bounds must be integers"),
    ([S.Categorical("c", ())], "'c': choices must not be empty"),
    ([S.Categorical("c", ("a", "a"))], "'c': choices must be distinct"),
    ([S.Float("a", 0, 1), S.Int("a", 1, 2)], "repeated: a"),
])
def test_bad_spaces_name_the_parameter(params, match):
    with pytest.raises(ValueError, match=match):
        S.Space(params)


@pytest.mark.parametrize("values, match", [
    ({"lr": 1e-3}, "missing parameters"),
    ({"lr": 1.0, "dropout": 0.0, "layers": 1, "width": 16, "act": "relu"}, "'lr': 1.0 is outside"),
    ({"lr": 1e-3, "dropout": 0.0, "layers": 2.5, "width": 16, "act": "relu"},
     "'layers': expected an integer"),
    ({"lr": 1e-3, "dropout": 0.0, "layers": 1, "width": 16, "act": "elu"}, "'act': 'elu' is not one of"),
    ({"lr": 1e-3, "dropout": 0.0, "layers": 1, "width": 16, "act": "relu", "x": 1},
     r"unknown parameters \['x'\]"),
])
def test_bad_values_name_the_parameter(values, match):
    with pytest.raises(ValueError, match=match):
        SPACE.to_unit(values)


def test_maximise_through_ask_tell():
    """An end-to-end study with random search: ``best(maximize=True)`` is the largest told score
    with its parameters (mutation: ``tell`` forgetting to negate, so ``best`` returns the smallest),
    the model sees the canonical points, and a NaN score is a failed evaluation, never the best."""
    algo = ntkbo.algorithms.random_search()
    study = S.start(algo, SPACE, jax.random.PRNGKey(0), n_init=3)
    told = []
    for i in range(6):
        params, study = S.ask(algo, study, SPACE)
        scores = [math.nan if i == 2 else p["layers"] - 10 * p["dropout"] for p in params]
        study = S.tell(algo, study, SPACE, params, scores, maximize=True)
        told += list(zip(params, scores))
    finite = [(p, s) for p, s in told if not math.isnan(s)]
    params, score = S.best(study, SPACE, maximize=True)
    assert score == max(s for _, s in finite)
    assert params == max(finite, key=lambda t: t[1])[0]
    x, _ = ntkbo.ask_tell.observations(study)
    np.testing.assert_allclose(x, np.stack([SPACE.to_unit(p) for p, _ in told]), atol=0)
    assert ntkbo.ask_tell.failed(study).sum() == 1
