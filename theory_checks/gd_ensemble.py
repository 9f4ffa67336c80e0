r"""Ensembles of wide networks trained by full-batch gradient descent on the MSE loss follow the
infinite-width prediction of ``ntkbo.gp.gd_ensemble`` / ``gd_ensemble_predict`` (Lee et al. 2019).

Claim (Lee et al. 2019, eqs. (14)-(16); neural-tangents'
``gradient_descent_mse_ensemble(get="ntk")``): a network ``f(.; theta_0)`` of width ``m -> inf``,
trained from its random initialisation by gradient descent on
``L = (1/2N) sum_i (f(x_i) - y_i)^2`` for time ``t`` (learning rate folded into ``t``), is

    f_t(x) = f_0(x) + Theta(x, X) A(t) (y - f_0(X)),   A(t) = Theta^-1 (I - exp(-Theta t / N))   (*)

with ``f_0 ~ GP(0, K)`` (NNGP) and ``Theta`` the analytic NTK, so over initialisations
``f_t(x)`` is Gaussian with mean ``Theta(x, X) A(t) y`` and the covariance of
``ntkbo.gp.gd_ensemble_predict``.

Measured, for ``M`` networks ``ntkbo.kernels.mlp(depth, m, ...)`` at widths ``m`` (nested,
``theory_checks.nets``), trained by plain GD with step ``eta = N / (8 e_max(Theta))`` and read at
``t = eta k`` near the times ``settings["times"]``, then with step ``N / e_max`` until
``exp(-e_min t / N) < 1e-8`` (``t = inf``). Gradient descent is not gradient flow: the pathwise
prediction (*) below uses the exact discrete-time matrix ``Theta^-1 (I - (I - eta Theta / N)^k)``;
the moments are compared with ``gd_ensemble_predict`` at ``t = eta k`` (gradient flow), whose
spectral factors differ from the discrete ones by at most the amount stated in ``notes``
(about 0.01 at ``eta = N / (8 e_max)``, well inside the Monte Carlo tolerance):

* the *pathwise* gap: the RMS over members and test points of ``f_t^NN(x) - (*)``, where (*) uses
  each member's own ``f_0``; it has no Monte Carlo floor, so it shows the ``m^-1/2`` convergence
  directly (fitted log-log slope);
* at the largest width, the ensemble mean against ``gd_ensemble_predict``'s mean (largest
  ``|z|`` over test points, ``z = (mean_M - mean) / sqrt(var / M)``) and the ensemble covariance
  (Frobenius error divided by its Monte Carlo scale ``sqrt((|C|_F^2 + tr(C)^2) / M)``,
  ``theory_checks.stats.cov_error``);
* also recorded (curves): the moment errors against the width.

* the *mean* pathwise residual: per test point, the mean over members of ``f_t^NN(x) - (*)`` in
  units of its standard error ``sd / sqrt(M)`` (largest ``|z|`` over test points). The member's own
  ``f_0`` cancels from it, so it is far more precise than the ensemble-mean z-score: its
  standard error is the finite-width fluctuation ``O(m^-1/2) / sqrt(M)``, not the prior's
  ``O(1) / sqrt(M)``. Its expectation is the ``O(1/m)`` finite-width bias of the mean, which is
  ``O(sqrt(M / m))`` standard errors: at most 0.3 times a constant of order one at CPU scale.

* the *time scale*, at the first (smallest) time ``t``: the residuals regressed on the pathwise
  velocity ``v_i(x) = t d(*)_i(x)/dt`` over members and test points, ``beta = sum_i <r_i, v_i> /
  sum_i |v_i|^2``, with its standard error by the delta method over the i.i.d. members. A kernel
  scaled by ``F`` predicts the network at time ``F t``, so ``beta = 1 - F`` to first order; the real
  library gives ``beta = 0`` up to the finite-width correlation of ``r`` and ``v``, ``O(1/m)``.
  Only the first time: at later times the velocity is small and the ratio is dominated by that
  correlation (measured at smoke scale: ``beta = 0.16 +- 0.07`` at ``t = 10``).

The training schedule (step sizes and step counts) comes from the reference side: the mean
empirical NTK of ``lr_members`` networks at the largest width, an unbiased estimate of ``Theta``
(depth 1), not the kernel under test; the networks and their outputs are cached across faults
(:func:`_networks` calls only ``init_fn``, ``apply_fn`` and autodiff, none of which a fault
patches). The library side is ``ntkbo.kernels.mlp(...)[2]`` and ``ntkbo.gp.gd_ensemble_predict``.

Tolerances (fixed in advance; reasons): pathwise slope in ``[-1.0, -0.3]`` (theory ``-1/2``: the
empirical NTK's fluctuation; a shape check allowing pre-asymptotic curvature and a slope seed noise
below 0.1); mean-residual ``max |z|`` and ensemble-mean ``max |z|`` at most the Bonferroni normal
quantile ``z(1 - 1e-3 / (2 n_test n_times))`` (3.99 for 15 z-scores: a false alarm below 1e-3;
the residual means are averages of ``M >= 96`` members, so normal); time-scale ``|beta| / SE`` at
most ``z(1 - 1e-3 / 2) = 3.29`` (normal: an average over ``M``
members); covariance error ``<= 3``
Monte Carlo scales (its expectation is about 1; it is a norm over ``n_test^2`` entries, so
concentrated).

Power: a kernel scaled by ``F`` predicts the network at time ``F t`` instead of ``t``, a
pathwise shift of ``(F - 1) t d f_t / dt``; at ``t = inf`` the prediction (*) and the ensemble
moments do not depend on the NTK's scale (``Theta_xX Theta^-1``), so only the finite times can
detect it. Detects (``DETECTS``, measured with ``python -m theory_checks.fault_matrix``): at
``cpu`` scale ``ntk_scale:1.02`` (the time-scale row: ``beta = -0.0219 +- 0.0023``, ``z = -9.5``;
``ntk_scale:1.01`` fails too, ``z = -5.0``; without a fault ``beta = -0.0008 +- 0.0022``); at
``smoke`` scale ``ntk_scale:1.1`` (the
time-scale row: ``beta = -0.058 +- 0.017`` for ``F = 1.05``, ``-0.026 +- 0.017`` for ``1.02``).
``drop_bias_ntk`` changes the kernel by about 0.4% at ``b_std = 0.1`` and
is left to ``ntk_convergence``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats as sps

from ntkbo import data as D
from ntkbo import gp as G
from ntkbo.kernels import as_kernel, empirical_ntk, mlp
from theory_checks import memo
from theory_checks import memory as memory_lib
from theory_checks import nets
from theory_checks.report import Report, within
from theory_checks.stats import cov_error, loglog_slope, mean_z

NAME = "gd_ensemble"
CLAIM = "GD-trained wide-network ensembles -> the NTK trained-ensemble GP at every t (Lee et al.)"
SOURCE = "Lee et al. 2019 eqs. (14)-(16) (neural-tangents' gradient_descent_mse_ensemble)"
DETECTS = {"smoke": ("ntk_scale:1.1",), "cpu": ("ntk_scale:1.02",), "gpu": ("ntk_scale:1.02",)}
SLOPE_WINDOW = (-1.0, -0.3)
ALPHA = 1e-3  # false-alarm probability of each family of z-score rows
COV_MAX = 3.0

_BASE = dict(activation="relu", depth=1, W_std=1.5, b_std=0.1, d=2, n=5, n_test=5,
             times=[2.0, 10.0, "inf"], lr_members=32, chunk=None)
SCALES = {
    "smoke": dict(_BASE, widths=[32, 128, 512], members=96),
    "cpu": dict(_BASE, widths=[64, 256, 1024, 4096], members=384),
    # Sized to its share of one 8-minute GPU call (theory_checks.timing, docs/decisions.md
    # 2026-11-29); the former gpu sizes are estimated there at hours.
    "gpu": dict(_BASE, widths=[256, 1024, 4096, 16384], members=1536),
}


def _data(key, n, n_test, d):
    """Training inputs spread on a circle of radius ``sqrt(d)`` in the first two coordinates (well
    conditioned Gram matrix), test inputs normal; targets ``sin(2 x_1) + x_2 / 2``."""
    ang = 2 * np.pi * np.arange(n) / n + 0.3
    x = np.zeros((n, d))
    x[:, 0], x[:, 1] = np.cos(ang) * math.sqrt(d), np.sin(ang) * math.sqrt(d)
    xt = np.asarray(jax.random.normal(key, (n_test, d), jnp.result_type(float)))
    y = np.sin(2 * x[:, 0]) + x[:, 1] / 2
    return jnp.asarray(x), jnp.asarray(y), jnp.asarray(xt)


def memory(settings) -> list:
    """Peak-memory estimate of each chunked stage (``theory_checks.memory``), with ``P`` the
    parameters of the largest width ``m`` and ``a = (n + n_test) m depth`` one set of activations:
    the ``lr_members`` networks whose mean empirical NTK sets the schedule (one item: parameters
    ``P``, their normal draw ``P``, the per-example gradients ``n P`` and as much again for the
    layout of their contraction, ``2 n P`` (measured: about ``n P`` at width 256, ``2 n P`` at
    width 64), ``4 a``) and the ``members``
    trained networks (one item: the width-``m`` draw ``P`` kept through the width sweep, at the
    largest width its first units ``P`` and the training step's parameters, gradient and update
    ``3 P``, ``4 a``). Fixed: the stacked outputs."""
    s, f = settings, memory_lib.itemsize()
    n, m, depth = s["n"], s["widths"][-1], s["depth"]
    p, a = memory_lib.mlp_params(depth, m, s["d"]), (n + s["n_test"]) * m * depth
    outs = len(s["widths"]) * (n + s["n_test"] * (1 + len(s["times"])))
    return [memory_lib.stage(s, "schedule networks", s["lr_members"],
                             f * (p * (2 * n + 2) + 4 * a),
                             f * s["lr_members"] * n * n),
            memory_lib.stage(s, "trained members", s["members"], f * (5 * p + 4 * a),
                             f * s["members"] * outs)]


@memo.reference(maxsize=4)
def _networks(key, s: dict):
    """The reference side (cached per key and settings): the schedule and the trained networks,
    each a chunked map over the members' keys (``memory``; a network is drawn inside the map, so
    only a chunk of them sits in memory at once).

    Returns:
      ``(lr_small, steps, lr_big, steps_inf, kappa, f0, outs)``: step sizes and counts; the
      condition number of the estimated ``Theta``; per width, ``f0 (M, n + n_test)`` the networks
      at initialisation on ``[X; X_test]`` and ``outs`` a list over ``times`` of ``(M, n_test)``.
    """
    k_data, k_par = jax.random.split(key)
    x, y, xt = _data(k_data, s["n"], s["n_test"], s["d"])
    n, depth, act = s["n"], s["depth"], s["activation"]
    stages = memory(s)
    net = lambda k, m: nets.init(k, depth, m, s["d"], act, s["W_std"], s["b_std"])  # noqa: E731
    keys = jax.random.split(k_par, s["members"])  # the keys of nets.draw(k_par, ..., members)
    entk = empirical_ntk(mlp(depth, s["widths"][-1], act, W_std=s["W_std"], b_std=s["b_std"])[1])
    theta_hat = np.asarray(memory_lib.chunked_map(
        lambda k: entk(x, None, net(k, s["widths"][-1])), keys[: s["lr_members"]],
        memory_lib.find(stages, "schedule networks").chunk, "schedule networks")).mean(0)
    # Steps of eta_s = N / (8 e_max) up to the finite times (close to gradient flow), then steps
    # of eta = N / e_max until exp(-e_min t / N) < 1e-8 ("t = inf"; its limit does not depend on
    # the path). e_max, e_min: of the estimated Theta.
    evals = np.linalg.eigvalsh(theta_hat)
    lr_small, lr_big = n / (8 * evals[-1]), n / evals[-1]
    finite = [float(t) for t in s["times"] if t != "inf"]
    steps = [math.ceil(t / lr_small) for t in finite]
    steps_inf = math.ceil(-math.log(1e-8) * n / (evals[0] * lr_big))
    xall = jnp.concatenate([x, xt])
    applies = [mlp(depth, m, act, W_std=s["W_std"], b_std=s["b_std"])[1] for m in s["widths"]]

    def one_member(k):
        big = net(k, s["widths"][-1])
        f0s, outs_all = [], []
        for m, apply_fn in zip(s["widths"], applies):
            loss = lambda p, a=apply_fn: 0.5 * jnp.mean((a(p, x)[:, 0] - y) ** 2)  # noqa: E731

            def train(p, num, lr, loss=loss):
                def step(q, _):
                    g = jax.grad(loss)(q)
                    return jax.tree_util.tree_map(lambda a, b: a - lr * b, q, g), None
                return jax.lax.scan(step, p, None, length=num)[0]

            params = nets.first_units(big, depth, m, batched=False)
            f0s.append(apply_fn(params, xall)[:, 0])
            done, outs = 0, []
            for num in steps:
                params = train(params, num - done, lr_small)
                done = num
                outs.append(apply_fn(params, xt)[:, 0])
            if len(outs) < len(s["times"]):
                params = train(params, steps_inf, lr_big)
                outs.append(apply_fn(params, xt)[:, 0])
            outs_all.append(jnp.stack(outs))
        return jnp.stack(f0s), jnp.stack(outs_all)

    f0, outs = memory_lib.chunked_map(one_member, keys,
                                      memory_lib.find(stages, "trained members").chunk,
                                      "trained members")
    f0, outs = np.asarray(f0), np.asarray(outs)  # (M, widths, n + n_test), (M, widths, times, n_t)
    f0s = [f0[:, w] for w in range(len(s["widths"]))]
    outs_all = [[outs[:, w, i] for i in range(outs.shape[2])] for w in range(len(s["widths"]))]
    return lr_small, steps, lr_big, steps_inf, evals[-1] / evals[0], f0s, outs_all


def run(key, settings) -> Report:
    """Runs the check with ``settings`` (one of ``SCALES``; ``settings["fault"]`` records the
    library fault injected, if any)."""
    s = dict(settings)
    rep = Report(NAME, CLAIM, SOURCE, s)
    lr_small, steps, lr_big, steps_inf, kappa, f0s, outs_all = _networks(key, s)
    k_data, _ = jax.random.split(key)
    x, y, xt = _data(k_data, s["n"], s["n_test"], s["d"])
    n = s["n"]
    times = [st * lr_small for st in steps] + [math.inf] * (len(s["times"]) - len(steps))
    rep.notes = (f"eta {lr_small:.4g} for {steps} steps, then eta {lr_big:.4g} for {steps_inf} "
                 f"steps; kappa(Theta) = {kappa:.3g}")

    # The library side: analytic kernels, the pathwise prediction (*) and the ensemble moments.
    kfn = mlp(s["depth"], 1, s["activation"], W_std=s["W_std"], b_std=s["b_std"])[2]
    nngp, ntk = as_kernel(kfn, "nngp"), as_kernel(kfn, "ntk")
    th_xX, th_XX = np.asarray(ntk(xt, x)), np.asarray(ntk(x, x))
    e, v = np.linalg.eigh(th_XX)
    data = D.append(D.empty(n, s["d"], x.dtype), x, y)
    post = G.gd_ensemble(nngp, ntk, data, 0.0, "ntk")
    moments, amats, vmats = [], [], []
    for i, t in enumerate(times):
        # The exact discrete-time matrix Theta^-1 (I - (I - eta Theta / N)^k), k steps, and t times
        # its derivative in t = eta k: -t (I - eta Theta / N)^k log(I - eta Theta / N) / eta.
        w = 1 / e if math.isinf(t) else -np.expm1(steps[i] * np.log1p(-lr_small * e / n)) / e
        dw = (np.zeros_like(e) if math.isinf(t) else -t * np.exp(steps[i] * np.log1p(
            -lr_small * e / n)) * np.log1p(-lr_small * e / n) / (lr_small * e))
        amats.append(th_xX @ (v * w) @ v.T)
        vmats.append(th_xX @ (v * dw) @ v.T)
        mu, cov = G.gd_ensemble_predict(nngp, ntk, post, xt, jnp.asarray(t))
        moments.append((np.asarray(mu), np.asarray(cov)))
    gap = max(np.max(np.abs(np.exp(-e * k * lr_small / n) - (1 - lr_small * e / n) ** k))
              for k in steps) if steps else 0.0
    rep.notes += f"; gradient flow vs discrete GD spectral factors differ by <= {gap:.2g}"

    n_z = s["n_test"] * len(times)
    z_max = float(sps.norm.ppf(1 - ALPHA / (2 * n_z)))  # Bonferroni over the z-scores of a family
    gaps = {t: [] for t in s["times"]}
    mom_err = {t: [] for t in s["times"]}
    resid_z, speed = {}, {}
    for f0, outs in zip(f0s, outs_all):
        f0_X, f0_t = f0[:, :n], f0[:, n:]
        for label, a, vm, out, (mu, cov) in zip(s["times"], amats, vmats, outs, moments):
            drive = np.asarray(y)[None, :] - f0_X
            resid = out - (f0_t + drive @ a.T)
            gaps[label].append(float(np.sqrt(np.mean(resid**2))))
            resid_z[label] = resid.mean(0) / (resid.std(0, ddof=1) / np.sqrt(resid.shape[0]))
            # Time-scale regression: resid ~ beta * t d(*)/dt, per member a_i = <r_i, v_i>,
            # b_i = |v_i|^2, beta = sum a / sum b; its standard error by the delta method over the
            # i.i.d. members. A kernel scaled by F gives beta = 1 - F to first order.
            vel = drive @ vm.T
            a_i, b_i = np.sum(resid * vel, 1), np.sum(vel * vel, 1)
            if label == s["times"][0] and np.sum(b_i) > 0:
                beta = np.sum(a_i) / np.sum(b_i)
                se = np.std(a_i - beta * b_i, ddof=1) / np.sqrt(len(a_i)) / np.mean(b_i)
                speed[label] = (float(beta), float(se))
            ferr, scale = cov_error(out, cov)
            mom_err[label].append((float(np.max(np.abs(mean_z(out, mu, cov)))), ferr / scale))
    widths = np.asarray(s["widths"], float)
    for label in s["times"]:
        slope, _ = loglog_slope(widths, gaps[label])
        rep.add(f"slope of pathwise gap vs m, t={label}", slope, f"in {list(SLOPE_WINDOW)}",
                within(slope, *SLOPE_WINDOW), "-1/2")
        rz = float(np.max(np.abs(resid_z[label])))
        rep.add(f"mean pathwise residual max|z| at m={int(widths[-1])}, t={label}", rz,
                f"<= {z_max:.3g} (Bonferroni {ALPHA:g})", rz <= z_max,
                "|N(0,1)| up to O(sqrt(M/m))")
        if label in speed:
            beta, se = speed[label]
            z_b = float(sps.norm.ppf(1 - ALPHA / 2))
            rep.add(f"time-scale error beta (resid ~ beta t df/dt) at m={int(widths[-1])}, "
                    f"t={label}: beta/SE, beta = {beta:.4f}, SE = {se:.2g}", beta / se,
                    f"|z| <= {z_b:.3g} (Bonferroni {ALPHA:g})", abs(beta / se) <= z_b,
                    "0 (a kernel scaled by F: 1 - F)")
        z, c = mom_err[label][-1]
        rep.add(f"ensemble mean max|z| at m={int(widths[-1])}, t={label}", z,
                f"<= {z_max:.3g} (Bonferroni {ALPHA:g})", z <= z_max, "|z| ~ |N(0,1)|")
        rep.add(f"ensemble cov error / MC scale at m={int(widths[-1])}, t={label}", c,
                f"<= {COV_MAX}", c <= COV_MAX, "~1 (Monte Carlo)")
        rep.curve("pathwise gap |f_NN - f_inf| (RMS)", f"t={label}", widths, gaps[label])
        rep.curve("ensemble moment errors (z, cov/MC)", f"mean max|z|, t={label}", widths,
                  [zc[0] for zc in mom_err[label]], log=False)
        rep.curve("ensemble moment errors (z, cov/MC)", f"cov err/MC, t={label}", widths,
                  [zc[1] for zc in mom_err[label]], log=False)
    return rep
