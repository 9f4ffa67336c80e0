r"""NeuralBO's uncertainty: the primal and dual forms agree, the elliptical-potential identity and
inequalities hold along real runs, and ``nu sigma_t`` bands cover functions of the NTK's RKHS.

Claims (Phan-Trong et al. 2023), for NeuralBO runs
(``ntkbo.algorithms.neural_bo``, static features ``g = grad f(.; theta_0)``, dual uncertainty)
on an RKHS test function, with ``G`` the ``T x p`` features of the ``T`` evaluated points,
``sigma_{t-1}^2(x) = lam g^T U_{t-1}^-1 g`` and ``a_t = sigma_{t-1}^2(x_t) / lam``:

1. primal = dual: ``variance_primal`` equals ``variance_dual`` (``t x t`` Cholesky) at test
   points, ``U``'s factor by ``cholesky_update`` (NeuralBO's primal state) on run 0 and by a
   dense Cholesky on the others (the updates are ``p T`` sequential rotations: 4.4 s a run on
   one CPU core at ``gpu`` scale, p = 5121, T = 256);
2. ``sum_t log(1 + a_t) = log det(I + G G^T / lam)`` (Lemma 8, an identity);
3. ``sum_t min(sigma_{t-1}^2(x_t), c) <= c / log(1 + c / lam) log det(...)`` for every ``lam``,
   ``c > 0`` (from ``min(a, C) <= C log(1 + a) / log(1 + C)``); and the paper's Lemma 8.1 form
   ``<= lam c / log(1 + c) log det(...)``, which needs ``lam >= 1`` (an erratum: row 6), checked on
   the same points with ``lam = 1``;
4. ``sum_t min(sigma_{t-1}(x_t), sqrt c) <= sqrt(T c / log(1 + c / lam) log det(...))``
   (Cauchy-Schwarz on 3);
5. coverage (Lemma 3 in the large-width limit): with the analytic NTK ``k``
   of the run's network, ``mu_t = k_t^T (K_t + lam I)^-1 y_t``, ``sigma_t`` its posterior
   standard deviation, ``|f|_H <= B`` and noise ``N(0, R^2)``, the fraction of test points with
   ``|f(x) - mu_t(x)| <= nu sigma_t(x)``, ``nu = sqrt2 B + (R / sqrt lam) sqrt(2 log(1 / alpha))``,
   is at least ``1 - alpha``; measured at several ``t`` along each run (on the run's own,
   adaptively chosen points, not on points fixed in advance).

Tolerances (fixed in advance; reasons): 1 and 2 to a relative ``1e-6`` (float64 rounding of
``t x t`` and ``p x p`` Cholesky factors with condition numbers up to ``1e6``, and the dual form's
``1e-10`` relative jitter); 3 and 4 as ratios ``LHS / RHS <= 1 + 1e-9`` (deterministic
inequalities; rounding only); 5: the mean coverage over runs, times and points ``>= 1 - alpha``.

6. an erratum in the paper: its Lemma 8.1 form ``sum min(sigma^2, c) <= lam c /
   log(1 + c) log det(...)`` needs ``lam >= 1``; at the runs' ``lam < 1`` it is violated (ratio
   above 1 on real runs: ``min(a, C) <= C log(1 + a) / log(1 + C)`` bounds ``sum min(lam a_t, c)``
   by
   ``c / log(1 + c / lam) logdet``, which exceeds ``lam c / log(1 + c) logdet`` by the factor
   ``log(1 + c) / (lam log(1 + c / lam))``, 15 at ``lam = 0.01``, ``c = 1``). The row passes
   when the paper's form fails on every seed: the erratum is real, and rows 3-4 at ``lam < 1``
   are the correct replacement.

Detects (``DETECTS``; ``python -m theory_checks.fault_matrix``): ``neuralbo_wrong_lambda``
(``neural_bo.dual_factor`` built with ``lam = 1``) at every scale: rows 1 and 2 at ``lam = 0.01``
fail by orders of magnitude (``a_t`` computed with noise 1 instead of ``lam``); the ``lam = 1``
rows cannot see it. The runs build the factor of ``suggest``'s uncertainty through
``dual_factor`` or, with static features, ``extend_dual_factor`` (both patched), so they are re-run
under the fault (the cache key includes it).
"""

from __future__ import annotations

import importlib
import math

import jax
import jax.numpy as jnp
import numpy as np

import ntkbo
from ntkbo import data as D
from ntkbo import gp as G
from ntkbo.algorithms.gp_bo import to_unit
from ntkbo.benchmarks.problem import Problem
from ntkbo.kernels import grad_features, mlp
from theory_checks import faults, rkhs
from theory_checks import memo
from theory_checks import memory as memory_lib
from theory_checks.report import Report

NB = importlib.import_module("ntkbo.algorithms.neural_bo")

NAME = "neuralbo_identities"
CLAIM = ("NeuralBO: primal = dual uncertainty; elliptical-potential identity/inequalities along "
         "runs; nu sigma_t bands cover RKHS functions at level >= 1 - alpha")
SOURCE = "Phan-Trong et al. 2023 Alg. 1, Lemmas 3, 8, 8.1, Thm 1"
DETECTS = {scale: ("neuralbo_wrong_lambda",) for scale in ("smoke", "cpu", "gpu")}
#: The faults that patch a function the NeuralBO runs call.
_RUN_STAGE = ("neuralbo_wrong_lambda", "ntk_scale", "drop_bias_ntk")
IDENTITY_RTOL = 1e-6
INEQ_SLACK = 1e-9

_BASE = dict(d=2, depth=1, W_std=1.0, b_std=0.1, lam=0.01, noise=0.05, norm=1.0, centres=8,
             alpha=0.05, c=1.0, num_test=256, chunk=None)
SCALES = {
    "smoke": dict(_BASE, width=32, budget=16, seeds=2, train_steps=10),
    "cpu": dict(_BASE, width=128, budget=48, seeds=4, train_steps=50),
    # Sized to its share of one 8-minute GPU call (theory_checks.timing, docs/decisions.md
    # 2026-11-29); the former gpu sizes are estimated there at hours.
    "gpu": dict(_BASE, width=256, budget=96, seeds=16, train_steps=50),
}


def _capacity(budget: int) -> int:
    """The observation buffer ``ntkbo.minimize`` grows to: the next power of two >= ``budget``."""
    return 1 << max(int(budget) - 1, 0).bit_length()


def neural_bo_bytes(width: int, depth: int, d: int, budget: int, num_candidates: int,
                    num_perturbations: int, bias: bool, num_best: int = 4) -> int:
    """Peak bytes of one ``ntkbo.minimize`` run of ``neural_bo`` (dual uncertainty, sphere input
    map: ``d + 1`` inputs), from its sizes: ``p`` parameters; per suggest the gradient features of
    the ``C`` buffered points, of the ``N`` candidates and of the ``num_best x num_perturbations``
    perturbed candidates (``(C + N + B) p``); ``theta_0``, ``theta_t``, the training gradient and
    update ``4 p``; the ``C x C`` dual factor and the ``(N + B) x C`` cross features ``(N + B + C)
    C``; activations of ``N + B + C`` points (``4 (N + B + C) width depth``). ``C``: the buffer
    capacity, the next power of two >= ``budget``."""
    p, c = memory_lib.mlp_params(depth, width, d + 1, bias), _capacity(budget)
    b = num_best * num_perturbations
    n_all = num_candidates + b + c
    return memory_lib.itemsize() * (p * (n_all + 4) + n_all * c + 4 * n_all * width * depth)


def memory(settings) -> list:
    """Peak-memory estimate (``theory_checks.memory``): the ``seeds`` NeuralBO runs, one item per
    run (:func:`neural_bo_bytes`); fixed: the stacked results (the points, values and both
    parameter sets of every run)."""
    s, f = settings, memory_lib.itemsize()
    p = memory_lib.mlp_params(s["depth"], s["width"], s["d"] + 1)
    per = neural_bo_bytes(s["width"], s["depth"], s["d"], s["budget"], 256, 64, True)
    return [memory_lib.stage(s, "NeuralBO runs", s["seeds"], per,
                             f * s["seeds"] * (s["budget"] * (s["d"] + 2) + 2 * p))]


def _sequential_a(g, lam):
    """``a_t = sigma_{t-1}^2(x_t) / lam`` for ``t = 1..T`` from the dual form on prefixes."""
    t_all = g.shape[0]

    def one(t):
        mask = jnp.arange(t_all) < t
        chol = NB.dual_factor(g, mask, lam)
        return NB.variance_dual(g[t][None], g, mask, chol)[0] / lam

    return jax.vmap(one)(jnp.arange(t_all))


def _potential_rows(rep, g, lam, c, tag, paper_form):
    a = np.asarray(_sequential_a(g, lam))
    t_all = g.shape[0]
    logdet = float(np.linalg.slogdet(np.eye(t_all) + np.asarray(g @ g.T) / lam)[1])
    lhs = float(np.sum(np.log1p(a)))
    rel = abs(lhs - logdet) / abs(logdet)
    rep.add(f"{tag}: |sum log(1+a_t) - logdet(I+GG^T/lam)| / logdet", rel,
            f"<= {IDENTITY_RTOL:g}", rel <= IDENTITY_RTOL, "0 (identity)")
    sig2 = lam * a
    bound = c / math.log1p(c / lam) * logdet
    ratio = float(np.sum(np.minimum(sig2, c)) / bound)
    rep.add(f"{tag}: sum min(sigma^2, c) / (c/log(1+c/lam) logdet)", ratio,
            f"<= 1 + {INEQ_SLACK:g}", ratio <= 1 + INEQ_SLACK, "<= 1")
    ratio = float(np.sum(np.minimum(np.sqrt(sig2), math.sqrt(c))) / math.sqrt(t_all * bound))
    rep.add(f"{tag}: sum min(sigma, sqrt c) / sqrt(T c/log(1+c/lam) logdet)", ratio,
            f"<= 1 + {INEQ_SLACK:g}", ratio <= 1 + INEQ_SLACK, "<= 1")
    if paper_form:
        ratio = float(np.sum(np.minimum(sig2, c)) / (lam * c / math.log1p(c) * logdet))
        rep.add(f"{tag}: Lemma 8.1 sum min(sigma^2, c) / (lam c/log(1+c) logdet)", ratio,
                f"<= 1 + {INEQ_SLACK:g}", ratio <= 1 + INEQ_SLACK, "<= 1 (lam >= 1)")
    return a


@memo.reference(maxsize=4)
def _runs(key, s: dict, fault):
    """``(f_min, results)``: NeuralBO runs on the RKHS function, all seeds in one ``vmap``; cached
    per key, settings and the injected fault if it patches something the runs call (``fault``,
    from ``theory_checks.faults.touches``)."""
    del fault  # part of the cache key only
    d, depth, input_map = s["d"], s["depth"], "sphere"
    ws = (s["W_std"],) * (depth + 1)
    kfn = mlp(depth, s["width"], "relu", W_std=ws, b_std=s["b_std"])[2]
    ntk_embedded = lambda a, b: kfn(NB.embed(a, input_map), NB.embed(b, input_map), "ntk")  # noqa: E731
    k_f, k_min, k_run, _ = jax.random.split(key, 4)
    f, _, _ = rkhs.rkhs_function(k_f, ntk_embedded, d, s["centres"], s["norm"])
    f_min, _ = rkhs.minimum(k_min, f, d)
    bounds = jnp.stack([jnp.zeros(d), jnp.ones(d)])
    problem = Problem(name="rkhs_ntk", fn=f, bounds=bounds, optimum=float(f_min),
                      noise_std=s["noise"])
    algo = ntkbo.algorithms.neural_bo(
        network=dict(width=s["width"], depth=depth, W_std=ws, b_std=s["b_std"]), lam=s["lam"],
        nu=1.0, training=dict(num_steps=s["train_steps"]),
        search=dict(num_candidates=256, num_perturbations=64), input_map=input_map)
    keys = jax.random.split(k_run, s["seeds"])
    res = memory_lib.chunked_map(lambda k: ntkbo.minimize(algo, problem, s["budget"], k), keys,
                                 memory_lib.find(memory(s), "NeuralBO runs").chunk, "NeuralBO runs")
    return float(f_min), res


def run(key, settings) -> Report:
    """Runs the check with ``settings`` (one of ``SCALES``, possibly with ``"fault"``)."""
    s = dict(settings)
    rep = Report(NAME, CLAIM, SOURCE, s)
    d, depth, lam = s["d"], s["depth"], s["lam"]
    input_map = "sphere"
    ws = (s["W_std"],) * (depth + 1)
    _, apply_fn, kfn = mlp(depth, s["width"], "relu", W_std=ws, b_std=s["b_std"])
    feats = grad_features(apply_fn)
    ntk_embedded = lambda a, b: kfn(NB.embed(a, input_map), NB.embed(b, input_map), "ntk")  # noqa: E731
    k_f, k_min, k_run, k_test = jax.random.split(key, 4)
    f, _, _ = rkhs.rkhs_function(k_f, ntk_embedded, d, s["centres"], s["norm"])
    bounds = jnp.stack([jnp.zeros(d), jnp.ones(d)])
    f_min, res = _runs(key, s, faults.touches(_RUN_STAGE))
    zt = jax.random.uniform(k_test, (s["num_test"], d), bounds.dtype)
    f_test = np.asarray(jax.vmap(f)(zt))
    nu = math.sqrt(2) * s["norm"] + s["noise"] / math.sqrt(lam) * math.sqrt(2 * math.log(1 / s["alpha"]))
    kernel = ntk_embedded
    checkpoints = sorted({max(2, s["budget"] // 4), s["budget"] // 2, s["budget"]})
    coverage, worst_primal, erratum = [], 0.0, []
    for i in range(s["seeds"]):
        x = res.x[i]
        z = NB.embed(to_unit(x, bounds), input_map)
        params0 = jax.tree_util.tree_map(lambda v: v[i], res.state.params0)
        g = feats(z, params0)
        gt = feats(NB.embed(zt[:64], input_map), params0)
        mask = jnp.ones(g.shape[0], bool)
        if i == 0:  # the library's rank-one updates, as NeuralBO's primal state is built
            r = NB.cholesky_update(math.sqrt(lam) * jnp.eye(g.shape[1]), g)
        else:  # the same upper factor of U = lam I + G^T G, dense
            r = jnp.linalg.cholesky(lam * jnp.eye(g.shape[1]) + g.T @ g).T
        primal = np.asarray(NB.variance_primal(gt, r, lam))
        dual = np.asarray(NB.variance_dual(gt, g, mask, NB.dual_factor(g, mask, lam)))
        worst_primal = max(worst_primal, float(np.max(np.abs(primal - dual) / np.abs(dual))))
        a = _potential_rows(rep, g, lam, s["c"], f"seed {i}, lam={lam}", False)
        if lam < 1:
            logdet = float(np.linalg.slogdet(np.eye(g.shape[0]) + np.asarray(g @ g.T) / lam)[1])
            paper = float(np.sum(np.minimum(lam * a, s["c"])) /
                          (lam * s["c"] / math.log1p(s["c"]) * logdet))
            erratum.append(paper)
        _potential_rows(rep, g, 1.0, s["c"], f"seed {i}, lam=1", True)
        if i == 0:
            rep.curve("elliptical potential along run 0", "sum log(1+a_t)",
                      np.arange(1, len(a) + 1), np.cumsum(np.log1p(a)))
            rep.curve("elliptical potential along run 0", "sum min(sigma_t^2, c)",
                      np.arange(1, len(a) + 1), np.cumsum(np.minimum(lam * a, s["c"])))
        for t in checkpoints:
            data = D.append(D.empty(t, d, x.dtype), to_unit(x[:t], bounds), res.y[i, :t])
            post = G.fit(kernel, data, lam)
            mu, var = G.predict(kernel, post, zt)
            inside = np.abs(f_test - np.asarray(mu)) <= nu * np.sqrt(np.asarray(var))
            coverage.append((i, t, float(inside.mean())))
    rep.add("max relative |primal - dual| variance", worst_primal, f"<= {IDENTITY_RTOL:g}",
            worst_primal <= IDENTITY_RTOL, "0 (identity)")
    if erratum:
        rep.add(f"erratum (Lemma 8.1 needs lam >= 1): min over seeds of the paper's Lemma 8.1 "
                f"ratio at lam={lam} (violated: > 1)", min(erratum), "> 1", min(erratum) > 1,
                "> 1 (the form needs lam >= 1)")
    mean_cov = float(np.mean([c for _, _, c in coverage]))
    rep.add(f"coverage of nu sigma_t bands (nu={nu:.3g}), mean over runs/t", mean_cov,
            f">= {1 - s['alpha']:g}", mean_cov >= 1 - s["alpha"], f">= 1 - alpha = {1 - s['alpha']:g}")
    for i in range(s["seeds"]):
        rows = [(t, c) for j, t, c in coverage if j == i]
        rep.curve("coverage of nu sigma_t bands", f"run {i}", [t for t, _ in rows],
                  [c for _, c in rows], log=False)
    regret = np.asarray(res.f) - min(float(f_min), float(np.min(res.f)))
    rep.curve("cumulative regret (NeuralBO)", "mean over runs", np.arange(1, s["budget"] + 1),
              np.cumsum(regret, axis=1).mean(0))
    rep.notes = f"f_min = {float(f_min):.4g}; checkpoints t = {checkpoints}"
    return rep
