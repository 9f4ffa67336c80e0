"""Where ``gp``'s log marginal likelihood falls short of BoTorch's: the gap taken apart.

``python benchmarks/gp_fit_gap.py [options]``. Same data as ``benchmarks/gp_fit.py``
(its docstring: problems, standardised ``y``, unit-cube ``x``, ``n`` uniform points of key
``--key-offset + i``; default offset 0, the tuning keys) and the same quality measure: the exact
float64 log marginal likelihood per observation (``gp_fit.log_marginal_likelihood``, no priors).

Parameter sets, per case (one ``(d, n, problem, key)``):

* ``auto``: ``gp``'s default refit (``select_by_bic``, ``num_fit_steps=20``), float32, warm-started
  from the fit of the first ``n - 1`` points, as in ``gp_fit.py``.
* ``ard``: the ARD model alone (``fit.ard=True``: ``fit_hyperparameters`` with the prior-mode
  restart), float32, warm-started likewise. Variants: ``ard_long`` (200 steps, ``FIT_FTOL = 0``,
  ``FIT_GTOL = 1e-7``), ``ard_cold`` (the prior median and the prior mode, no warm start),
  ``ard64`` (float64, in a subprocess with X64 on).
* ``bt``: BoTorch's ``SingleTaskGP`` + ``fit_gpytorch_mll`` (``gp_fit.run_botorch``), mapped to
  the standardised units: signal ``a^2`` (``a`` its ``Standardize`` std), noise, constant mean.
* ``ref_*``: a float64 reference optimum found by SciPy's L-BFGS-B (analytic gradient, the floors
  as bounds: lengthscale >= 0.025, noise >= 1e-4, which ``gp``'s ``exp(.) + 1e-4`` reaches in the
  limit) from several starts (every fit above, the prior median and mode, ``--ref-random`` random
  points), of each objective of the ladder:

  - ``ref_ntk``: ``gp``'s own MAP objective, ARD (likelihood + its three priors, mean 0);
  - ``ref_mean``: the same plus a free constant mean (no prior on it);
  - ``ref_flat``: the same without the signal-variance prior (signal free);
  - ``ref_bt``: BoTorch's MAP objective (signal fixed at ``a^2``, mean free, the lengthscale
    prior and the noise prior at the noise in BoTorch's units, ``noise / a^2``);
  - ``ref_shared``: ``gp``'s MAP objective with one shared lengthscale.

Tables (per ``(d, n)`` row, mean over the cases, nats per observation of the exact likelihood):
the ladder ``auto -> ard -> ref_ntk -> ref_mean -> ref_flat -> ref_bt -> bt``, whose steps add up
to ``bt - auto`` exactly in every case; the optimiser checks (``gp``'s MAP objective per
observation at ``ard``, at ``ref_ntk`` and at BoTorch's parameters with mean 0; the float32
variants); the constant mean (BoTorch's parameters with mean 0; ``auto``'s with its best mean).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys

import numpy as np
from scipy import linalg as sla
from scipy import optimize as sopt

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
for _p in (_HERE, _ROOT):
    if _p not in sys.path:
        sys.path.insert(0, _p)
import gp_fit  # noqa: E402

LOG_MIN_ELL = math.log(0.025)
MIN_NOISE = 1e-4
SQRT3 = math.sqrt(3.0)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", default="5,10")
    p.add_argument("--n", default="10,30,50,100")
    p.add_argument("--problems", type=int, default=2, help="problems per d (at most 4)")
    p.add_argument("--keys", type=int, default=2, help="keys --key-offset + i per problem")
    p.add_argument("--key-offset", type=int, default=0, help="0: tuning keys (gp_fit: 100000)")
    p.add_argument("--reps", type=int, default=3,
                   help="timed calls of auto, ard and their _mean fits (median; 0: none)")
    p.add_argument("--ref-random", type=int, default=4, help="random starts of the reference")
    p.add_argument("--botorch-python", default="/tmp/btenv/bin/python")
    p.add_argument("--json", default=None, metavar="PATH", help="write the per-case numbers")
    p.add_argument("--x64-worker", nargs=2, default=None, help=argparse.SUPPRESS)
    p.add_argument("--from-json", default=None, metavar="PATH",
                   help="print the tables of --json files (comma-separated), computing nothing")
    return p


# --------------------------------------------------------------------------------------------
# float64 objectives with analytic gradients (SciPy reference optimiser)


class Spec:
    """One objective: ``shared`` lengthscale; ``signal``: ``"prior"`` (free, LogNormal(0, 1)),
    ``"flat"`` (free, no prior) or a fixed value; ``mean`` free or 0; the noise prior evaluated
    at ``noise / noise_unit`` (BoTorch's units: ``a^2``)."""

    def __init__(self, shared=False, signal="prior", mean=False, noise_unit=1.0):
        self.shared, self.signal, self.mean, self.noise_unit = shared, signal, mean, noise_unit

    def pack(self, ell, signal, noise, mean, d):
        t = [np.log(np.mean(ell))] if self.shared else list(np.log(ell))
        if isinstance(self.signal, str):
            t.append(math.log(signal))
        t.append(math.log(noise))
        if self.mean:
            t.append(mean)
        return np.asarray(t, float)

    def unpack(self, t, d):
        k = 1 if self.shared else d
        ell = np.broadcast_to(np.exp(t[:k]), (d,))
        i = k
        if isinstance(self.signal, str):
            signal = math.exp(t[i])
            i += 1
        else:
            signal = float(self.signal)
        noise = math.exp(t[i])
        mean = t[i + 1] if self.mean else 0.0
        return ell, signal, noise, mean

    def bounds(self, d):
        b = [(LOG_MIN_ELL, math.log(1e3))] * (1 if self.shared else d)
        if isinstance(self.signal, str):
            b.append((-12.0, 12.0))
        b.append((math.log(MIN_NOISE), math.log(10.0)))
        if self.mean:
            b.append((-10.0, 10.0))
        return b


def _lognormal(u, loc, scale):
    """Log density (in the value ``exp(u)``) of LogNormal(loc, scale) and its derivative in u."""
    z = (u - loc) / scale
    return (np.sum(-0.5 * z * z - u - math.log(scale) - 0.5 * math.log(2 * math.pi)),
            -z / scale - 1.0)


def objective(t, spec: Spec, d2, y):
    """``-(lml + log prior)`` and its gradient in ``t`` (``spec``'s unconstrained layout)."""
    d, n = d2.shape[0], len(y)
    ell, signal, noise, mean = spec.unpack(t, d)
    r2 = np.tensordot(1.0 / ell**2, d2, axes=1)
    kf = signal * np.exp(-0.5 * r2)
    try:
        c = sla.cho_factor(kf + noise * np.eye(n), lower=True)
    except np.linalg.LinAlgError:
        return 1e10, np.zeros_like(t)
    r = y - mean
    alpha = sla.cho_solve(c, r)
    kinv = sla.cho_solve(c, np.eye(n))
    lml = -0.5 * r @ alpha - np.log(np.diag(c[0])).sum() - 0.5 * n * math.log(2 * math.pi)
    w = 0.5 * (np.outer(alpha, alpha) - kinv)
    wk = w * kf
    g_ell = np.einsum("ij,kij->k", wk, d2) / ell**2  # d lml / d log ell_k
    loc = math.sqrt(2.0) + 0.5 * math.log(d)
    # gp's shared model has one lengthscale, so one prior term (``stationary_model``)
    lp_ell, dlp_ell = _lognormal(np.log(ell[:1] if spec.shared else ell), loc, SQRT3)
    grads = [np.array([g_ell.sum()]) + dlp_ell] if spec.shared else [g_ell + dlp_ell]
    value = lml + lp_ell
    if isinstance(spec.signal, str):
        g = np.sum(wk)
        if spec.signal == "prior":
            lp, dlp = _lognormal(math.log(signal), 0.0, 1.0)
            value, g = value + lp, g + dlp
        grads.append(np.array([g]))
    lp, dlp = _lognormal(math.log(noise / spec.noise_unit), -4.0, 1.0)
    value += lp
    grads.append(np.array([noise * np.trace(w) + dlp]))
    if spec.mean:
        grads.append(np.array([alpha.sum()]))
    return -value, -np.concatenate(grads)


def map_value(spec: Spec, x, y, ell, signal, noise, mean):
    """``spec``'s log posterior (likelihood + priors) at the values, per observation; the
    signal prior only where ``spec`` has it, the mean only where ``spec`` fits one."""
    d = x.shape[1]
    v = gp_fit.log_marginal_likelihood(x, y, ell, signal, noise, mean if spec.mean else 0.0)
    ell = np.asarray(ell, float)[:1] if spec.shared else np.asarray(ell, float)
    v += _lognormal(np.log(ell), math.sqrt(2.0) + 0.5 * math.log(d), SQRT3)[0]
    if spec.signal == "prior":
        v += _lognormal(math.log(signal), 0.0, 1.0)[0]
    v += _lognormal(math.log(noise / spec.noise_unit), -4.0, 1.0)[0]
    return v / len(y)


def reference(spec: Spec, x, y, starts, rng, n_random):
    """Best L-BFGS-B optimum of ``spec`` over ``starts`` (value tuples) and random starts."""
    d = x.shape[1]
    d2 = (x[:, None, :] - x[None, :, :]).transpose(2, 0, 1) ** 2
    bnds = spec.bounds(d)
    lo, hi = np.array([b[0] for b in bnds]), np.array([b[1] for b in bnds])
    ts = [np.clip(spec.pack(*s, d), lo, hi) for s in starts]
    for _ in range(n_random):
        ts.append(np.clip(np.concatenate([
            rng.uniform(math.log(0.05), math.log(5.0), 1 if spec.shared else d),
            rng.uniform(-2, 1, 1) if isinstance(spec.signal, str) else [],
            rng.uniform(math.log(1e-4), math.log(0.5), 1),
            rng.uniform(-1, 1, 1) if spec.mean else []]), lo, hi))
    best = None
    for t0 in ts:
        res = sopt.minimize(objective, t0, args=(spec, d2, y), jac=True, method="L-BFGS-B",
                            bounds=bnds, options=dict(maxiter=2000, ftol=1e-13, gtol=1e-9))
        if best is None or res.fun < best.fun:
            best = res
    return spec.unpack(best.x, d)


# --------------------------------------------------------------------------------------------
# ntkbo's fits


def gls_mean(x, y, ell, signal, noise) -> float:
    """The constant mean that maximises the likelihood at the values (float64)."""
    r2 = (((x[:, None, :] - x[None, :, :]) / np.asarray(ell, float)) ** 2).sum(-1)
    k = signal * np.exp(-0.5 * r2) + noise * np.eye(len(y))
    c = sla.cho_factor(k, lower=True)
    ones = np.ones(len(y))
    return float(ones @ sla.cho_solve(c, y) / (ones @ sla.cho_solve(c, ones)))


def _fitters():
    import jax
    import jax.numpy as jnp
    from ntkbo.algorithms import gp_bo

    ard = gp_bo.stationary_model("rbf")
    auto = gp_bo.select_by_bic(gp_bo.stationary_model("rbf", shared=True))
    # gp's fit.mean="constant": the mean profiled out of the objective and of BIC
    ard_c = ard._replace(mean="constant")
    auto_c = gp_bo.select_by_bic(gp_bo.stationary_model("rbf", shared=True)._replace(
        mean="constant"))
    fh = gp_bo.fit_hyperparameters

    def long_fit(m, p, data):
        old = gp_bo.FIT_FTOL, gp_bo.FIT_GTOL
        gp_bo.FIT_FTOL, gp_bo.FIT_GTOL = 0.0, 1e-7  # read when tracing
        try:
            return fh(m, p, data, num_steps=200, restarts=True)
        finally:
            gp_bo.FIT_FTOL, gp_bo.FIT_GTOL = old

    def cold(m, p, data):
        starts = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a[None], b]),
                                        m.init_params(data.dim, data.y.dtype),
                                        m.restarts(data.dim, data.y.dtype))
        return gp_bo._lbfgs_from(m, p, starts, data, 20, None)

    auto_fit = lambda p, data: auto(ard, p, data, num_steps=20, restarts=True)  # noqa: E731
    ard_fit = lambda p, data: fh(ard, p, data, num_steps=20, restarts=True)  # noqa: E731
    return ard, {
        "auto": jax.jit(auto_fit),
        "ard": jax.jit(ard_fit),
        "auto_mean": jax.jit(lambda p, data: auto_c(ard_c, p, data, num_steps=20,
                                                    restarts=True)),
        "ard_mean": jax.jit(lambda p, data: fh(ard_c, p, data, num_steps=20, restarts=True)),
        "ard_long": jax.jit(lambda p, data: long_fit(ard, p, data)),
        "ard_cold": jax.jit(lambda p, data: cold(ard, p, data)),
    }


def measure(args) -> list[dict]:
    import jax
    import jax.numpy as jnp
    from ntkbo import data as D
    from ntkbo.algorithms.observations import standardized_data

    model, fits = _fitters()
    cases = []
    for d in [int(v) for v in args.dims.split(",")]:
        for prob in gp_fit._problems(d, args.problems):
            b = jnp.asarray(prob.bounds, jnp.float32)
            for i in range(args.keys):
                key = args.key_offset + i
                n_max = max(map(int, args.n.split(",")))
                u = jax.random.uniform(jax.random.PRNGKey(key), (n_max, d), jnp.float32)
                x_all = b[0] + (b[1] - b[0]) * u
                y_all = jax.vmap(prob.fn)(x_all).astype(jnp.float32)
                for n in [int(v) for v in args.n.split(",")]:
                    def data_at(m, dt=jnp.float32):
                        buf = D.append(D.empty(D.next_capacity(m, 16), d, jnp.float32),
                                       x_all[:m], y_all[:m])
                        s = standardized_data(buf, b)[0]
                        return D.Data(s.x.astype(dt), s.y.astype(dt), s.count)
                    prev, cur = data_at(n - 1), data_at(n)
                    c = {"d": d, "n": n, "problem": prob.name, "key": key,
                         "x": np.asarray(cur.x[:n], float), "y": np.asarray(cur.y[:n], float)}
                    sets = {}
                    c["ms"] = {}
                    for name, fit in fits.items():
                        warm = fit(model.init_params(d, jnp.float32), prev)[0]
                        p = fit(warm, cur)[0]
                        assert p["log_ell"].dtype == jnp.float32, name
                        v = gp_fit.ntkbo_values(p, d)
                        mean = gls_mean(c["x"], c["y"], *v) if name.endswith("_mean") else 0.0
                        sets[name] = v + (mean,)
                        if args.reps and name in ("auto", "ard", "auto_mean", "ard_mean"):
                            c["ms"][name] = gp_fit._time(fit, args.reps, warm, cur)
                    c["x_prev"] = np.asarray(prev.x[:n - 1], float)
                    c["y_prev"] = np.asarray(prev.y[:n - 1], float)
                    c["sets"] = {k: [np.asarray(v[0], float).tolist(), *map(float, v[1:])]
                                 for k, v in sets.items()}
                    print(f"[gap] d={d} n={n} {prob.name} key={key}", file=sys.stderr, flush=True)
                    cases.append(c)
    return cases


def x64_worker(path_in: str, path_out: str) -> None:
    """``ard64``: the ARD fit in float64 (this process has X64 on), warm-started likewise."""
    import jax
    import jax.numpy as jnp
    from ntkbo import data as D

    assert jax.config.jax_enable_x64
    model, fits = _fitters()
    fit = fits["ard"]
    out = []
    with open(path_in) as f:
        cases = json.load(f)
    for c in cases:
        d = c["d"]

        def buf(x, y):
            x, y = jnp.asarray(x, jnp.float64), jnp.asarray(y, jnp.float64)
            return D.append(D.empty(D.next_capacity(len(y), 16), d, jnp.float64), x, y)
        warm = fit(model.init_params(d, jnp.float64), buf(c["x_prev"], c["y_prev"]))[0]
        p = fit(warm, buf(c["x"], c["y"]))[0]
        assert p["log_ell"].dtype == jnp.float64
        v = gp_fit.ntkbo_values(p, d)
        out.append([np.asarray(v[0], float).tolist(), float(v[1]), float(v[2]), 0.0])
    with open(path_out, "w") as f:
        json.dump(out, f)


def add_x64(cases) -> None:
    """``ard64`` of every case, from a subprocess with X64 on (the float32 fits need it off)."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        pin, pout = os.path.join(tmp, "in.json"), os.path.join(tmp, "out.json")
        with open(pin, "w") as f:
            json.dump([{k: c[k].tolist() if isinstance(c[k], np.ndarray) else c[k]
                        for k in ("d", "x", "y", "x_prev", "y_prev")} for c in cases], f)
        subprocess.run([sys.executable, os.path.abspath(__file__), "--x64-worker", pin, pout],
                       env=dict(os.environ, JAX_ENABLE_X64="1"), check=True)
        with open(pout) as f:
            for c, v in zip(cases, json.load(f)):
                c["sets"]["ard64"] = v


def add_botorch_and_reference(cases, args):
    bt = gp_fit.run_botorch(args.botorch_python, cases, 1)
    if "error" in bt:
        raise SystemExit(bt["error"])
    for c, b in zip(cases, bt["cases"]):
        a = b["y_std"]
        c["a2"] = a * a
        c["sets"]["bt"] = [list(b["ell"]), a * a, a * a * b["noise"], b["y_mean"] + a * b["mean"]]
    for ci, c in enumerate(cases):
        x, y, d = c["x"], c["y"], c["d"]
        loc = math.sqrt(2.0) + 0.5 * math.log(d)
        prior_starts = [(np.full(d, math.exp(loc)), 1.0, math.exp(-4.0), 0.0),
                        (np.full(d, math.exp(loc - 3.0)), math.exp(-1.0), math.exp(-5.0), 0.0)]
        fitted = [(np.asarray(v[0]), v[1], max(v[2], MIN_NOISE), v[3])
                  for v in c["sets"].values()]
        ladder = {"ref_ntk": Spec(), "ref_mean": Spec(mean=True),
                  "ref_flat": Spec(signal="flat", mean=True),
                  "ref_bt": Spec(signal=c["a2"], mean=True, noise_unit=c["a2"]),
                  "ref_shared": Spec(shared=True)}
        found = {}
        for name, spec in ladder.items():
            rng = np.random.default_rng(ci)
            starts = fitted + prior_starts + [tuple(v) for v in found.values()]
            found[name] = reference(spec, x, y, starts, rng, args.ref_random)
        for k, v in found.items():
            c["sets"][k] = [np.asarray(v[0], float).tolist(), *map(float, v[1:])]
        print(f"[gap] reference {ci + 1}/{len(cases)}", file=sys.stderr, flush=True)
    for c in cases:
        x, y, n = c["x"], c["y"], c["n"]
        ntk, btm = Spec(), Spec(signal=c["a2"], mean=True, noise_unit=c["a2"])
        c["lml"], c["map_ntk"], c["map_bt"] = {}, {}, {}
        for k, (ell, s, lam, m) in c["sets"].items():
            c["lml"][k] = gp_fit.log_marginal_likelihood(x, y, ell, s, lam, m) / n
            c["map_ntk"][k] = map_value(ntk, x, y, ell, s, lam, 0.0)  # gp's objective: mean 0
            c["map_bt"][k] = map_value(btm, x, y, ell, s, lam, m)
        # gp's shared-lengthscale objective at auto's fit (when shared) and its reference
        c["map_shared"] = {k: map_value(Spec(shared=True), x, y, *c["sets"][k])
                           for k in ("auto", "ref_shared")}
        # the constant mean: BoTorch's parameters with mean 0, auto's with its best mean
        ell, s, lam, m = c["sets"]["bt"]
        c["lml"]["bt_mean0"] = gp_fit.log_marginal_likelihood(x, y, ell, s, lam, 0.0) / n
        ell, s, lam, _ = c["sets"]["auto"]
        r2 = (((x[:, None, :] - x[None, :, :]) / np.asarray(ell)) ** 2).sum(-1)
        k = s * np.exp(-0.5 * r2) + lam * np.eye(n)
        ones = np.ones(n)
        mbest = float(ones @ np.linalg.solve(k, y) / (ones @ np.linalg.solve(k, ones)))
        c["lml"]["auto_bestmean"] = gp_fit.log_marginal_likelihood(x, y, ell, s, lam, mbest) / n
        c["shared_auto"] = bool(np.ptp(np.log(c["sets"]["auto"][0])) < 1e-6)
        c["shared_ref"] = bool(c["lml"]["ref_shared"] * n - 0.5 * 1 * math.log(n)
                               >= c["lml"]["ref_ntk"] * n - 0.5 * d * math.log(n))
    return cases


# --------------------------------------------------------------------------------------------
# tables


def _rows(cases):
    return [(d, n, [c for c in cases if (c["d"], c["n"]) == (d, n)])
            for d, n in sorted({(c["d"], c["n"]) for c in cases})]


def tables(cases) -> list[str]:
    mean = statistics.fmean
    out = ["Ladder (mean over the cases of the exact lml/n differences; steps add up to bt - auto):",
           ""]
    steps = [("auto", "ard", "BIC choice: ard - auto"),
             ("ard", "ref_ntk", "optimiser: ref_ntk - ard"),
             ("ref_ntk", "ref_mean", "constant mean: ref_mean - ref_ntk"),
             ("ref_mean", "ref_flat", "signal prior: ref_flat - ref_mean"),
             ("ref_flat", "ref_bt", "BoTorch's priors/signal: ref_bt - ref_flat"),
             ("ref_bt", "bt", "BoTorch's optimiser: bt - ref_bt")]
    head = ["d", "n", "cases", "shared (auto)", "lml/n auto", "lml/n bt", "bt - auto"] + \
        [s[2] for s in steps]
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for d, n, g in _rows(cases):
        row = [str(d), str(n), str(len(g)), f"{sum(c['shared_auto'] for c in g)}/{len(g)}",
               f"{mean([c['lml']['auto'] for c in g]):.4f}",
               f"{mean([c['lml']['bt'] for c in g]):.4f}",
               f"{mean([c['lml']['bt'] - c['lml']['auto'] for c in g]):+.4f}"]
        row += [f"{mean([c['lml'][b] - c['lml'][a] for c in g]):+.4f}" for a, b, _ in steps]
        out.append("| " + " | ".join(row) + " |")

    out += ["", "Optimiser: gp's MAP objective per observation (mean 0), differences "
            "(mean; min over the cases in brackets); positive: the first is better:", ""]
    x64 = all("ard64" in c["sets"] for c in cases)
    cols = [("ard", "bt", "ard - BoTorch's params"),
            ("auto", "bt", "auto - BoTorch's params"),
            ("ref_ntk", "ard", "ref_ntk - ard"),
            ("ard_long", "ard", "ard_long - ard"),
            ("ard_cold", "ard", "ard_cold - ard")] + \
        ([("ard64", "ard", "ard64 - ard")] if x64 else [])
    head = ["d", "n"] + [cl[2] for cl in cols] + ["lml/n: ard_long - ard"] + \
        (["lml/n: ard64 - ard"] if x64 else []) + ["BoTorch's MAP/n: bt - ard", "bt - auto"]
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for d, n, g in _rows(cases):
        row = [str(d), str(n)]
        for a, b, _ in cols:
            v = [c["map_ntk"][a] - c["map_ntk"][b] for c in g]
            row.append(f"{mean(v):+.4f} ({min(v):+.4f})")
        row.append(f"{mean([c['lml']['ard_long'] - c['lml']['ard'] for c in g]):+.4f}")
        if x64:
            row.append(f"{mean([c['lml']['ard64'] - c['lml']['ard'] for c in g]):+.4f}")
        for k in ("ard", "auto"):
            v = [c["map_bt"]["bt"] - c["map_bt"][k] for c in g]
            row.append(f"{mean(v):+.4f} ({min(v):+.4f})")
        out.append("| " + " | ".join(row) + " |")

    out += ["", "Constant mean and the BIC choice (mean lml/n differences):", ""]
    head = ["d", "n", "bt - bt with mean 0", "auto with best mean - auto",
            "ref_ntk - ref_shared", "BIC keeps shared at ref (cases)",
            "BoTorch MAP/n: bt - ref_bt", "shared MAP/n: ref_shared - auto (auto shared)"]
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for d, n, g in _rows(cases):
        row = [str(d), str(n),
               f"{mean([c['lml']['bt'] - c['lml']['bt_mean0'] for c in g]):+.4f}",
               f"{mean([c['lml']['auto_bestmean'] - c['lml']['auto'] for c in g]):+.4f}",
               f"{mean([c['lml']['ref_ntk'] - c['lml']['ref_shared'] for c in g]):+.4f}",
               f"{sum(c['shared_ref'] for c in g)}/{len(g)}",
               f"{mean([c['map_bt']['bt'] - c['map_bt']['ref_bt'] for c in g]):+.4f}"]
        sh = [c["map_shared"]["ref_shared"] - c["map_shared"]["auto"] for c in g
              if c["shared_auto"]]
        row.append(f"{mean(sh):+.4f} (max {max(sh):+.4f})" if sh else "-")
        out.append("| " + " | ".join(row) + " |")

    if all("auto_mean" in c["sets"] for c in cases):
        out += ["", "gp's fit.mean='constant': the mean profiled out of its objective (``_mean``), "
                "exact lml/n (mean) and fit time (median ms):", ""]
        head = ["d", "n", "lml/n auto_mean - auto", "lml/n ard_mean - ard", "bt - auto_mean",
                "bt - ard_mean", "shared (auto_mean)", "ms auto", "ms auto_mean", "ms ard",
                "ms ard_mean"]
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for d, n, g in _rows(cases):
            lm = lambda a, b: mean([c["lml"][a] - c["lml"][b] for c in g])  # noqa: E731
            row = [str(d), str(n), f"{lm('auto_mean', 'auto'):+.4f}",
                   f"{lm('ard_mean', 'ard'):+.4f}", f"{lm('bt', 'auto_mean'):+.4f}",
                   f"{lm('bt', 'ard_mean'):+.4f}",
                   f"{sum(np.ptp(np.log(c['sets']['auto_mean'][0])) < 1e-6 for c in g)}/{len(g)}"]
            for k in ("auto", "auto_mean", "ard", "ard_mean"):
                ms = [c["ms"][k] for c in g if k in c.get("ms", {})]
                row.append(f"{statistics.median(ms):.1f}" if ms else "-")
            out.append("| " + " | ".join(row) + " |")

    out += ["", "At the floors (cases with the noise <= 1.05e-4 / some lengthscale <= 0.0251):", ""]
    names = ["auto", "ard", "ref_ntk", "bt"]
    head = ["d", "n"] + names
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for d, n, g in _rows(cases):
        row = [str(d), str(n)]
        for k in names:
            nz = sum(c["sets"][k][2] <= 1.05e-4 for c in g)
            el = sum(min(c["sets"][k][0]) <= 0.0251 for c in g)
            row.append(f"{nz} / {el}")
        out.append("| " + " | ".join(row) + " |")
    return out


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.x64_worker:
        x64_worker(*args.x64_worker)
        return 0
    if args.from_json:
        cases = []
        for path in args.from_json.split(","):
            with open(path) as f:
                cases += json.load(f)
    else:
        from ntkbo.lapack_threads import configure_blas_threads
        configure_blas_threads()
        cases = measure(args)
        add_x64(cases)
        cases = add_botorch_and_reference(cases, args)
        if args.json:
            with open(args.json, "w") as f:
                json.dump([{k: (v.tolist() if isinstance(v, np.ndarray) else v)
                            for k, v in c.items()} for c in cases], f)
    print("\n".join(tables(cases)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
