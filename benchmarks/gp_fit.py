"""``gp``'s hyper-parameter refit beside BoTorch's ``fit_gpytorch_mll`` on the same data.

``python benchmarks/speed.py gp-fit [options]`` (or this file directly). For each dimension ``d``
(``--dims``), each ``n`` (``--n``), each problem (d = 10: the dev suite's ``ackley10``, ``levy10``,
``rastrigin10``, ``michalewicz10``; other d: the registry's ``ackley``, ``levy``, ``rastrigin``,
``styblinski_tang`` in that d; the first ``--problems``) and each reporting key ``100000 + i``
(``--keys``; ``--key-offset 0``: the tuning keys ``i``): ``n`` uniform points of the box and
their values, in the unit cube and standardised as ``gp`` sees them
(``observations.standardized_data``, capacity ``next_capacity(n)`` as in ``ntkbo.ask_tell``).

* ntkbo: ``gp()``'s default fit (``select_by_bic``: ARD from the warm start, the shared
  lengthscale from ARD's mean and the prior modes, ARD from the prior modes too unless its warm
  fit settled the choice; ``num_fit_steps=20``), jitted once per capacity, warm-started from the
  fit of the first ``n - 1`` points (what ``tell`` does in an ask/tell loop); median of
  ``--reps`` calls. ``--baseline REV`` also times the fit of ``ntkbo/algorithms/gp_bo.py`` at git
  revision ``REV`` (read with ``git show``) on the same data; only that file is the old one, the
  rest of ntkbo (``ntkbo.gp``'s likelihood and its gradient included) is the working tree's.
  ``--ard true``: ``gp(fit=dict(ard=True))``'s fit instead (the ARD model alone, warm start and
  prior-mode restart), on both sides. ``--mean constant``: with ``fit.mean="constant"`` (the
  constant mean profiled out of the objective and of BIC, ``ntkbo.gp.gls_mean``), on both sides
  (a ``--baseline`` revision must have it).
* BoTorch (``--botorch-python``, a venv with botorch; run in a subprocess with one thread, as
  ``benchmarks/botorch_reference.py``): ``SingleTaskGP(X, Y)`` (its defaults) and
  ``fit_gpytorch_mll(ExactMarginalLogLikelihood)`` on the same ``X`` and standardised ``Y`` in
  float64, a fresh model per call, median of ``--reps`` calls. Absent: the table says so and
  keeps the ntkbo columns.

Quality, like with like: the exact log marginal likelihood ``log p(y | X, theta)`` (Rasmussen and
Williams 2006, eq. 2.30; no priors, no jitter) of the standardised ``y`` under each side's fitted
GP, in float64 numpy, per observation. ntkbo's GP: signal, ARD lengthscales, noise + 1e-4, mean 0
(``--mean constant``: its fitted mean, ``ntkbo.gp.gls_mean`` of the fitted factor);
BoTorch's: no outputscale, its lengthscales, noise and fitted constant mean, mapped through its
``Standardize`` transform to the same units. Prediction, which does not favour the larger
model: the mean ``log N(yt; mu, s2 + noise)`` (R&W eqs. 2.23-2.24) of ``TEST_POINTS`` held-out
uniform points of the box (key ``fold_in(key, 1)``, standardised with the training data's mean
and deviation) under each side's fit. ``lp`` columns: ntkbo's MAP objective (log
likelihood plus ``gp``'s log priors) per observation, new fit against ``--baseline``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEY_OFFSET = 100_000
DEV10 = ("ackley10", "levy10", "rastrigin10", "michalewicz10")
FAMILIES = ("ackley", "levy", "rastrigin", "styblinski_tang")
TEST_POINTS = 200  # held-out points per case for the predictive density


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="speed.py gp-fit", description=__doc__.splitlines()[0])
    p.add_argument("--dims", default="5,10")
    p.add_argument("--n", default="10,30,50,100")
    p.add_argument("--problems", type=int, default=2, help="problems per d (at most 4)")
    p.add_argument("--keys", type=int, default=2, help="keys --key-offset + i per problem")
    p.add_argument("--key-offset", type=int, default=KEY_OFFSET,
                   help="keys --key-offset + i (default 100000, reporting; 0: the tuning keys)")
    p.add_argument("--reps", type=int, default=5, help="timed calls per case (median)")
    p.add_argument("--baseline", default=None, metavar="REV",
                   help="also time gp_bo.py's fit at this git revision")
    p.add_argument("--ard", choices=("auto", "true"), default="auto",
                   help="ntkbo's fit: the default (auto, BIC) or fit.ard=True (the ARD model alone)")
    p.add_argument("--mean", choices=("zero", "constant"), default="zero",
                   help="ntkbo's prior mean: zero (the default) or fit.mean='constant'")
    p.add_argument("--botorch-python", default="/tmp/btenv/bin/python")
    p.add_argument("--json", default=None, metavar="PATH")
    p.add_argument("--botorch-worker", nargs=2, default=None, help=argparse.SUPPRESS)
    return p


# --------------------------------------------------------------------------------------------
# float64 numpy log marginal likelihood and gp's log priors (independent of ntkbo's code)


def log_marginal_likelihood(x, y, ell, signal, noise, mean=0.0) -> float:
    """``log N(y; mean, signal * exp(-r^2 / 2) + noise I)``, R&W eq. 2.30, float64."""
    x, y = np.asarray(x, float), np.asarray(y, float) - mean
    r2 = (((x[:, None, :] - x[None, :, :]) / np.asarray(ell, float)) ** 2).sum(-1)
    chol = np.linalg.cholesky(signal * np.exp(-0.5 * r2) + noise * np.eye(len(y)))
    a = np.linalg.solve(chol, y)
    return float(-0.5 * a @ a - np.log(np.diag(chol)).sum() - 0.5 * len(y) * math.log(2 * math.pi))


def log_predictive_density(x, y, xt, yt, ell, signal, noise, mean=0.0) -> float:
    """Mean over the held-out ``(xt, yt)`` of ``log N(yt; mu(xt), s2(xt) + noise)``: the exact
    GP posterior of the same kernel given ``(x, y)`` (R&W eqs. 2.23-2.24), float64."""
    x, xt = np.asarray(x, float), np.asarray(xt, float)
    y, yt = np.asarray(y, float) - mean, np.asarray(yt, float) - mean
    ell = np.asarray(ell, float)

    def k(a, b):
        return signal * np.exp(-0.5 * (((a[:, None, :] - b[None, :, :]) / ell) ** 2).sum(-1))

    chol = np.linalg.cholesky(k(x, x) + noise * np.eye(len(y)))
    v = np.linalg.solve(chol, k(x, xt))
    mu = v.T @ np.linalg.solve(chol, y)
    var = np.maximum(signal - (v * v).sum(0), 0.0) + noise
    return float(np.mean(-0.5 * (yt - mu) ** 2 / var - 0.5 * np.log(2 * math.pi * var)))


def gp_log_prior(ell, signal, noise, d) -> float:
    """``gp``'s priors (``gp_bo`` module docstring) at the values, float64."""
    def lognormal(v, loc, scale):
        lv = np.log(np.atleast_1d(np.asarray(v, float)))
        return float(np.sum(-0.5 * ((lv - loc) / scale) ** 2 - lv - math.log(scale)
                            - 0.5 * math.log(2 * math.pi)))
    return (lognormal(ell, math.sqrt(2) + 0.5 * math.log(d), math.sqrt(3))
            + lognormal(signal, 0.0, 1.0) + lognormal(noise, -4.0, 1.0))


def ntkbo_values(params, d):
    """``(ell (d,), signal, noise)`` of ``gp``'s unconstrained parameters (floors included)."""
    ell = np.exp(np.maximum(np.asarray(params["log_ell"], float), math.log(0.025)))
    return (np.broadcast_to(ell, (d,)), math.exp(float(params["log_signal"])),
            math.exp(float(params["log_noise"])) + 1e-4)


# --------------------------------------------------------------------------------------------
# BoTorch side (its venv only)


def botorch_worker(path_in: str, path_out: str) -> None:
    import torch
    import botorch
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from gpytorch.mlls import ExactMarginalLogLikelihood

    torch.set_num_threads(1)
    cases = np.load(path_in)
    reps = int(cases["reps"])
    out = {"versions": {"botorch": botorch.__version__, "torch": torch.__version__}, "cases": []}
    for i in range(int(cases["count"])):
        x = torch.tensor(cases[f"x{i}"], dtype=torch.float64)
        y = torch.tensor(cases[f"y{i}"], dtype=torch.float64).unsqueeze(-1)
        times = []
        for r in range(reps + 1):  # the first call warms up
            torch.manual_seed(r)
            t0 = time.perf_counter()
            model = SingleTaskGP(x, y)
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
            if r:
                times.append(time.perf_counter() - t0)
        tf = model.outcome_transform
        out["cases"].append({
            "ms": 1e3 * statistics.median(times),
            "ell": model.covar_module.lengthscale.detach().reshape(-1).tolist(),
            "noise": float(model.likelihood.noise.detach().reshape(-1)[0]),
            "mean": float(model.mean_module.constant.detach().reshape(-1)[0]),
            "y_mean": float(tf.means.reshape(-1)[0]), "y_std": float(tf.stdvs.reshape(-1)[0])})
    with open(path_out, "w") as f:
        json.dump(out, f)


def run_botorch(python: str, cases: list[dict], reps: int) -> dict:
    """BoTorch's fits of ``cases`` in a subprocess; ``{"error": why}`` when it cannot run."""
    if not os.path.exists(python):
        return {"error": f"BoTorch not found ({python} does not exist)"}
    with tempfile.TemporaryDirectory() as tmp:
        path_in, path_out = os.path.join(tmp, "cases.npz"), os.path.join(tmp, "out.json")
        arrays = {"count": len(cases), "reps": reps}
        for i, c in enumerate(cases):
            arrays[f"x{i}"], arrays[f"y{i}"] = c["x"], c["y"]
        np.savez(path_in, **arrays)
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        proc = subprocess.run([python, os.path.abspath(__file__), "--botorch-worker", path_in,
                               path_out], env=env, capture_output=True, text=True)
        if proc.returncode:
            return {"error": "BoTorch failed: " + proc.stderr.strip().splitlines()[-1]}
        with open(path_out) as f:
            return json.load(f)


# --------------------------------------------------------------------------------------------
# ntkbo side


def _module_at(rev: str):
    """``ntkbo/algorithms/gp_bo.py`` at git revision ``rev``, imported as a module."""
    src = subprocess.run(["git", "-C", _ROOT, "show", f"{rev}:ntkbo/algorithms/gp_bo.py"],
                         capture_output=True, text=True, check=True).stdout
    path = os.path.join(tempfile.mkdtemp(), "gp_bo_baseline.py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("gp_bo_baseline", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _problems(d: int, count: int):
    import ntkbo.benchmarks as B
    if d == 10:
        suite = B.suite("dev")
        return [suite[k] for k in DEV10[:count]]
    return [B.get(f, d) for f in FAMILIES[:count]]


def _fitter(mod, ard="auto", mean="zero"):
    """The jitted fit of ``gp(fit=dict(ard=ard, mean=mean))`` (``num_fit_steps=20``) of the
    module ``mod``: ``"auto"`` (the default) ``select_by_bic``, ``"true"`` the ARD model alone;
    ``mean="constant"``: the models with the fitted constant mean."""
    import jax

    def model_of(**kw):
        m = mod.stationary_model("rbf", **kw)
        return m if mean == "zero" else m._replace(mean=mean)

    model = model_of()
    if ard == "true":
        return model, jax.jit(lambda p, data: mod.fit_hyperparameters(
            model, p, data, num_steps=20, restarts=True))
    fit = mod.select_by_bic(model_of(shared=True))
    return model, jax.jit(lambda p, data: fit(model, p, data, num_steps=20, restarts=True))


def _fitted_mean(model, params, data) -> float:
    """The constant mean ``gp`` uses at ``params``: the GLS mean of ``data``'s factor under the
    model's kernel and noise (``ntkbo.gp.gls_mean``, as ``gp_bo.fitted_mean``)."""
    from ntkbo import gp as G
    kernel = lambda a, b: model.kernel(params, a, b)  # noqa: E731
    return float(G.gls_mean(G.factor(kernel, data, model.noise(params)), data))


def _time(fn, reps: int, *args) -> float:
    import jax
    jax.block_until_ready(fn(*args))
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        ts.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(ts)


def measure_ntkbo(args) -> list[dict]:
    import jax
    import jax.numpy as jnp
    from ntkbo import data as D
    from ntkbo.algorithms import gp_bo
    from ntkbo.algorithms.observations import standardized_data

    sides = {"new": _fitter(gp_bo, args.ard, args.mean)}
    if args.baseline:
        sides["base"] = _fitter(_module_at(args.baseline), args.ard, args.mean)
    cases = []
    for d in [int(v) for v in args.dims.split(",")]:
        for prob in _problems(d, args.problems):
            b = jnp.asarray(prob.bounds, jnp.float32)
            for i in range(args.keys):
                key = args.key_offset + i
                u = jax.random.uniform(jax.random.PRNGKey(key), (max(map(int, args.n.split(","))), d))
                x_all = b[0] + (b[1] - b[0]) * u
                y_all = jax.vmap(prob.fn)(x_all)
                # Held-out points: TEST_POINTS uniform in the box from the case's own key.
                u_test = jax.random.uniform(jax.random.fold_in(jax.random.PRNGKey(key), 1),
                                            (TEST_POINTS, d))
                y_test = jax.vmap(prob.fn)(b[0] + (b[1] - b[0]) * u_test)
                for n in [int(v) for v in args.n.split(",")]:
                    def data_at(m):
                        buf = D.append(D.empty(D.next_capacity(m, 16), d, jnp.float32),
                                       x_all[:m], y_all[:m])
                        return standardized_data(buf, b)[0]
                    prev, cur = data_at(n - 1), data_at(n)
                    _, y_mean, y_std = standardized_data(
                        D.append(D.empty(D.next_capacity(n, 16), d, jnp.float32), x_all[:n],
                                 y_all[:n]), b)
                    c = {"d": d, "n": n, "problem": prob.name, "key": key,
                         "x": np.asarray(cur.x[:n], float), "y": np.asarray(cur.y[:n], float),
                         "xt": np.asarray(u_test, float),
                         "yt": (np.asarray(y_test, float) - float(y_mean)) / float(y_std)}
                    for name, (model, fit) in sides.items():
                        warm = fit(model.init_params(d, jnp.float32), prev)[0]
                        c[f"{name}_ms"] = _time(fit, args.reps, warm, cur)
                        params = fit(warm, cur)[0]
                        ell, s2, lam = ntkbo_values(params, d)
                        mean = _fitted_mean(model, params, cur) if args.mean == "constant" else 0.0
                        c[f"{name}_mean"] = mean
                        lml = log_marginal_likelihood(c["x"], c["y"], ell, s2, lam, mean)
                        c[f"{name}_lml"] = lml / n
                        c[f"{name}_lpd"] = log_predictive_density(c["x"], c["y"], c["xt"],
                                                                  c["yt"], ell, s2, lam, mean)
                        c[f"{name}_lp"] = (lml + gp_log_prior(ell, s2, lam, d)) / n
                    print(f"[gp-fit] d={d} n={n} {prob.name} key={key}: "
                          f"{c['new_ms']:.1f} ms", file=sys.stderr, flush=True)
                    cases.append(c)
    return cases


def table(cases: list[dict], bt: dict, baseline: str | None) -> list[str]:
    have_bt = "error" not in bt
    if have_bt:
        for c, b in zip(cases, bt["cases"]):
            a = b["y_std"]  # BoTorch's units -> the standardised units both were given
            lml = log_marginal_likelihood(c["x"], c["y"], b["ell"], a * a, a * a * b["noise"],
                                          b["y_mean"] + a * b["mean"])
            c["bt_ms"], c["bt_lml"] = b["ms"], lml / c["n"]
            c["bt_lpd"] = log_predictive_density(c["x"], c["y"], c["xt"], c["yt"], b["ell"], a * a,
                                                 a * a * b["noise"], b["y_mean"] + a * b["mean"])
    head = ["d", "n", "cases", "ntkbo refit ms"]
    if baseline:
        head += [f"ms at {baseline}", f"lp/n - lp/n at {baseline} (median, min)"]
    head += ["BoTorch fit ms", "lml/n ntkbo", "lml/n BoTorch", "ntkbo - BoTorch (median, min)",
             "held-out lpd ntkbo", "held-out lpd BoTorch", "ntkbo - BoTorch (median, min)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    groups = sorted({(c["d"], c["n"]) for c in cases})
    med = lambda v: statistics.median(v)  # noqa: E731
    for d, n in groups:
        g = [c for c in cases if (c["d"], c["n"]) == (d, n)]
        row = [str(d), str(n), str(len(g)), f"{med([c['new_ms'] for c in g]):.1f}"]
        if baseline:
            diff = [c["new_lp"] - c["base_lp"] for c in g]
            row += [f"{med([c['base_ms'] for c in g]):.1f}", f"{med(diff):+.4f}, {min(diff):+.4f}"]
        if have_bt:
            diff = [c["new_lml"] - c["bt_lml"] for c in g]
            row += [f"{med([c['bt_ms'] for c in g]):.1f}", f"{med([c['new_lml'] for c in g]):.4f}",
                    f"{med([c['bt_lml'] for c in g]):.4f}", f"{med(diff):+.4f}, {min(diff):+.4f}"]
            diff = [c["new_lpd"] - c["bt_lpd"] for c in g]
            row += [f"{med([c['new_lpd'] for c in g]):.4f}", f"{med([c['bt_lpd'] for c in g]):.4f}",
                    f"{med(diff):+.4f}, {min(diff):+.4f}"]
        else:
            row += ["(BoTorch absent)", f"{med([c['new_lml'] for c in g]):.4f}", "-", "-",
                    f"{med([c['new_lpd'] for c in g]):.4f}", "-", "-"]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.botorch_worker:
        botorch_worker(*args.botorch_worker)
        return 0
    if _ROOT not in sys.path:
        sys.path.insert(0, _ROOT)
    from ntkbo.lapack_threads import configure_blas_threads
    configure_blas_threads()
    cases = measure_ntkbo(args)
    bt = run_botorch(args.botorch_python, cases, args.reps)
    print(f"load average at the end: {os.getloadavg()}; affinity: "
          f"{sorted(os.sched_getaffinity(0))}; ntkbo's fit: ard={args.ard}, mean={args.mean}")
    if "error" in bt:
        print(f"BoTorch: {bt['error']}; ntkbo measured alone.")
    else:
        print(f"BoTorch {bt['versions']['botorch']}, torch {bt['versions']['torch']}, 1 thread")
    print("\n".join(table(cases, bt, args.baseline)))
    if args.json:
        with open(args.json, "w") as f:
            arrays = ("x", "y", "xt", "yt")
            json.dump([{k: v for k, v in c.items() if k not in arrays} for c in cases], f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
