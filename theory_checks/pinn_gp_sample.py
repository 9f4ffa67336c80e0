r"""PINN-BO's trained network is a sample of the physics-informed NTK-GP posterior (Lemma 5.3.4).

Claim (thesis Lemma 5.3.4 with Corollary C.2.1.1): for an infinitely wide network whose
initialisation gives ``[nu h(X); nu N[h](Z)] ~ N(0, nu^2 K_NTK-PINN)`` (Corollary C.2.1.1, the
blocks of Definition 5.3.1), the network trained on the ``nu``-scaled loss of Eq. (5.1) from that
random initialisation is distributed, over the initialisations, as a draw of ``GP(mu_t, nu^2
sigma_t^2)``, the joint (co-kriging) posterior of ``f`` given ``Y`` (noise ``lam1``) and the PDE
data ``U`` (noise ``lam2``). The thesis justifies PINN-BO's greedy query (``argmin h = argmin nu
h``) as Thompson sampling with it.

What makes the lemma exact (the sample-then-optimise recipe; Matthews et al. 2017, He et al. 2020;
the lemma's noise ``lam1``, ``lam2`` need the two terms the thesis's Eq. (5.1) leaves out): the
linearised network ``h(x; theta) = phi(x)^T theta``, ``phi = grad_theta h(.; theta_bar)``,
``omega = grad_theta N[h](.; theta_bar)`` (the features of Definition 5.3.1), initialised at
``theta_0`` drawn by the library's ``init_fn`` (every entry ``N(0, 1)`` in the NTK
parameterisation, so ``nu phi^T theta_0 ~ N(0, nu^2 K)``: Corollary C.2.1.1), trained to the
minimiser of

    sum_i (y_i + nu sqrt(lam1) eps_i - nu h(x_i))^2 / lam1 + sum_j (u_j + nu sqrt(lam2) eta_j
        - nu N[h](z_j))^2 / lam2 + nu^2 |theta - theta_0|^2,        eps, eta ~ N(0, I)

(Eq. (5.1) with the residual weight ``lam1 / lam2``, the regulariser ``nu^2 lam1 |theta -
theta_0|^2`` and perturbed targets, all multiplied by ``1 / lam1``); then ``nu h(x; theta*)`` has
exactly mean ``mu_t(x)`` and covariance ``nu^2 Sigma_t`` (``Sigma_t`` the posterior covariance,
``sigma_t^2`` its diagonal) with the kernel ``K`` of the features. The minimiser is computed in
closed form (:func:`sample`; ``tests/test_theory_checks_more.py`` checks it against gradient
descent on that loss and the primal normal equations).

Two parts, each with ``members`` initialisations:

* **exact** (any width): one base network ``theta_bar`` (width ``width_exact``) for every member;
  the reference is the library's posterior with the empirical NTK of ``theta_bar``
  (``pinn_bo.pinn_kernels`` of ``k(a, b) = phi(a) . phi(b)``, then ``pinn_bo.joint_fit`` /
  ``joint_predict``): equal in distribution at any width.
* **wide** (the lemma's infinite width): every member its own base network ``theta_bar_s`` and
  its own ``theta_0``, width ``width_wide``; the reference is the library's posterior with the
  analytic NTK of the network (``pinn_kernels(as_kernel(kernel_fn, "ntk"))``): equal as ``m ->
  inf``. Over the base networks the members are a mixture; its mean differs from the analytic
  posterior mean by ``O(1/m)`` and its covariance by ``O(m^-1/2)`` relative (the empirical NTK's
  fluctuation, averaged), measured below the Monte Carlo error at these widths (results).

The problem: Laplace's equation ``Delta f = 0`` on ``[0, 1]^2`` (``ntkbo.benchmarks.pde.LAPLACE``),
``f(x) = x_1^2 - x_2^2 + x_1`` (harmonic) observed at ``n`` uniform points, ``N_r`` uniform PDE
points with ``u = 0``; ``nu = 2`` (so the ``nu^2`` scaling of the covariance is tested), test
points: ``n_test`` uniform in the box, the first 3 training inputs and 4 points outside the box
(at ``(1.5, 1.5)``, ``(-0.5, 1.5)``, ...), where the posterior is close to the prior (a kernel
error moves the covariance there; near the data the variance is pinned by the noise).

Rows per part (``M`` members, ``n_t`` test points, Gaussian members of the stated law):

* mean: ``max_i |z_i|``, ``z_i = (mean_s g_si - mu_i) / sqrt(nu^2 Sigma_ii / M)`` (normal);
* variance: ``max_i |z_i|``, ``z_i = (v_i - 1) / sqrt(2 / (M - 1))``, ``v_i = S_ii / (nu^2
  Sigma_ii)`` the sample variance ratio (``(M - 1) v_i ~ chi^2_{M-1}``, normal for ``M >= 1000``);
* variance outside the box: the pooled ratio ``v`` of the sample variance to ``nu^2 Sigma_ii``
  over the 4 points outside the box, ``z = (v - 1) / SE`` with ``SE`` computed from the members
  (:func:`far_variance_ratio`; no Gaussian assumption: the wide part's members are a mixture);
  the row that sees a kernel's scale;
* covariance (exact part only): ``s = tr(C^-1 S) / n_t`` with ``C = nu^2 Sigma``: ``(M - 1) n_t s
  ~ chi^2_{n_t (M - 1)}``, so ``z = (s - 1) / sqrt(2 / (n_t (M - 1)))`` (exact standard error);
* identity: the diagonal of the covariance assembled from ``joint_fit``'s factor equals
  ``joint_predict``'s variance to ``1e-8`` relative (rounding of one triangular solve).

Tolerances (fixed in advance; reasons): every z-score within the two-sided normal quantile at
``1e-3`` Bonferroni-corrected over all ``z``'s of the report (``2 (2 n_t + 2)`` of them: a false
alarm with probability at most ``1e-3``); the identity to ``1e-8``.

Detects (``DETECTS``; ``python -m theory_checks.fault_matrix``): ``pinn_wrong_operator``
(``pinn_kernels`` with ``N[f] + f``: both parts' means and covariances; cpu: exact-part mean
``|z| = 51``, 5 rows fail) and ``ntk_scale:F`` through the wide part's variance ratio outside the
box (the analytic NTK times ``F`` moves it to about ``1/F``): smoke ``ntk_scale:1.1`` fails
(``v = 0.868``, ``z = -6.3``), listed 1.2 (``z = -10``); cpu ``ntk_scale:1.1`` fails (``v =
0.931``, ``z = -6.2``), 1.05 and 1.03 pass, listed 1.1 (``results/fault_matrix_cpu_pinn_gp_sample.md``);
gpu (not run: 16 times the members, ``SE`` a quarter, 16 times the width) 1.03. The members (the
reference side: the network's features and ``init_fn``, which no fault patches) are cached
across faults.

Measured finite-width bias of the wide part (seed 0, smoke settings but ``width_wide`` varied):
the whitened covariance scale ``tr(C^-1 S)/n_t`` (not a row: it amplifies the directions of small
posterior variance, where the empirical NTK's fluctuation dominates) is 0.77, 0.91, 0.95 at
``m`` = 64, 256, 1024, approaching 1 about as ``m^-1/2``; the variance ratio outside the box is
0.94 (``z = -2.6``) at ``m = 256`` (smoke) and 1.000 (``z = -0.01``) at ``m = 4096`` (cpu). The
exact part's whitened scale is a row (``z = -0.4`` smoke, ``-1.4`` cpu). Depth 1 at every scale
(the exact part holds at any depth; the wide part's bias grows with depth).
"""

from __future__ import annotations

import functools
import importlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from scipy import stats as sps

from ntkbo import linalg
from ntkbo.benchmarks import pde as P
from ntkbo.kernels import as_kernel, mlp
from theory_checks import memo
from theory_checks import memory as memory_lib
from theory_checks.report import Report

PB = importlib.import_module("ntkbo.algorithms.pinn_bo")

NAME = "pinn_gp_sample"
CLAIM = ("PINN-BO: nu h of a PINN trained from a random init (sample-then-optimise) ~ GP(mu_t, "
         "nu^2 sigma_t^2), the physics-informed NTK-GP posterior")
SOURCE = ("thesis Lemma 5.3.4, Corollary C.2.1.1, Def. 5.3.1, Eq. (5.1); "
          "He et al. 2020 (sample-then-optimise)")
ALPHA = 1e-3
IDENTITY_RTOL = 1e-8

_BASE = dict(depth=1, activation="erf", W_std=1.5, b_std=0.1, nu=2.0, lam1=1e-2, lam2=1e-3)
SCALES = {
    "smoke": dict(_BASE, width_exact=16, width_wide=256, members=1000, n=5, num_residuals=8,
                  n_test=6, chunk=None),
    "cpu": dict(_BASE, width_exact=32, width_wide=4096, members=4000, n=8, num_residuals=16,
                n_test=10, chunk=100),
    # Sized to its share of one 8-minute GPU call (theory_checks.timing, docs/decisions.md
    # 2026-11-29); the former gpu sizes are estimated there at hours.
    "gpu": dict(_BASE, width_exact=32, width_wide=8192, members=16000, n=8, num_residuals=16,
                n_test=10, chunk=None),
}
DETECTS = {"smoke": ("pinn_wrong_operator", "ntk_scale:1.2"),
           "cpu": ("pinn_wrong_operator", "ntk_scale:1.1"),
           "gpu": ("pinn_wrong_operator", "ntk_scale:1.03")}

_D = 2
_PDE = P.LAPLACE
_FAR = np.array([[1.5, 1.5], [-0.5, 1.5], [1.5, -0.5], [-0.5, -0.5]])


def _num_test(s) -> int:
    return s["n_test"] + 3 + len(_FAR)


def memory(settings) -> list:
    """Peak-memory estimate of each chunked stage (``theory_checks.memory``). With ``p`` the
    parameters, ``N = n + N_r`` training rows and ``n_t`` test points: a *wide* member computes
    its Jacobian ``(N + n_t) p``, each row with its reverse-mode cotangent (``2 p``; the Laplacian
    rows by forward-over-reverse also the ``d`` tangents of each: ``(2 + 2 d) p``), i.e.
    ``(2 (n + n_t) + (2 + 2 d) N_r) p``, its parameters, ``theta_0`` and ``theta*`` ``3 p`` and the
    Gram ``N^2`` (XLA's measured peak of the stage at smoke sizes, chunk 16: 0.75 of this
    estimate; the first count, without the cotangents, was 0.69 of the measurement); an *exact*
    member only ``theta_0``, ``theta*`` ``2 p`` (the features are the same for every member:
    fixed, with the stacked outputs ``members n_t``)."""
    s, f = settings, memory_lib.itemsize()
    n_t, n, n_r = _num_test(s), s["n"], s["num_residuals"]
    rows = 2 * (n + n_t) + (2 + 2 * _D) * n_r
    p_e = memory_lib.mlp_params(s["depth"], s["width_exact"], _D)
    p_w = memory_lib.mlp_params(s["depth"], s["width_wide"], _D)
    outs = f * s["members"] * n_t
    return [memory_lib.stage(s, "exact members", s["members"], f * (2 * p_e + 2 * n_t),
                             outs + f * (rows * p_e + (n + n_r) ** 2)),
            memory_lib.stage(s, "wide members", s["members"],
                             f * (rows * p_w + 3 * p_w + (n + n_r) ** 2 + 2 * n_t), outs)]


def _problem(key, s):
    """``x (n, 2)``, ``y (n,)``, ``z (N_r, 2)``, ``u (N_r,)``, ``xt (n_t, 2)``."""
    k_x, k_z, k_t = jax.random.split(key, 3)
    dtype = jnp.result_type(float)
    x = jax.random.uniform(k_x, (s["n"], _D), dtype)
    y = x[:, 0] ** 2 - x[:, 1] ** 2 + x[:, 0]
    z = jax.random.uniform(k_z, (s["num_residuals"], _D), dtype)
    u = jax.vmap(_PDE.rhs)(z).reshape(-1)
    xt = jnp.concatenate([jax.random.uniform(k_t, (s["n_test"], _D), dtype), x[:3],
                          jnp.asarray(_FAR, dtype)])
    return x, y, z, u, xt


def features(apply_fn, params, x, z, xt):
    """``(J_train (n + N_r, p), J_test (n_t, p))``: rows ``phi(x_i)``, ``omega(z_j)`` (Definition
    5.3.1: ``grad_theta h`` and ``grad_theta N[h]``, the operator applied to the network by
    autodiff in its input) and ``phi(xt)``; ``p`` in ``ravel_pytree(params)`` order."""
    flat, unravel = ravel_pytree(params)

    def h(th):
        return lambda pt: apply_fn(unravel(th), pt[None, :])[0, 0]

    phi = jax.vmap(lambda pt: jax.grad(lambda th: h(th)(pt))(flat))
    omega = jax.vmap(lambda pt: jax.grad(lambda th: _PDE.operator(h(th))(pt))(flat))
    return jnp.concatenate([phi(x), omega(z)]), phi(xt)


def sample(j_train, j_test, theta0, noise, targets, perturbation, nu):
    """``nu h(xt; theta*)`` ``(n_t,)`` for the linearised network ``h = J theta`` trained to the
    minimiser of the loss in the module docstring, written per unit of ``nu``::

        theta* = argmin |W^-1/2 (t - J theta)|^2 + |theta - theta_0|^2,
        t = [y; u] / nu + sqrt(noise) * perturbation,  W = diag(noise) = diag(lam1 I, lam2 I)

    in its dual form ``theta* = theta_0 + J^T (J J^T + W)^-1 (t - J theta_0)``.

    Args:
      j_train: ``(N, p)`` rows ``phi(x_i)`` then ``omega(z_j)``; j_test: ``(n_t, p)``.
      theta0: ``(p,)`` the initialisation; noise: ``(N,)``; targets: ``(N,)`` ``[y; u]``;
      perturbation: ``(N,)`` standard normal; nu: the output scale.
    """
    t = targets / nu + jnp.sqrt(noise) * perturbation
    gram = j_train @ j_train.T + jnp.diag(noise)
    chol = linalg.cholesky(gram)
    alpha = linalg.cho_solve(chol, t - j_train @ theta0)
    return nu * (j_test @ theta0 + (j_test @ j_train.T) @ alpha)


def _member_fn(s, part, x, y, z, u, xt, fixed=None):
    """The per-member function of a part: ``key -> nu h(xt; theta*)``."""
    width = s["width_exact"] if part == "exact" else s["width_wide"]
    init_fn, apply_fn, _ = mlp(s["depth"], width, s["activation"], W_std=s["W_std"],
                               b_std=s["b_std"])
    noise = jnp.concatenate([jnp.full((x.shape[0],), s["lam1"]),
                             jnp.full((z.shape[0],), s["lam2"])])
    targets = jnp.concatenate([y, u])

    def one(k):
        k_bar, k_0, k_e = jax.random.split(k, 3)
        theta0 = ravel_pytree(init_fn(k_0, (-1, _D))[1])[0]
        if fixed is None:
            j_train, j_test = features(apply_fn, init_fn(k_bar, (-1, _D))[1], x, z, xt)
        else:
            j_train, j_test = fixed
        eps = jax.random.normal(k_e, noise.shape, noise.dtype)
        return sample(j_train, j_test, theta0, noise, targets, eps, s["nu"])

    return one, init_fn, apply_fn


@memo.reference(maxsize=8)
def _members(key, s: dict, part: str):
    """The reference side, cached per key, settings and part (no fault patches ``init_fn``, the
    network or the operator applied to it): ``(M, n_t)`` samples ``nu h(xt; theta*)``."""
    k_prob, k_bar, k_mem = jax.random.split(key, 3)
    x, y, z, u, xt = _problem(k_prob, s)
    fixed = None
    if part == "exact":
        init_fn, apply_fn, _ = mlp(s["depth"], s["width_exact"], s["activation"],
                                   W_std=s["W_std"], b_std=s["b_std"])
        fixed = jax.jit(lambda p: features(apply_fn, p, x, z, xt))(init_fn(k_bar, (-1, _D))[1])
    one, _, _ = _member_fn(s, part, x, y, z, u, xt, fixed)
    label = f"{part} members"
    keys = jax.random.split(jax.random.fold_in(k_mem, part == "wide"), s["members"])
    return np.asarray(memory_lib.chunked_map(one, keys, memory_lib.find(memory(s), label).chunk,
                                             label))


def posterior(kernel, s, x, y, z, u, xt):
    """The library's posterior (Lemma 5.3.4 in kernel form): ``pinn_bo.pinn_kernels`` of
    ``kernel``, ``joint_fit`` on ``(z, u)`` and ``(x, y)``, ``joint_predict``; returns ``(mu
    (n_t,), cov (n_t, n_t), var (n_t,))`` with ``cov`` assembled from the fit's Cholesky factor
    and the library's kernel blocks and ``var`` ``joint_predict``'s."""
    # one compiled program (a fresh trace per call, so an injected fault is always seen): the
    # nested input derivatives of the operator kernels are slow op by op
    mu, cov, var = jax.jit(functools.partial(_posterior, kernel, s["lam1"], s["lam2"]))(
        x, y, z, u, xt)
    return np.asarray(mu), np.asarray(cov), np.asarray(var)


def _posterior(kernel, lam1, lam2, x, y, z, u, xt):
    k, k_ur, k_rr = PB.pinn_kernels(kernel, _PDE)
    post = PB.joint_fit(k, k_ur, k_rr, z, u, x, y, jnp.ones(x.shape[0], bool), lam1, lam2)
    mu, var = PB.joint_predict(k, k_ur, post, z, x, xt)
    cross = jax.vmap(lambda a: jnp.concatenate([jax.vmap(lambda b: k_ur(a, b))(z).reshape(-1),
                                                jax.vmap(lambda b: k(a, b))(x)]))(xt)
    prior = jax.vmap(lambda a: jax.vmap(lambda b: k(a, b))(xt))(xt)
    v = linalg.solve_triangular(post.chol, cross.T, lower=True)
    return mu, prior - v.T @ v, var


def gaussian_rows(samples, mu, cov):
    """``(mean z (n_t,), variance-ratio z (n_t,), covariance-scale z, s)`` of ``samples (M, n_t)``
    against ``N(mu, cov)`` (module docstring)."""
    samples = np.asarray(samples, float)
    m, n = samples.shape
    z_mean = (samples.mean(0) - mu) / np.sqrt(np.diag(cov) / m)
    sample_cov = np.cov(samples, rowvar=False)
    z_var = (np.diag(sample_cov) / np.diag(cov) - 1.0) / np.sqrt(2.0 / (m - 1))
    chol = np.linalg.cholesky(cov)
    w = np.linalg.solve(chol, np.linalg.solve(chol, sample_cov).T)
    scale = float(np.trace(w)) / n
    return z_mean, z_var, (scale - 1.0) / np.sqrt(2.0 / (n * (m - 1))), scale


def far_variance_ratio(samples, var):
    """``(v, SE)``: the pooled variance ratio ``v = mean_i S_ii / var_i`` of ``samples (M, k)``
    and its Monte Carlo standard error computed from the draws: ``v = sum_s q_s / (M - 1)``,
    ``q_s = mean_i (g_si - mean g_i)^2 / var_i``, so ``SE = sd(q) sqrt(M) / (M - 1)`` (no
    Gaussian assumption: the wide part's members are a mixture over base networks)."""
    samples = np.asarray(samples, float)
    m = samples.shape[0]
    q = np.mean((samples - samples.mean(0)) ** 2 / np.asarray(var), axis=1)
    return float(q.sum() / (m - 1)), float(q.std(ddof=1) * np.sqrt(m) / (m - 1))


def run(key, settings) -> Report:
    """Runs the check with ``settings`` (one of ``SCALES``; ``settings["fault"]`` records the
    library fault injected, if any)."""
    s = dict(settings)
    rep = Report(NAME, CLAIM, SOURCE, s)
    k_prob, k_bar, _ = jax.random.split(key, 3)
    x, y, z, u, xt = _problem(k_prob, s)
    n_t = xt.shape[0]
    z_max = float(sps.norm.ppf(1 - ALPHA / (2 * 2 * (2 * n_t + 2))))
    nu2 = s["nu"] ** 2
    notes = []
    for part in ("exact", "wide"):
        width = s["width_exact"] if part == "exact" else s["width_wide"]
        _, apply_fn, kernel_fn = mlp(s["depth"], width, s["activation"], W_std=s["W_std"],
                                     b_std=s["b_std"])
        if part == "exact":
            params = mlp(s["depth"], width, s["activation"], W_std=s["W_std"],
                         b_std=s["b_std"])[0](k_bar, (-1, _D))[1]
            grad = jax.jit(lambda a, prm=params: ravel_pytree(jax.grad(
                lambda q: apply_fn(q, a[None, :])[0, 0])(prm))[0])
            kernel = lambda a, b, g=grad: jax.vmap(lambda p: jax.vmap(  # noqa: E731
                lambda q: g(p) @ g(q))(b))(a)
        else:
            kernel = as_kernel(kernel_fn, "ntk")
        mu, sigma, var = posterior(kernel, s, x, y, z, u, xt)
        cov = nu2 * sigma
        samples = _members(key, s, part)
        tag = f"{part} m={width}, M={samples.shape[0]}"
        ident = float(np.max(np.abs(np.diag(sigma) - var)) / np.max(np.abs(var)))
        rep.add(f"{tag}: |diag(cov from joint_fit) - joint_predict var| / max var", ident,
                f"<= {IDENTITY_RTOL:g}", ident <= IDENTITY_RTOL, "0 (identity)")
        z_mean, z_var, z_cov, scale = gaussian_rows(samples, mu, cov)
        worst = int(np.argmax(np.abs(z_mean)))
        rep.add(f"{tag}: mean of nu h vs mu_t: max_i |z_i| (at test point {worst})",
                float(np.max(np.abs(z_mean))), f"<= {z_max:.3g}", np.max(np.abs(z_mean)) <= z_max,
                "|N(0,1)|")
        rep.add(f"{tag}: variance of nu h / (nu^2 sigma_t^2): max_i |z_i|",
                float(np.max(np.abs(z_var))), f"<= {z_max:.3g}", np.max(np.abs(z_var)) <= z_max,
                "|N(0,1)|")
        far = np.arange(n_t - len(_FAR), n_t)
        v_far, se_far = far_variance_ratio(samples[:, far], np.diag(cov)[far])
        rep.add(f"{tag}: variance ratio at the {len(far)} points outside the box = {v_far:.4f}, "
                f"SE = {se_far:.2g}: (v - 1)/SE", (v_far - 1.0) / se_far, f"|z| <= {z_max:.3g}",
                abs(v_far - 1.0) / se_far <= z_max, "N(0,1)")
        if part == "exact":
            rep.add(f"{tag}: covariance scale tr(C^-1 S)/n_t = {scale:.4f}: (s - 1)/SE", z_cov,
                    f"|z| <= {z_max:.3g}", abs(z_cov) <= z_max, "N(0,1)")
        idx = np.arange(n_t) + 1
        rep.curve(f"variance at test points ({part})", "nu^2 sigma_t^2 (library)", idx,
                  np.diag(cov))
        rep.curve(f"variance at test points ({part})", "members", idx, samples.var(0, ddof=1))
        notes.append(f"{part}: mean |z| {np.mean(np.abs(z_mean)):.3g}, tr(C^-1 S)/n_t = "
                     f"{scale:.4f} (z = {z_cov:.3g})")
    rep.notes = "; ".join(notes) + f"; Bonferroni z bound {z_max:.3g} over {2 * (2 * n_t + 2)}"
    return rep
