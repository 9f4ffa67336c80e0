r"""The empirical NTK of ntkbo's flax networks converges to the analytic NTK at rate ``m^-1/2``, and
it moves less and less during training as the width grows.

Claim (Jacot et al. 2018, Theorem 1 and 2; Lee et al. 2019, Theorem 2.1 and Appendix G; the
seed-003 digest section 2.6.3 and seed-001 thesis section 5.2(d)): for the network
``ntkbo.kernels.mlp(depth, m, activation, ...)`` (NTK parameterisation) with empirical NTK
``Theta_m = ntkbo.kernels.empirical_ntk(apply_fn)`` at initialisation and analytic NTK
``Theta = kernel_fn(x, x, "ntk")``,

* ``|Theta_m - Theta|_F / |Theta|_F ~ m^-1/2``: ``Theta_m`` is an average of ``m`` i.i.d.
  per-unit terms in the last hidden layer, and each deeper layer's fluctuation is again
  ``O(m^-1/2)`` (the thesis' worst-case bound ``m^-1/6`` and the digest's ``m^-1/4`` are upper
  bounds; the typical fluctuation is ``m^-1/2``);
* after full-batch gradient descent on the MSE loss ``(1/2N) sum_i (f(x_i) - y_i)^2`` for a fixed
  time ``t = eta * steps``, ``|Theta_m(t) - Theta_m(0)|_F / |Theta_m(0)|_F = O(m^-1/2)`` (Lee et
  al. 2019, Theorem G.1: the weights move ``O(m^-1/2)`` per entry, hence the kernel). This is an
  upper bound: for smooth activations the change is ``O(1/m)`` (Dyer and Gur-Ari 2020; measured
  here: slope about -0.8 for erf), for ReLU about ``m^-1/2`` (its activation pattern flips).

Measured: the mean over seeds of both relative errors at each width (nested widths,
``theory_checks.nets``), per activation and depth, and the least-squares log-log slope.

Tolerances (fixed before running; reasons): the convergence slope must lie in ``[-0.75, -0.3]``
and the training-change slope in ``[-1.2, -0.3]`` (theory ``-0.5`` for the first, at most
``-0.5`` and down to ``-1`` for the second, see above; seed noise of a slope over a 32x width
range with 8 seeds is about 0.05-0.1); the relative error at
the largest width must be below ``5 / sqrt(m_max)`` (measured constants ``sqrt(m) * error`` at
``m = 2048``: 1.1 erf depth 1, 1.7 erf depth 2, 2.1 ReLU depth 1, 3.4 ReLU depth 2; a kernel 10%
off gives about ``0.2``, far above ``5 / sqrt(2048) = 0.11``).

Fault (tests only): ``settings["fault"] = "wrong_kernel_scale"`` compares the empirical NTK with the
analytic NTK of ``W_std * 1.1``, a 10-20% wrong kernel: the error then stops decreasing and the
check must fail.
"""

from __future__ import annotations


import jax
import jax.numpy as jnp
import numpy as np

from ntkbo.kernels import empirical_ntk, mlp
from theory_checks import nets
from theory_checks.report import Report, within
from theory_checks.stats import loglog_slope

NAME = "ntk_convergence"
CLAIM = "empirical NTK -> analytic NTK at rate m^-1/2; NTK change during training ~ m^-1/2"
SOURCE = ("Jacot et al. 2018 Thm 1-2; Lee et al. 2019 Thm 2.1, App. G; seed-003 digest 2.6.3; "
          "seed-001 thesis 5.2(d)")
FAULTS = {"wrong_kernel_scale": "analytic NTK with W_std * 1.1"}
SLOPE_WINDOW = (-0.75, -0.3)
CHANGE_WINDOW = (-1.2, -0.3)
ERROR_CONSTANT = 5.0

_BASE = dict(configs=[["relu", 1], ["relu", 2], ["erf", 1], ["erf", 2]], d=3, n=6,
             W_std=1.5, b_std=0.1, train_steps=60, fault=None)
SCALES = {
    "smoke": dict(_BASE, configs=[["relu", 1], ["erf", 2]], widths=[64, 256, 1024], seeds=4,
                  train_steps=20),
    "cpu": dict(_BASE, widths=[64, 128, 256, 512, 1024, 2048], seeds=8),
    "gpu": dict(_BASE, widths=[256, 1024, 4096, 16384, 65536], seeds=32, train_steps=200),
}


def _sweep(key, activation, depth, s):
    d, n, widths = s["d"], s["n"], s["widths"]
    k_x, k_p = jax.random.split(key)
    x = jax.random.normal(k_x, (n, d), jnp.result_type(float))
    y = jnp.sin(2.0 * x.sum(1))
    big = nets.draw(k_p, depth, widths[-1], d, activation, s["W_std"], s["b_std"], s["seeds"])
    ws = s["W_std"] * (1.1 if s["fault"] == "wrong_kernel_scale" else 1.0)
    kernel_fn = mlp(depth, 1, activation, W_std=ws, b_std=s["b_std"])[2]
    theta = np.asarray(kernel_fn(x, None, "ntk"))
    theta_true = np.asarray(mlp(depth, 1, activation, W_std=s["W_std"],
                                b_std=s["b_std"])[2](x, None, "ntk"))
    # Learning rate of the linearised dynamics f' = -(1/N) Theta (f - y): stable below 2 N / e_max.
    lr = n / np.linalg.eigvalsh(theta_true)[-1]
    errors, changes = [], []
    for m in widths:
        apply_fn = mlp(depth, m, activation, W_std=s["W_std"], b_std=s["b_std"])[1]
        entk = empirical_ntk(apply_fn)
        loss = lambda p: 0.5 * jnp.mean((apply_fn(p, x)[:, 0] - y) ** 2)  # noqa: E731

        def one(p):
            t0 = entk(x, None, p)

            def step(q, _):
                g = jax.grad(loss)(q)
                return jax.tree_util.tree_map(lambda a, b: a - lr * b, q, g), None

            p_t, _ = jax.lax.scan(step, p, None, length=s["train_steps"])
            t1 = entk(x, None, p_t)
            return (jnp.linalg.norm(t0 - theta) / jnp.linalg.norm(theta),
                    jnp.linalg.norm(t1 - t0) / jnp.linalg.norm(t0))

        err, chg = jax.jit(lambda ps: jax.lax.map(one, ps))(nets.first_units(big, depth, m))
        errors.append(float(np.mean(err)))
        changes.append(float(np.mean(chg)))
    return np.asarray(errors), np.asarray(changes)


def run(key, settings) -> Report:
    """Runs the check with ``settings`` (one of ``SCALES``, possibly with ``"fault"``)."""
    s = dict(settings)
    rep = Report(NAME, CLAIM, SOURCE, s)
    widths = np.asarray(s["widths"], float)
    for i, (activation, depth) in enumerate(s["configs"]):
        errors, changes = _sweep(jax.random.fold_in(key, i), activation, depth, s)
        tag = f"{activation} depth {depth}"
        slope, se = loglog_slope(widths, errors)
        rep.add(f"slope of |Theta_m - Theta|/|Theta| vs m, {tag}", slope,
                f"in {list(SLOPE_WINDOW)}", within(slope, *SLOPE_WINDOW), "-1/2")
        bound = ERROR_CONSTANT / np.sqrt(widths[-1])
        rep.add(f"|Theta_m - Theta|/|Theta| at m={int(widths[-1])}, {tag}", errors[-1],
                f"<= 5/sqrt(m) = {bound:.3g}", errors[-1] <= bound, "O(m^-1/2)")
        cslope, _ = loglog_slope(widths, changes)
        rep.add(f"slope of NTK change in training vs m, {tag}", cslope,
                f"in {list(CHANGE_WINDOW)}", within(cslope, *CHANGE_WINDOW),
                "-1/2 (ReLU) to -1 (smooth)")
        rep.curve("relative error |Theta_m - Theta|/|Theta|", tag, widths, errors)
        rep.curve("relative NTK change during training", tag, widths, changes)
    rep.curve("relative error |Theta_m - Theta|/|Theta|", "m^-1/2 reference", widths,
              np.sqrt(widths[0] / widths) * rep.curves[0].y[0])
    return rep
