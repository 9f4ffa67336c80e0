r"""The outputs of randomly initialised ntkbo networks form a Gaussian process with the NNGP kernel
as the width grows.

Claim (Neal 1996; Lee et al. 2018, eq. (4) and section 2.3; Matthews et al. 2018, Theorem 4): for
the network ``ntkbo.kernels.mlp(depth, m, activation, ...)`` (NTK parameterisation) with parameters
drawn by its ``init_fn``, the outputs ``f = f(X; theta_0)``
at ``n`` inputs ``X`` converge in distribution, as ``m -> inf``, to ``N(0, K)`` with ``K =
kernel_fn(X, X, "nngp")`` (the library side, ``ntkbo.kernels``). For one hidden layer the
covariance is exact at every width: given the hidden pre-activations (exactly Gaussian), ``f`` is
Gaussian with covariance ``W^2/m sum_j phi(h_j) phi(h_j)^T + b^2``, whose mean is ``K``; only its
distribution is a scale mixture, non-Gaussian at finite width (excess kurtosis ``O(1/m)``). For
depth >= 2 the covariance has an ``O(1/m)`` bias too (Hanin and Nica 2020).

Measured, per activation and depth, over ``networks[depth - 1] = S`` networks at each width ``m``
(drawn inside a chunked map, ``theory_checks.memory``):

* the *mean projection* of the sample second moment on ``K``, ``c = mean_s c_s``, ``c_s = f_s^T K
  f_s / |K|_F^2`` (``E c_s = <Cov f, K>_F / |K|_F^2 = 1`` when ``Cov f = K``), with its standard
  error ``SE = sd(c_s) / sqrt(S)`` computed from the draws: at every width for depth 1 (exact),
  at the largest width for depth >= 2 (bias ``O(1/m)``: below a fifth of the SE at these sizes,
  measured at smoke scale ``c - 1 = 0.0006 +- 0.007`` at ``m = 256``). A kernel scaled by ``F``
  moves ``c`` to ``1/F``.
* the *excess kurtosis* of the standardised output at the first input, ``u_s = f_s(x_1) /
  sqrt(K_11)``: ``kappa = mean u^4 - 3`` with its standard error ``sd(u^4) / sqrt(S)`` from the
  draws, at the largest width zero within its SE: the convergence in distribution (a scale
  mixture has ``kappa > 0``: about ``15 / m`` for ReLU, depth 1; drawn as a curve against the
  width, not a row: at the smallest width the heavy tails make its SE as large as it, measured
  ``kappa = 4.6 +- 1.8`` at ``m = 4``), and a normalisation check (a kernel scaled by ``F`` moves
  ``mean u^4`` to ``3 / F^2``).

Tolerances (fixed in advance; reasons): mean projection ``|c - 1| / SE <= t_{S-1}(1 - 1e-3 /
(2 K))`` over the ``K`` projection rows (Student-t: ``(c - 1)/SE``; the rows together raise a
false alarm with probability at most 1e-3, Bonferroni); kurtosis at the largest width ``|kappa| /
SE <= z(1 - 1e-3 / (2 C))`` over the ``C`` configurations (normal: an average of ``S >= 1000``
draws).

Detects (``DETECTS``; ``python -m theory_checks.fault_matrix``): ``nngp_scale:F`` (the native NNGP
times ``F``, ``theory_checks.faults``), through the projection rows, ``z = (1/F - 1) / SE`` with
``SE = 0.02-0.03`` at smoke, ``0.008-0.01`` at cpu: smoke ``nngp_scale:1.2`` listed (measured
``z = -6.7``; 1.1: ``-6.6``, 1.05: ``-4.3`` against 3.59), cpu ``nngp_scale:1.1`` listed
(measured ``z = -9.7``; 1.05: ``-4.7``, 1.02: ``-3.9`` against 3.72, too close to list), gpu
``nngp_scale:1.03`` (``SE`` about 0.003 with 8 times the networks: not run); cpu measurements in
``results/fault_matrix_cpu_nngp.md``. The networks and their outputs are the reference and
are cached across faults (:func:`_outputs` calls only ``init_fn`` and ``apply_fn``, which no fault
patches); ``ntk_scale`` and ``drop_bias_ntk`` leave the NNGP unchanged and are not detected.
"""

from __future__ import annotations


import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats as sps

from ntkbo.kernels import mlp
from theory_checks import memo
from theory_checks import memory as memory_lib
from theory_checks import nets
from theory_checks.report import Report

NAME = "nngp_convergence"
CLAIM = "outputs of random ntkbo networks -> GP(0, NNGP kernel) as the width grows"
SOURCE = ("Neal 1996; Lee et al. 2018 eq. (4); Matthews et al. 2018 Thm 4; "
          "Hanin and Nica 2020 (O(1/m) bias, depth >= 2)")
DETECTS = {"smoke": ("nngp_scale:1.2",), "cpu": ("nngp_scale:1.1",),
           "gpu": ("nngp_scale:1.03",)}
ALPHA = 1e-3  # false-alarm probability of each family of rows

_BASE = dict(configs=[["relu", 1], ["erf", 2]], d=3, n=6, W_std=1.5, b_std=0.5)
# chunk: 1024 or 256 networks at a time on the CPU scales (the 64 GB budget's chunk would not fit
# a CPU's memory); the gpu scale derives it from the budget.
SCALES = {
    "smoke": dict(_BASE, widths=[8, 128], networks=[2048, 1024], chunk=1024),
    "cpu": dict(_BASE, widths=[8, 32, 128, 512], networks=[16384, 8192], chunk=256),
    # Sized to its share of one 8-minute GPU call (theory_checks.timing, docs/decisions.md
    # 2026-11-29); the former gpu sizes are estimated there at hours.
    "gpu": dict(_BASE, widths=[8, 64, 256, 1024], networks=[65536, 32768], chunk=None),
}


def memory(settings) -> list:
    """Peak-memory estimate of each chunked stage (``theory_checks.memory``), per configuration
    and width ``m``: one network keeps its parameters and the random bits their normal draw is
    made from ``2 P`` (measured: ``1.97 P`` per network at depth 2, width 64) and its activations
    on the ``n`` inputs (``4 n m depth``: pre-activations, activations and their copies). Fixed:
    the stacked outputs."""
    s, f = settings, memory_lib.itemsize()
    out = []
    for activation, depth in s["configs"]:
        num = s["networks"][depth - 1]
        for m in s["widths"]:
            p = memory_lib.mlp_params(depth, m, s["d"])
            out.append(memory_lib.stage(s, f"{activation} depth {depth} m={m} networks", num,
                                        f * (2 * p + 4 * s["n"] * m * depth),
                                        f * num * s["n"]))
    return out


def _inputs(key, s):
    """``n`` inputs ``N(0, I_d)``; the first is the kurtosis point."""
    return jax.random.normal(key, (s["n"], s["d"]), jnp.result_type(float))


@memo.reference(maxsize=16)
def _outputs(key, s: dict, activation: str, depth: int):
    """The reference side, cached per key and settings: ``(widths, S, n)`` outputs of ``S``
    networks per width, each drawn by the library's ``init_fn`` (``theory_checks.nets.init``)
    inside a chunked map and applied by its ``apply_fn``."""
    k_x, k_net = jax.random.split(key)
    x = _inputs(k_x, s)
    stages = memory(s)
    out = []
    for i, m in enumerate(s["widths"]):
        apply_fn = mlp(depth, m, activation, W_std=s["W_std"], b_std=s["b_std"])[1]

        def one(k, m=m, apply_fn=apply_fn):
            return apply_fn(nets.init(k, depth, m, s["d"], activation, s["W_std"], s["b_std"]),
                            x)[:, 0]

        label = f"{activation} depth {depth} m={m} networks"
        keys = jax.random.split(jax.random.fold_in(k_net, i), s["networks"][depth - 1])
        out.append(np.asarray(memory_lib.chunked_map(one, keys,
                                                     memory_lib.find(stages, label).chunk, label)))
    return np.stack(out)


def run(key, settings) -> Report:
    """Runs the check with ``settings`` (one of ``SCALES``; ``settings["fault"]`` records the
    library fault injected, if any)."""
    s = dict(settings)
    rep = Report(NAME, CLAIM, SOURCE, s)
    widths = np.asarray(s["widths"], float)
    proj_rows = sum(len(widths) if dep == 1 else 1 for _, dep in s["configs"])
    z_kurt = float(sps.norm.ppf(1 - ALPHA / (2 * len(s["configs"]))))
    notes = []
    for i, (activation, depth) in enumerate(s["configs"]):
        k_i = jax.random.fold_in(key, i)
        outs = _outputs(k_i, s, activation, depth)
        x = _inputs(jax.random.split(k_i)[0], s)
        # The library's NNGP kernel: the side a fault patches.
        kmat = np.asarray(mlp(depth, 1, activation, W_std=s["W_std"],
                              b_std=s["b_std"])[2](x, None, "nngp"))
        tag = f"{activation} depth {depth}"
        num = outs.shape[1]
        t_max = float(sps.t.ppf(1 - ALPHA / (2 * proj_rows), num - 1))
        cs, kurt = [], []
        for j, m in enumerate(s["widths"]):
            f = outs[j]
            c = np.einsum("si,ij,sj->s", f, kmat, f) / np.sum(kmat**2)
            se = c.std(ddof=1) / np.sqrt(num)
            z = (c.mean() - 1.0) / se
            cs.append(c.mean())
            if depth == 1 or j == len(widths) - 1:
                rep.add(f"{tag} m={m}: mean projection f^T K f/|K|^2: (c - 1)/SE, c = "
                        f"{c.mean():.4f}, SE = {se:.2g}, S = {num}", z,
                        f"|z| <= {t_max:.3g} (t_{num - 1}, {ALPHA:g} Bonferroni)",
                        abs(z) <= t_max, "t_{S-1}: E c = 1" + (" (exact)" if depth == 1 else ""))
                if j == len(widths) - 1:
                    notes.append(f"{tag}: |1 - 1/F| > {t_max * se:.3g} fails")
            u4 = (f[:, 0] / np.sqrt(kmat[0, 0])) ** 4
            k_hat, k_se = u4.mean() - 3.0, u4.std(ddof=1) / np.sqrt(num)
            kurt.append((k_hat, k_se))
        k1, se1 = kurt[-1]
        rep.add(f"{tag} m={s['widths'][-1]}: excess kurtosis of f(x_1)/sqrt(K_11) / SE, kappa = "
                f"{k1:.3g}, SE = {se1:.2g}", k1 / se1, f"|z| <= {z_kurt:.3g}",
                abs(k1 / se1) <= z_kurt, "0 (Gaussian limit)")
        rep.curve("mean projection c = <ff^T, K>/|K|^2", tag, widths, cs, log=False)
        rep.curve("excess kurtosis of f(x_1)/sqrt(K_11)", tag, widths,
                  [max(k, 1e-4) for k, _ in kurt])
    rep.notes = "; ".join(notes)
    return rep
