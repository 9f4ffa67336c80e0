r"""Cumulative regret grows sublinearly in ``T`` on functions of the NTK's RKHS (and on a realizable
teacher network for GO-UCB), at the rates the theorems give, and the information gain grows
sublinearly along the runs.

Claims:

* NTK-GP-UCB / TS (Srinivas et al. 2010; Chowdhury and Gopalan 2017; the baselines of all the
  papers): ``R_T = O(sqrt(T beta_T gamma_T))`` with ``gamma_T`` the maximum information gain,
  ``O(T^((d-1)/d))`` up to logs for the ReLU NTK (Vakili et al. 2021; seed-000 digest 5.4):
  ``R_T ~ T^(1 - 1/(2d))``: ``T^0.75`` at ``d = 2``.
* NeuralBO (Phan-Trong et al. 2023, Theorem 1; seed-000 digest 5.3-5.4): ``O(sqrt(T gamma_T))``.
* STO-BNTS (Dai et al. 2022, Theorem 1; seed-003 digest 2.2): ``O(sqrt(T gamma_T))`` up to logs.
* GO-UCB (Liu and Wang 2023, Theorem 4.1; seed-002 digest 5.1): ``O~(sqrt T)`` on a realizable
  parametric function: a random teacher network of GO-UCB's own architecture (``sigmoid_network``,
  hidden layer scaled by ``teacher_scale``, readout by 4, so that it is not monotone on the box and
  has an ``O(1)`` range; for seed 0 its minimum is still at the corner ``(0, 0)``, on a plateau:
  28% of the box is within 0.05 of it, measured on a 101^2 grid).
* Information gain along a run: ``gamma_hat_t = 1/2 log det(I + K_t / lam)`` on the points an
  NTK-GP-UCB run chose (``K_t`` the analytic NTK Gram, ``lam`` the model's noise), a lower bound on
  ``gamma_t``; it must grow sublinearly, and the regret exponent must not exceed
  ``(1 + rate(gamma)) / 2``, the exponent of ``sqrt(T gamma_T)`` with the measured growth.

Setting: ``d = 2``, ``f(z) = sum_j alpha_j k(c_j, z)`` with ``k`` the NTK-GP model's own kernel
(``signal Theta(to_sphere(z), to_sphere(z'))``, depth-2 ReLU, ``W_std = sqrt 2``, ``b_std = 0.1``)
and ``|f|_H = B`` (``theory_checks.rkhs``), observation noise ``N(0, noise^2)``. ``f*`` is the
minimum over a 4096-point Sobol grid refined by projected gradient descent, lowered to the smallest
value any run evaluated (so no regret is negative; ``notes`` says by how much it was lowered). All
seeds of an algorithm are one ``jax.vmap`` over ``ntkbo.minimize``.

Measured: the least-squares slope of ``log mean_seeds (R_t - R_{t/2})`` on ``log t`` over the
even ``t`` in ``[max(T / 4, 2 n_init), T]`` (``t / 2`` past the initial design), and a 95%
percentile bootstrap interval over
seeds. The window regret ``R_t - R_{t/2} ~ (1 - 2^-a) t^a`` has the exponent ``a`` of ``R_t ~
t^a`` but none of the regret accumulated before ``t / 2``: the former fit of ``log R_t`` measured
a slope near 0.5 for a method with constant per-round regret after a costly initial design
(``R_t = A + r t`` with ``A`` large), which passed; the window fit gives exactly 1 for it.

Tolerances (fixed in advance; reasons): every algorithm's interval lies below 1, by more than
``1e-9`` (the rounding of a log-log fit of an exactly linear curve; sublinear: the common claim;
a short horizon cannot pin the constant, only the exponent's side of 1); GO-UCB's slope ``<= 0.7``
(the digest's "about 0.5, up to logs, say below 0.6-0.7"); ``gamma_hat``'s slope interval below 1;
NTK-GP-UCB's regret exponent not significantly above ``(1 + rate(gamma_hat)) / 2``: the lower end
of its bootstrap interval at most the upper end of ``(1 + gamma interval) / 2`` (both intervals
computed, no constant).

Detects (``DETECTS``; ``python -m theory_checks.fault_matrix``): ``linear_regret`` (every
algorithm factory returns a method evaluating one fixed point after the initial design: constant
per-round regret) at every scale: every algorithm's interval is ``[1, 1]`` to rounding. Runs are
cached per key, settings and the injected fault when it patches something they call.
Not done here (issue 18 item 3): runs at ``T`` on a geometric grid with ``T``-dependent
parameters and the exponent of ``R_T`` against ``T``; the window fit is within one run.

Seeds: GO-UCB runs ``go_ucb_seeds`` (24 at CPU scale) instead of ``seeds`` (6). Its row compares
a point estimate with 0.7, and over 6 seeds that estimate is too noisy for the comparison: at CPU
scale, with 6 seeds, the slope was 0.73 with 95% CI [0.45, 0.88] (a fail); on 6 other keys it was
0.44. GO-UCB runs are cheap (about 25 s for 24 seeds), so the precision is bought with seeds, not
with a looser tolerance. With the former fit of ``log R_t`` (CPU scale, seed 0): 0.56, 95% CI
[0.41, 0.69], a pass. With the window fit (2026-11-24, ``results/fault_matrix_cpu.md``): 0.98 >
0.7, a FAIL, reported as one: after Phase I GO-UCB's per-round regret does not decrease within
``T = 40`` (the former fit's 0.56 came from the Phase-I regret accumulated before ``T / 4``, the
flaw issue 18 describes). At smoke scale (3 seeds) one seed's Phase II settles on one
non-optimal point, so the interval of its window exponent reaches 1 (the tests list that row as
known failing).

Also tried (2026-11-22, not adopted): a width-4 teacher built as a bump with an interior minimum
(two sigmoid ridges per axis) and a width-4 student, with ``lam`` in {paper, 1, 0.1} and the
Phase-I points in ``Sigma`` (``sigma_phase1``). Slopes were 1.01-1.09: Phase II settles on the box
edge nearest the bump (``x1 = 1``), where the sigmoid model's linearised optimum lies.

"""

from __future__ import annotations

import functools
import importlib
import json
import math

import jax
import jax.numpy as jnp
import numpy as np

import ntkbo
from ntkbo.algorithms.gp_bo import to_sphere
from ntkbo.benchmarks.problem import Problem
from ntkbo.kernels import mlp
from theory_checks import faults, rkhs
from theory_checks import memory as memory_lib
from theory_checks import neuralbo_identities as NBI
from theory_checks.report import Report
from theory_checks.stats import bootstrap_slope

GO = importlib.import_module("ntkbo.algorithms.go_ucb")

NAME = "regret_scaling"
CLAIM = ("cumulative regret ~ T^a with a < 1 (NTK-GP-TS/UCB, NeuralBO, STO-BNTS on RKHS functions; "
         "GO-UCB ~ T^0.5 on a teacher network); information gain sublinear")
SOURCE = ("Srinivas et al. 2010; NeuralBO Thm 1 (seed-000 5.3-5.4); STO-BNTS Thm 1 (seed-003 2.2); "
          "GO-UCB Thm 4.1 (seed-002 5.1)")
DETECTS = {scale: ("linear_regret",) for scale in ("smoke", "cpu", "gpu")}
#: The faults that patch a function the runs call (the factories, the NTK of the test function).
_RUN_STAGE = ("linear_regret", "ntk_scale", "drop_bias_ntk")
ROUNDING = 1e-9
SUBLINEAR = 1.0
GO_UCB_MAX = 0.7
ALGORITHMS = ("ntk_gp_ucb", "ntk_gp_ts", "neural_bo", "sto_bnts", "go_ucb")

_BASE = dict(d=2, norm=1.0, centres=8, teacher_scale=8.0, noise=0.01, lam=1e-2, teacher_width=25,
             algorithms=list(ALGORITHMS), chunk=None)
SCALES = {
    "smoke": dict(_BASE, budget=24, seeds=3, go_ucb_seeds=3, width=32,
                  algorithms=["ntk_gp_ucb", "go_ucb"]),
    "cpu": dict(_BASE, budget=40, seeds=6, go_ucb_seeds=24, width=64),
    "gpu": dict(_BASE, budget=400, seeds=32, go_ucb_seeds=64, width=512),
}


def run_bytes(name: str, s: dict) -> int:
    """Peak bytes of one ``ntkbo.minimize`` run of algorithm ``name`` at settings ``s``, from the
    sizes of ``_algorithm``'s options (``C``: the buffer capacity, the next power of two >=
    ``budget``; ``N = 256`` candidates, 2 restarts; ``d + 1`` inputs after the sphere map):

    * ``ntk_gp_*``: the ``C x C`` Gram matrix, its Cholesky factor and solves ``3 C^2``; the
      candidates' cross kernels with the NTK recursion's intermediates and their gradients (the
      nngp, ntk and their arc-cosine terms per layer: ``12 N C``); Thompson sampling's joint draw
      on ``N_ts = 1024`` points (``num_ts_candidates``' default): its covariance, the cross
      covariance solve, the Cholesky factor and the draw's workspace ``5 N_ts^2`` and cross
      kernels ``12 N_ts C``;
    * ``neural_bo``: ``theory_checks.neuralbo_identities.neural_bo_bytes`` (depth 1, no bias);
    * ``sto_bnts``: ``p`` parameters of the depth-2 network; the Levenberg-Marquardt Jacobian of
      the buffer, its weighted copy, the per-example gradients it is built from and the
      cotangents of the step ``4 C p``, the parameter sets, step and gradient ``6 p``,
      the Gram matrix ``C^2``, activations of the candidates and buffer ``4 (N + C) width 2``;
    * ``go_ucb``: the ``width``-25 teacher-sized network's ``p``; its ``p x p`` design matrix and
      factor ``2 p^2``, the buffer's and candidates' gradients ``(C + N) p`` and the oracle's
      activations and gradients for the candidates and the oracle's restarts ``8 (C + N) 25``.
    """
    f, c, n_c, d = memory_lib.itemsize(), NBI._capacity(s["budget"]), 256, s["d"]
    if name in ("ntk_gp_ucb", "ntk_gp_ts"):
        n_ts = 1024 if name == "ntk_gp_ts" else 0
        return f * (3 * c * c + 12 * n_c * c + 5 * n_ts * n_ts + 12 * n_ts * c)
    if name == "neural_bo":
        return NBI.neural_bo_bytes(s["width"], 1, d, s["budget"], n_c, 64, False)
    if name == "sto_bnts":
        p = memory_lib.mlp_params(2, s["width"], d + 1, False)
        return f * (p * (4 * c + 6) + c * c + 4 * (n_c + c) * s["width"] * 2)
    if name == "go_ucb":
        p = memory_lib.mlp_params(1, 25, d, True)
        return f * (2 * p * p + (c + n_c) * p + 8 * (c + n_c) * 25)
    raise ValueError(f"algorithms: unknown name {name!r}")


def memory(settings) -> list:
    """Peak-memory estimate (``theory_checks.memory``): per algorithm, its seeds' runs, one item
    per run (:func:`run_bytes`); fixed: the stacked points and values."""
    s, f = settings, memory_lib.itemsize()
    out = []
    for name in s["algorithms"]:
        seeds = s["go_ucb_seeds"] if name == "go_ucb" else s["seeds"]
        out.append(memory_lib.stage(s, f"{name} runs", seeds, run_bytes(name, s),
                                    f * seeds * s["budget"] * (s["d"] + 2)))
    return out


def _ntk_kernel():
    kfn = mlp(2, 1, "relu", W_std=math.sqrt(2.0), b_std=0.1)[2]
    return lambda a, b: kfn(to_sphere(a), to_sphere(b), "ntk")


def _algorithm(name, s, horizon):
    opt = dict(num_candidates=256, num_restarts=2, num_steps=10)
    if name == "random_search":
        return ntkbo.algorithms.random_search()
    if name in ("ntk_gp_ucb", "ntk_gp_ts"):
        return ntkbo.algorithms.ntk_gp(acquisition=name.split("_")[-1], depth=2,
                                       W_std=math.sqrt(2.0), b_std=0.1, lam=s["lam"],
                                       input_map="sphere", **opt)
    if name == "neural_bo":
        return ntkbo.algorithms.neural_bo(width=s["width"], num_steps=50, num_candidates=256,
                                          num_perturbations=64)
    if name == "sto_bnts":
        return ntkbo.algorithms.sto_bnts(width=s["width"], depth=2, num_steps=4,
                                         num_candidates=256, num_restarts=2, num_acq_steps=10)
    if name == "go_ucb":
        return ntkbo.algorithms.go_ucb(horizon=horizon, oracle_steps=300, oracle_restarts=2,
                                       num_candidates=256, num_restarts=2, num_steps=10)
    raise ValueError(f"algorithms: unknown name {name!r}")


@functools.lru_cache(maxsize=8)
def _runs(key_data: tuple, frozen: str, fault):
    """Every algorithm's runs, cached per key, settings and ``fault`` (the injected fault if it
    patches something the runs call, ``theory_checks.faults.touches``)."""
    del fault  # part of the cache key only
    s = json.loads(frozen)
    key = jax.random.wrap_key_data(jnp.asarray(key_data, jnp.uint32))
    d = s["d"]
    k_f, k_min, k_teacher, k_run = jax.random.split(key, 4)
    bounds = jnp.stack([jnp.zeros(d), jnp.ones(d)])
    kernel = _ntk_kernel()
    f, _, _ = rkhs.rkhs_function(k_f, kernel, d, s["centres"], s["norm"])
    init_t, apply_t = GO.sigmoid_network(s["teacher_width"])
    _, w_teacher = init_t(k_teacher, (-1, d))
    # Sharper hidden units and a larger readout than PyTorch's initialisation, so the teacher is
    # not monotone and has an O(1) range (at the default scale it is monotone on the box).
    w_teacher = {"hidden": jax.tree_util.tree_map(lambda v: s["teacher_scale"] * v,
                                                  w_teacher["hidden"]),
                 "readout": jax.tree_util.tree_map(lambda v: 4.0 * v, w_teacher["readout"])}
    teacher = lambda z: apply_t(w_teacher, z[None])[0, 0]  # noqa: E731
    out = {}
    for name in s["algorithms"]:
        fn = teacher if name == "go_ucb" else f
        f_min = float(rkhs.minimum(k_min, fn, d)[0])
        problem = Problem(name=f"{name}_target", fn=fn, bounds=bounds, noise_std=s["noise"])
        n_init = 2 if name != "go_ucb" else GO.n_explore_paper(s["budget"])
        algo = _algorithm(name, s, s["budget"] - n_init)
        seeds = s["go_ucb_seeds"] if name == "go_ucb" else s["seeds"]
        keys = jax.random.split(jax.random.fold_in(k_run, len(out)), seeds)
        label = f"{name} runs"
        res = memory_lib.chunked_map(
            lambda k: ntkbo.minimize(algo, problem, s["budget"], k, n_init=n_init), keys,
            memory_lib.find(memory(s), label).chunk, label)
        out[name] = (np.asarray(res.x), np.asarray(res.f), f_min)
    return out


def run(key, settings) -> Report:
    """Runs the check with ``settings`` (one of ``SCALES``, possibly with ``"fault"``)."""
    s = dict(settings)
    rep = Report(NAME, CLAIM, SOURCE, s)
    runs = _runs(tuple(np.asarray(jax.random.key_data(key)).ravel().tolist()),
                 json.dumps(dict(s, fault=None), sort_keys=True), faults.touches(_RUN_STAGE))
    T = s["budget"]
    t = np.arange(1, T + 1)
    window = t >= T // 4
    half = t // 2  # R_{t/2}: the regret before the window of t
    notes = []
    slopes = {}
    for name, (x, fvals, f_min) in runs.items():
        # Even t only (R_t - R_{t/2} then spans exactly t/2 rounds) and t/2 past the initial
        # design (n_init points), so a constant per-round regret gives exactly t/2 times it.
        n_init = GO.n_explore_paper(T) if name == "go_ucb" else 2
        fit = (t >= max(T // 4, 2 * n_init)) & (t % 2 == 0)
        best = min(f_min, float(fvals.min()))
        notes.append(f"{name}: f* lowered by {f_min - best:.2g}")
        regret = np.cumsum(fvals - best, axis=1)
        recent = regret - np.concatenate([np.zeros((regret.shape[0], 1)), regret], 1)[:, half]
        slope, low, high = bootstrap_slope(t[fit], recent[:, fit] + 1e-12)
        slopes[name] = (slope, low, high)
        rep.add(f"{name}: exponent of R_t - R_t/2 (95% CI [{low:.2f}, {high:.2f}])", high,
                f"CI upper < {SUBLINEAR} - {ROUNDING:g}", high < SUBLINEAR - ROUNDING,
                "< 1 (sublinear)")
        if name == "go_ucb":
            rep.add("go_ucb: exponent on the teacher network", slope, f"<= {GO_UCB_MAX}",
                    slope <= GO_UCB_MAX, "~0.5 (Thm 4.1)")
        rep.curve("cumulative regret R_t", name, t, regret.mean(0))
    # Information gain along the NTK-GP-UCB runs (or the first algorithm's).
    ref = "ntk_gp_ucb" if "ntk_gp_ucb" in runs else next(iter(runs))
    kernel = _ntk_kernel()
    x = runs[ref][0]
    gains = []
    for xi in x:
        k = np.asarray(kernel(jnp.asarray(xi), jnp.asarray(xi)))
        gains.append([0.5 * np.linalg.slogdet(np.eye(n) + k[:n, :n] / s["lam"])[1]
                      for n in t])
    gains = np.asarray(gains)
    g_slope, g_low, g_high = bootstrap_slope(t[window], gains[:, window])
    rep.add(f"information gain slope along {ref} runs (95% CI [{g_low:.2f}, {g_high:.2f}])",
            g_high, f"CI upper < {SUBLINEAR}", g_high < SUBLINEAR,
            "(d-1)/d = 1/2 up to logs (d=2)")
    bound = (1 + g_high) / 2
    r_low = slopes[ref][1]
    rep.add(f"{ref}: regret exponent CI lower end vs (1 + gamma CI upper end)/2", r_low,
            f"<= {bound:.3f}", r_low <= bound, "sqrt(T gamma_T)")
    rep.curve("information gain 1/2 logdet(I + K_t/lam)", ref, t, gains.mean(0))
    rep.notes = "; ".join(notes)
    return rep
