"""theory_checks.regret_scaling (regret across horizons): the exponent fit against
closed forms and the T-dependent parameters against their formulas. The smoke run's controls (random
search linear, GP-UCB sublinear) and the ``linear_regret`` fault's increments row are tested in
``tests/test_theory_checks.py``, next to the generic smoke and fault runs of every check, whose
cached runs they reuse (each smoke run was paid twice when they lived here)."""

from __future__ import annotations

import math

import jax
import numpy as np

from theory_checks import regret_scaling as RS

KEY = jax.random.PRNGKey(0)
H = [16, 32, 64, 128]
# A log-log least-squares fit of an exact power law recovers its exponent to the rounding of
# log and of the fit's sums: ~1e-15 relative; 1e-12 leaves room for the bootstrap's means.
EXACT = 1e-12


def test_exponent_of_power_law_is_its_exponent():
    """Synthetic ``R_T = c_j T^a`` (seed-dependent constants ``c_j``): the fit and every
    bootstrap resample give ``a``; the increments ``c_j (1 - 2^-a) T^a`` give ``a`` too.
    Mutations caught: regressing ``log R`` on ``T`` instead of ``log T``; ``np.diff`` along
    the seeds instead of the horizons. (The mean over seeds is tested by the third test, the
    increments' removal of an offset by the second.)"""
    c = np.array([0.5, 1.0, 2.0, 3.0])[:, None]
    T = np.asarray(H, float)
    for a in (0.3, 0.75, 1.0):
        R_T = c * T**a
        for inc in (False, True):
            est, lo, hi = RS.exponent(H, R_T, increments=inc)
            assert abs(est - a) < EXACT and abs(lo - a) < EXACT and abs(hi - a) < EXACT, (a, inc)


def test_offset_hides_linearity_only_without_increments():
    """``R_T = A + r T`` (a costly initial design, then constant per-round regret): the plain fit
    is well below 1, the increments ``r T / 2`` give exactly 1 (the flaw of the first regret check).
    Mutation caught: ``exponent(..., increments=True)`` fitting ``R_T`` itself (gives < 0.9)."""
    T = np.asarray(H, float)
    R_T = np.array([[50.0], [60.0], [70.0]]) + np.array([[1.0], [1.5], [0.5]]) * T
    assert RS.exponent(H, R_T)[0] < 0.9
    est, lo, hi = RS.exponent(H, R_T, increments=True)
    for v in (est, lo, hi):
        assert abs(v - 1.0) < EXACT


def test_exponent_uses_the_mean_over_seeds_and_pairs_resamples():
    """Two seeds ``T`` and ``T^0.5``: the mean's slope is the least-squares slope of ``log((T +
    T^0.5) / 2)`` (computed here with numpy); the bootstrap interval lies between the seeds'
    exponents 0.5 and 1 (a resample of the same seed at every ``T`` gives exactly 0.5 or 1;
    unpaired resampling would mix them across ``T``, outside that range for some draws).
    Mutations caught: the mean of ``log R`` (slope 0.75) instead of ``log`` of the mean;
    resampling seeds independently per ``T``."""
    T = np.asarray(H, float)
    R_T = np.stack([T, T**0.5])
    want = np.polyfit(np.log(T), np.log(R_T.mean(0)), 1)[0]
    est, lo, hi = RS.exponent(H, R_T)
    assert abs(est - want) < EXACT and abs(want - 0.75) > 0.01
    assert 0.5 - EXACT <= lo and hi <= 1.0 + EXACT
    assert abs(lo - 0.5) < EXACT and abs(hi - 1.0) < EXACT  # all-one-seed resamples occur


def test_t_dependent_parameters():
    """GO-UCB's phases: ``n + T_II = T``, ``n >= ceil(sqrt T_II)``, ``T_II`` the largest such
    (GO-UCB's Theorem 4.1: ``n = sqrt T``); ``beta_T`` against Srinivas Thm 1 written out; the log
    allowance ``1 / ln T_geo``. Mutations caught: ``n = ceil(sqrt T)`` of the total; a ``T^d``
    domain; the arithmetic mean of ``T`` in the allowance."""
    for T in (8, 16, 32, 64, 128, 1024):
        n, t2 = RS.go_ucb_phases(T)
        assert n + t2 == T and n >= math.ceil(math.sqrt(t2))
        assert t2 + 1 + math.ceil(math.sqrt(t2 + 1)) > T
    assert RS.go_ucb_phases(16) == (4, 12) and RS.go_ucb_phases(128) == (11, 117)
    assert abs(RS.beta_ucb(64, 2) - 2 * math.log(64 * 64**2 * math.pi**2 / 0.6)) < 1e-12
    assert abs(RS.log_allowance(H) - 1 / math.log(math.sqrt(16 * 128))) < 1e-12


def test_posterior_smb_gets_theorem_3_parameters():
    """Neural Greedy's row runs PosteriorSMB in Theorem 3's setting: ``sigma^2 = 1 + 2/T`` with
    ``T`` the run's own budget, no exploration phase (``T_e = 0``), the experiments' ``nu = 1``;
    read back from the algorithm's record (``ntkbo.algorithms``' resolved options, which is what the
    factory was called with). Mutations caught: ``sigma = 1 + 2/T`` (the variance passed as the
    standard deviation); ``sigma^2 = 1 + 2/T`` at a fixed ``T`` rather than the run's;
    ``smb="simple"`` (Theorem 3 is about PosteriorSMB)."""
    s = RS.SCALES["cpu"]
    for T in s["horizons"]:
        cfg = RS._algorithm("posterior_smb", s, T).config
        # 1e-12: the rounding of one sqrt and its square.
        assert abs(cfg["sigma"] ** 2 - (1.0 + 2.0 / T)) < 1e-12, (T, cfg["sigma"])
        assert cfg["smb"] == "posterior" and cfg["nu"] == 1.0 and cfg["num_explore"] == 0
    assert RS.THEOREM["posterior_smb"] == 1.5 - 1.0 / s["d"]  # Remark 4: 3/2 - 1/d
    assert RS.ALGORITHMS[:5] == ("ntk_gp_ucb", "ntk_gp_ts", "neural_bo", "sto_bnts", "go_ucb")


def test_linear_regret_replaces_the_greedy_factory():
    """Under ``linear_regret`` the factory the Neural Greedy row calls is the constant-point
    method: its ``suggest`` returns the same point for different keys after the design (so the
    row's increments exponent is 1, as for the other rows). Mutation caught: the
    ``("ntkbo.algorithms", "neural_greedy")`` entry left out of ``faults.PATCHES``."""
    import jax.numpy as jnp

    from theory_checks import faults

    bounds = jnp.stack([jnp.zeros(2), jnp.ones(2)])
    with faults.inject("linear_regret"):
        algo = RS._algorithm("posterior_smb", RS.SCALES["smoke"], 16)
        state = algo.init(KEY, bounds, 8)
        x1 = algo.suggest(jax.random.PRNGKey(1), state)[0]
        x2 = algo.suggest(jax.random.PRNGKey(2), state)[0]
    np.testing.assert_array_equal(np.asarray(x1), np.asarray(x2))
    assert RS._algorithm("posterior_smb", RS.SCALES["cpu"], 16).config["smb"] == "posterior"
