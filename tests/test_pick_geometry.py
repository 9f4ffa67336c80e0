"""benchmarks/pick_geometry.py: the boundary fraction and the distance to the incumbent, against
their values for uniformly random points (closed forms) and a hand-made run."""

import numpy as np

from benchmarks import pick_geometry as G


def test_uniform_points_match_the_closed_forms():
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(20, 200, 10))
    y = rng.normal(size=(20, 200))
    at_bound, dist = G.geometry(x, y, n_init=20)
    # A uniform coordinate is within 0.01 of a bound with probability 0.02; two independent
    # uniform points differ by E|u - v|^2 = 1/6 per coordinate, so the RMS difference is
    # ~sqrt(1/6) (Jensen's gap at d = 10 is below 1%). Tolerances: the Monte Carlo error of
    # 36,000 coordinates (s.d. of the fraction ~7e-4) and 3,600 distances (s.d. ~1e-3), times ~5.
    assert abs(at_bound - 0.02) < 0.004
    assert abs(dist - np.sqrt(1 / 6)) < 0.01


def test_a_hand_made_run():
    # One seed, d = 2: the initial point (0.5, 0.5) with y = 1; then a corner (at bound 1.0,
    # distance sqrt(0.5)/sqrt(2) = 0.5 from the incumbent) with y = 0, which becomes the
    # incumbent; then (1.0, 0.5) (at bound 0.5, distance to the corner (0, 0): sqrt(1.25)/sqrt(2)).
    # Mutations caught: the incumbent taken as the last point or the argmax (the third distance
    # would differ), the suggestions starting one point early or late, NaN allowed as the
    # incumbent, the 1% edge dropped (each checked).
    x = np.array([[[0.5, 0.5], [0.0, 0.0], [1.0, 0.5], [0.2, 0.2]]])
    y = np.array([[1.0, 0.0, np.nan, 5.0]])
    at_bound, dist = G.geometry(x, y, n_init=1)
    np.testing.assert_allclose(at_bound, (1.0 + 0.5 + 0.0) / 3)
    np.testing.assert_allclose(dist, (0.5 + np.sqrt(1.25 / 2) + np.sqrt(0.08 / 2)) / 3)
