r"""PINN-BO: PDE data lower the information gain that enters the regret bound.

Claims (thesis ch. 5), for a GP with the NTK-PINN kernel of Definition 5.3.1
(``ntkbo.algorithms.pinn_bo.pinn_kernels``: the blocks ``K_uu``, ``K_ur``, ``K_rr`` by automatic
differentiation of the kernel in its inputs) and a linear operator ``N`` (here the Laplacian in 2-D,
the heat benchmark's operator), observations ``Y_t`` of ``f`` at ``t`` points (noise ``lam1``) and
PDE data ``U_r`` of ``N[f]`` at ``N_r`` points (noise ``lam2``):

1. Lemma 5.3.6 / C.2.2: the feature-space form of the interaction information
   ``1/2 log det(Phi^T Phi/lam1 + I) det(Omega^T Omega/lam2 + I) / det(Phi^T Phi/lam1 +
   Omega^T Omega/lam2 + I)`` (``p x p`` determinants, with ``phi = grad_theta h``, ``omega =
   grad_theta N[h]`` of a finite network at ``theta_0``; computed as the equal ``(n + N_r)``-square
   determinants of ``W W^T``, ``W = [Phi / sqrt lam1; Omega / sqrt lam2]``, by Sylvester's identity)
   equals the kernel-space form
   (``pinn_bo.interaction_information`` on the Gram blocks of the same features);
2. Remark 5.3.7: ``I(f; Y_t; U_r) >= 0`` at every ``t`` of a sequence of points, i.e. the term
   ``gamma_t - I(f; Y_t; U_r)`` of Lemma 5.3.8 / Theorem 5.3.11 is at most ``gamma_t``: conditioning
   on the PDE data lowers the information gain ``I(f; Y_t | U_r) = I(f; Y_t) - I(f; Y_t; U_r)``;
3. the reduction grows with the PDE data: ``I(f; Y_T; U_r)`` is non-decreasing along nested PDE
   data sets ``N_r = 0, n_1, n_2, ...`` (conditioning on more Gaussian data lowers
   ``I(f; Y_T | U_r)``);
4. and is strictly positive for the Laplacian: the PDE data carry information about ``f``;
5. the posterior variance of ``f`` given ``Y_t`` and ``U_r``
   (``pinn_bo.joint_predict``) is at most the variance given ``Y_t`` alone (``ntkbo.gp``), at every
   test point.

Tolerances (fixed in advance; reasons): 1 to a relative ``1e-6`` (``p x p`` and ``(t + N_r)``-square
log-determinants of matrices with condition numbers up to ``~1e8`` in float64); 2 and 3 to
``-1e-8`` nats (exact inequalities; rounding of the log-determinants); 4 above ``1e-3`` nats (a
PDE that constrains ``f`` gives an interaction information of order one; ``0`` means the cross
blocks are lost); 5 to ``1e-9`` times the prior variance (an exact inequality; the jitter of the
Cholesky factors is ``1e-10`` relative).

The reference side is the feature form: the PDE operator applied to the network itself
(``Problem.pde.operator`` through ``apply_fn``) and differentiated in the parameters; the library
side is ``pinn_bo.pinn_kernels`` (the operator applied to the kernel by autodiff),
``interaction_information``, ``joint_fit`` / ``joint_predict``.

Detects (``DETECTS``; ``python -m theory_checks.fault_matrix``): ``pinn_wrong_operator``
(``pinn_kernels`` built with ``N[f] + f``) at every scale: the Definition 5.3.1 row (the operator
blocks of the empirical NTK against ``omega omega^T``) and the feature = kernel form row fail by
orders of magnitude above their ``1e-6`` tolerances. Rows 2-5 are inequalities that hold for any
PSD kernel, so they cannot detect a wrong operator; they check the algebra of the joint GP.
"""

from __future__ import annotations

import functools
import importlib

import jax
import jax.numpy as jnp
import numpy as np

from ntkbo import linalg
from ntkbo import data as D
from ntkbo import gp as G
from ntkbo.benchmarks import pde as P
from ntkbo.kernels import as_kernel, grad_features, mlp
from theory_checks import memory as memory_lib
from theory_checks.report import Report

PB = importlib.import_module("ntkbo.algorithms.pinn_bo")

NAME = "pinn_information_gain"
CLAIM = ("PINN-BO: I(f;Y_t;U_r) >= 0 (feature = kernel form), growing with the PDE data, so PDE "
         "data lower the information gain I(f;Y_t|U_r) and the posterior variance")
SOURCE = "thesis Def. 5.3.1, 5.3.5, Lemmas 5.3.4, 5.3.6, Remark 5.3.7"

FORM_RTOL = 1e-6
INEQ_ATOL = 1e-8
POSITIVE_MIN = 1e-3
VAR_RTOL = 1e-9

SCALES = {
    "smoke": dict(width=32, depth=1, num_points=8, num_residuals=(4, 8, 16), num_test=32,
                  lam1=1e-2, lam2=1e-3, chunk=None),
    "cpu": dict(width=64, depth=2, num_points=24, num_residuals=(8, 16, 24, 32), num_test=256,
                lam1=1e-2, lam2=1e-3, chunk=None),
    "gpu": dict(width=512, depth=2, num_points=48, num_residuals=(16, 32, 64, 128), num_test=1024,
                lam1=1e-2, lam2=1e-3, chunk=None),
}
DETECTS = {scale: ("pinn_wrong_operator",) for scale in ("smoke", "cpu", "gpu")}

_D = 2  # the Laplacian on [0, 1]^2


def memory(settings) -> list:
    """Peak-memory estimate of each chunked stage (``theory_checks.memory``): the rows of the Gram
    blocks ``K_uu``, ``K_ur``, ``K_rr`` (one item a row, at most ``N_r`` columns), of the empirical
    NTK's operator kernels and of the analytic NTK's. With ``p`` the network's parameters, the
    Laplacian of a kernel in one argument by forward-over-reverse autodiff keeps the parameter
    gradient and its ``d`` directional second derivatives, ``(1 + d) p`` per point: for the
    columns' points, the same in every row, computed once (fixed, ``(n + N_r)(1 + d) p``), for a
    row's point and the pair's contraction ``2 (1 + d) p`` per row. The analytic kernel's pair
    keeps the NTK recursion and its input derivatives, at most ``400 depth^2`` scalars (measured
    110 at depth 1, 1100 at depth 2). Fixed:
    also the features ``phi``, ``omega`` ``(n + N_r) p``, the parameters and the blocks."""
    s, f = settings, memory_lib.itemsize()
    p = memory_lib.mlp_params(s["depth"], s["width"], _D)
    n, n_r = s["num_points"], max(s["num_residuals"])
    fixed = f * ((n + n_r) * (2 + _D) * p + p + (n + n_r) ** 2)
    return [memory_lib.stage(s, "empirical-NTK Gram rows", n + n_r, f * 2 * (1 + _D) * p, fixed),
            memory_lib.stage(s, "analytic-NTK Gram rows", n + n_r, f * 400 * s["depth"] ** 2 * n_r,
                             f * (n + n_r) ** 2)]


def _blocks(k, k_ur, k_rr, x, z, chunk, label):
    """The Gram blocks ``K_uu (n, n)``, ``K_ur (n, N_r r)``, ``K_rr (N_r, N_r)``, each a chunked
    map over its rows (``chunk`` rows at a time; one compiled program per block: the nested
    autodiff is thousands of primitives, slow to dispatch one by one)."""
    kuu = memory_lib.chunked_map(lambda a: jax.vmap(lambda b: k(a, b))(x), x, chunk, label)
    kur = memory_lib.chunked_map(lambda a: jax.vmap(lambda b: k_ur(a, b))(z).reshape(-1), x,
                                 chunk, label)
    krr = memory_lib.chunked_map(lambda a: jax.vmap(lambda b: k_rr(a, b)[0, 0])(z), z, chunk,
                                 label)
    return kuu, kur, krr


_interaction = jax.jit(lambda *a: PB.interaction_information(*a))


@jax.jit
def _prefix_information(kuu, kur, krr, lam1, lam2, ts, ns):
    """``I(f; Y_t; U_r)`` and ``I(f; Y_t)`` for the first ``t`` points (all PDE data), for every
    ``t`` in ``ts``, and ``I(f; Y_T; U_r)`` for the first ``n`` PDE points, for every ``n`` in
    ``ns``: rows and columns beyond the prefix are zeroed, which adds identity blocks to
    ``I + Lambda^-1/2 K Lambda^-1/2`` and leaves every log-determinant unchanged (one compiled
    program instead of one per prefix size)."""
    eye = jnp.eye(kuu.shape[0], dtype=kuu.dtype)

    def by_t(t):
        m = (jnp.arange(kuu.shape[0]) < t).astype(kuu.dtype)
        kuu_t, kur_t = kuu * m[:, None] * m[None, :], kur * m[:, None]
        info = PB.interaction_information(kuu_t, kur_t, krr, lam1, lam2)
        return info, 0.5 * linalg.logdet_spd(eye + kuu_t / lam1)

    def by_n(n):
        m = (jnp.arange(krr.shape[0]) < n).astype(krr.dtype)
        return PB.interaction_information(kuu, kur * m[None, :], krr * m[:, None] * m[None, :],
                                          lam1, lam2)

    info_t, gain_t = jax.vmap(by_t)(ts)
    return info_t, gain_t, jax.vmap(by_n)(ns)


@jax.jit
def _feature_form(phi, omega, lam1, lam2):
    """The feature form of Lemma 5.3.6 from ``phi (n, p)``, ``omega (N_r, p)``: its three ``p x
    p`` log-determinants ``log det(I_p + W^T W)`` taken as ``log det(I + W W^T)`` (Sylvester's
    determinant identity, exact), so the memory is ``(n + N_r)^2`` instead of ``p^2`` (at the gpu
    scale ``p = 2.6e5``: 560 GB)."""
    w = jnp.concatenate([phi / jnp.sqrt(lam1), omega / jnp.sqrt(lam2)])
    n = phi.shape[0]
    gram = w @ w.T
    ld = lambda m: linalg.logdet_spd(jnp.eye(m.shape[0], dtype=m.dtype) + m)  # noqa: E731
    return 0.5 * (ld(gram[:n, :n]) + ld(gram[n:, n:]) - ld(gram))


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3))
def _variances(k, k_ur, k_rr, kernel, x, z, xt, lam1, lam2):
    """The posterior variances of ``f`` at ``xt`` given ``Y_T`` and ``U_r`` (``pinn_bo``'s joint
    GP) and given ``Y_T`` alone (``ntkbo.gp``); the variance does not depend on the targets."""
    y = jnp.zeros(x.shape[0])
    post = PB.joint_fit(k, k_ur, k_rr, z, jnp.zeros(z.shape[0]), x, y,
                        jnp.ones(x.shape[0], bool), lam1, lam2)
    _, var_pde = PB.joint_predict(k, k_ur, post, z, x, xt)
    data = D.append(D.empty(x.shape[0], x.shape[1], x.dtype), x, y)
    _, var_data = G.predict(kernel, G.fit(kernel, data, lam1), xt)
    return var_pde, var_data


def run(key, settings) -> Report:
    """Runs the check with ``settings`` (one of ``SCALES``, possibly with ``"fault"``)."""
    s = dict(settings)
    rep = Report(NAME, CLAIM, SOURCE, s)
    lam1, lam2 = s["lam1"], s["lam2"]
    pde = P.LAPLACE
    init_fn, apply_fn, kernel_fn = mlp(s["depth"], s["width"], "erf", W_std=1.5, b_std=0.1)
    k_x, k_z, k_t, k_net = jax.random.split(key, 4)
    x = jax.random.uniform(k_x, (s["num_points"], _D))
    n_max = max(s["num_residuals"])
    z_all = jax.random.uniform(k_z, (n_max, _D))
    xt = jax.random.uniform(k_t, (s["num_test"], _D))

    # 1. feature form = kernel form, with the empirical NTK of a finite network at theta_0
    _, params = init_fn(k_net, (-1, _D))
    phi = grad_features(apply_fn)(x, params)
    h = lambda prm: (lambda p: apply_fn(prm, p[None, :])[0, 0])  # noqa: E731
    op_apply = lambda prm, pts: jax.vmap(pde.operator(h(prm)))(pts)[:, None]  # noqa: E731
    omega = grad_features(op_apply)(z_all, params)
    emp_k = lambda a, b: grad_features(apply_fn)(a, params) @ grad_features(apply_fn)(b, params).T  # noqa: E731,E501
    ek, ek_ur, ek_rr = PB.pinn_kernels(emp_k, pde)
    rows = memory_lib.find(memory(s), "empirical-NTK Gram rows")
    kuu, kur, krr = _blocks(ek, ek_ur, ek_rr, x, z_all, rows.chunk, rows.label)
    feat = float(_feature_form(phi, omega, lam1, lam2))
    kern = float(_interaction(kuu, kur, krr, lam1, lam2))
    rel = abs(feat - kern) / max(abs(feat), 1e-12)
    rep.add("|feature form - kernel form| / |feature form| (empirical NTK, Lemma 5.3.6)", rel,
            f"<= {FORM_RTOL:g}", rel <= FORM_RTOL, "0 (identity)")
    # the autodiff operator kernels of the empirical NTK equal the feature inner products
    gram_err = float(jnp.max(jnp.abs(krr - omega @ omega.T)) / jnp.max(jnp.abs(omega @ omega.T)))
    rep.add("max |N_z N_z' Theta - omega omega^T| / max |omega omega^T| (Def. 5.3.1)", gram_err,
            f"<= {FORM_RTOL:g}", gram_err <= FORM_RTOL, "0 (identity)")

    # 2-4. the analytic NTK (infinite width)
    kernel = as_kernel(kernel_fn, "ntk")
    k, k_ur, k_rr = PB.pinn_kernels(kernel, pde)
    rows = memory_lib.find(memory(s), "analytic-NTK Gram rows")
    kuu, kur, krr = _blocks(k, k_ur, k_rr, x, z_all, rows.chunk, rows.label)
    ts = np.arange(1, s["num_points"] + 1)
    sizes = (0,) + tuple(s["num_residuals"])
    info_t, gain_t, by_size = (np.asarray(a) for a in _prefix_information(
        kuu, kur, krr, lam1, lam2, ts, np.asarray(sizes)))
    worst = float(info_t.min())
    rep.add("min_t I(f; Y_t; U_r) (nats)", worst, f">= {-INEQ_ATOL:g}", worst >= -INEQ_ATOL,
            ">= 0 (Remark 5.3.7)")
    rep.curve("information gain (nats)", "I(f; Y_t)", ts, gain_t)
    rep.curve("information gain (nats)", "I(f; Y_t | U_r) = I(f; Y_t) - I(f; Y_t; U_r)", ts,
              gain_t - info_t)
    steps = float(np.min(np.diff(by_size)))
    rep.add("min increment of I(f; Y_T; U_r) along nested PDE data sets", steps,
            f">= {-INEQ_ATOL:g}", steps >= -INEQ_ATOL, ">= 0")
    rep.curve("I(f; Y_T; U_r) vs N_r", "I(f; Y_T; U_r)", list(sizes), by_size.tolist(),
              log=False)
    rep.add(f"I(f; Y_T; U_r) with N_r = {n_max} (nats)", float(by_size[-1]), f"> {POSITIVE_MIN:g}",
            by_size[-1] > POSITIVE_MIN, "> 0: the PDE data inform f")

    # 5. posterior variance with and without the PDE data
    var_pde, var_data = _variances(k, k_ur, k_rr, kernel, x, z_all, xt, lam1, lam2)
    prior = G.kernel_diag(kernel, xt)
    excess = float(jnp.max((var_pde - var_data) / prior))
    rep.add("max (var with PDE data - var without) / prior var", excess, f"<= {VAR_RTOL:g}",
            excess <= VAR_RTOL, "<= 0")
    rep.notes = (f"I(f; Y_T) = {gain_t[-1]:.4g}, I(f; Y_T; U_r) = {info_t[-1]:.4g} nats; mean "
                 f"variance ratio with/without PDE data {float(jnp.mean(var_pde / var_data)):.3g}")
    return rep
