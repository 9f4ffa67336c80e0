"""Real BoTorch (SingleTaskGP + LogEI, its defaults) on the protocol of ``benchmarks/defaults.py``,
on the dev-suite problems with ``d >= 10``, paired by seed with ntkbo's stored cells.

Nobody had run BoTorch itself on this protocol; this script does, so that "ntkbo's GP-EI is at
BoTorch's level" can be checked against a number rather than a belief. BoTorch is not a
dependency of ntkbo: it lives in a separate virtual environment, and the work is split in three
subcommands, each run with the environment that has what it imports (jax/ntkbo are imported only
in ``export`` and ``report``, botorch/torch only in ``run``, so either environment can import this
module)::

    # (a) ntkbo venv: the problems' data (bounds, transform, the 2d initial points and values of
    #     every reporting key exactly as ntkbo's runs saw them, checked against the stored
    #     gp_ei and ntk_gp_ei cells; 256 check points per problem with ntkbo's f values)
    PYTHONPATH=/work/main /work/main/.venv/bin/python benchmarks/botorch_reference.py export

    # (b) BoTorch venv, one core: resumable, one JSON line per finished (problem, key) run,
    #     key-major (all 9 problems for key 100000, then 100001, ...); --deadline HH:MM (UTC)
    #     stops before starting a run that is not expected to finish by then
    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        taskset -c 1 nice -n 5 /tmp/btenv/bin/python benchmarks/botorch_reference.py run \\
        --deadline 17:15

    # (c) ntkbo venv: the markdown report (scipy's paired tests)
    PYTHONPATH=/work/main /work/main/.venv/bin/python benchmarks/botorch_reference.py report

Files (``benchmarks/results/botorch_reference/``): ``problems.npz`` (export), ``runs.jsonl`` and
``botorch_versions.txt`` (run), ``botorch_reference.md`` (report).

The BoTorch side uses BoTorch's documented defaults: float64, ``torch.set_num_threads(1)``; inputs
scaled to the unit cube from the problem's bounds; ``SingleTaskGP(train_X, train_Y)`` with its
default outcome transform (``Standardize``) and default covariance module and priors (BoTorch
>= 0.12: ARD RBF kernel without outputscale, lengthscale prior LogNormal(sqrt 2 + log(d) / 2,
sqrt 3), the dimension-scaled prior of Hvarfner et al. 2024; Gaussian likelihood with a
log-normal noise prior); ``fit_gpytorch_mll(ExactMarginalLogLikelihood(...))``, refit from
scratch every step; ``LogExpectedImprovement(model, best_f=train_Y.max())`` on the negated
objective (BoTorch maximises); ``optimize_acqf(acq, bounds=unit cube, q=1, num_restarts=10,
raw_samples=512)``. 60 evaluations per run of which the first ``2 d`` are ntkbo's initial design
for the same key (float32 points), with the values ntkbo's runs saw (the ``y`` of the stored
``gp_ei`` cell, float32); BoTorch's own evaluations use a numpy float64 port of
the problem (``NP_FAMILIES`` and ``np_transformed``), checked against ntkbo's values in ``run``
on the exported check points and in ``tests/test_botorch_reference.py``. Torch is seeded per
(problem, key) with ``torch_seed``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "results", "botorch_reference")
STORED = os.path.join(HERE, "results", "defaults-cpu")
PROBLEMS_FILE = "problems.npz"
RUNS_FILE = "runs.jsonl"
VERSIONS_FILE = "botorch_versions.txt"  # written by ``run``: the BoTorch venv's versions
REPORT_FILE = "botorch_reference.md"

#: The dev-suite members with d >= 10, in the suite's order.
MEMBERS = ("ackley10", "levy10", "rastrigin10", "michalewicz10", "dixon_price12", "ackley20",
           "levy20", "rastrigin20", "styblinski_tang20")
BUDGET = 60  # scale "cpu" of benchmarks/defaults.py
N_KEYS = 16  # the protocol's 16 reporting keys
KEY_OFFSET = 100_000  # ntkbo.benchmarks.suites.REPORTING_KEYS.start
N_CHECK = 256  # check points per problem
#: ntkbo's cells compared with BoTorch (random search is the reference of the protocol).
COMPARED = ("gp_ei", "ntk_gp_ei", "random_search")
#: ntkbo's earlier gp_ei cells, read from git (``git show``, read-only): the commit that last
#: wrote them (run at 8c5c918, before 313e9cd changed ntkbo.gp's priors; the 14-problem mean
#: normalised regret 0.313 of the defaults table). The working tree's gp_ei cells were re-run at 313e9cd
#: while BoTorch ran; the report compares with both, labelled by their runs' git revision.
OLD_GP_COMMIT = "4cf91fe"
LABEL = "botorch_logei"


# ----------------------------------------------------------------------------------------------
# numpy ports of ntkbo.benchmarks.synthetic (float64, batched over the last axis; same formulas)


def np_ackley(x):
    a, b, c = 20.0, 0.2, 2.0 * math.pi
    r = np.sqrt(np.mean(x**2, axis=-1))
    return -a * np.exp(-b * r) - np.exp(np.mean(np.cos(c * x), axis=-1)) + a + math.e


def np_levy(x):
    w = 1.0 + (x - 1.0) / 4.0
    head = np.sin(math.pi * w[..., 0]) ** 2
    wb = w[..., :-1]
    body = np.sum((wb - 1.0) ** 2 * (1.0 + 10.0 * np.sin(math.pi * wb + 1.0) ** 2), axis=-1)
    wd = w[..., -1]
    tail = (wd - 1.0) ** 2 * (1.0 + np.sin(2.0 * math.pi * wd) ** 2)
    return head + body + tail


def np_rastrigin(x):
    return 10.0 * x.shape[-1] + np.sum(x**2 - 10.0 * np.cos(2.0 * math.pi * x), axis=-1)


def np_michalewicz(x, m: int = 10):
    i = np.arange(1, x.shape[-1] + 1, dtype=float)
    return -np.sum(np.sin(x) * np.sin(i * x**2 / math.pi) ** (2 * m), axis=-1)


def np_dixon_price(x):
    i = np.arange(1, x.shape[-1] + 1, dtype=float)
    return (x[..., 0] - 1.0) ** 2 + np.sum(i[1:] * (2.0 * x[..., 1:] ** 2 - x[..., :-1]) ** 2,
                                           axis=-1)


def np_styblinski_tang(x):
    return np.sum(0.5 * (x**4 - 16.0 * x**2 + 5.0 * x), axis=-1)


#: ntkbo family name -> numpy port.
NP_FAMILIES = {"ackley": np_ackley, "levy": np_levy, "rastrigin": np_rastrigin,
               "michalewicz": np_michalewicz, "dixon_price": np_dixon_price,
               "styblinski_tang": np_styblinski_tang}


def np_transformed(family: str, x, centre, shift, rotation=None):
    """ntkbo's ``suites.Transformed``, ``g(x) = f(c + Q (x - c - s))``, for a batch ``x (n, d)``
    in float64 (``rotation``: the rows of ``Q``, or None for the identity)."""
    x = np.asarray(x, float)
    c, s = np.asarray(centre, float), np.asarray(shift, float)
    z = x - c - s
    if rotation is not None:
        z = z @ np.asarray(rotation, float).T  # row-wise Q z
    return NP_FAMILIES[family](c + z)


def family_of(label: str) -> str:
    """``"dixon_price12"`` -> ``"dixon_price"``."""
    return label.rstrip("0123456789")


def torch_seed(member_index: int, key: int) -> int:
    """The torch seed of one (problem, key) run: deterministic, distinct per pair."""
    return 1000 * key + member_index


def load_problems(out: str = OUT) -> dict:
    """The exported problem data: ``{label: {field: array}}`` (``export``'s fields)."""
    with np.load(os.path.join(out, PROBLEMS_FILE), allow_pickle=False) as z:
        flat = {k: z[k] for k in z.files}
    probs: dict = {}
    for k, v in flat.items():
        label, _, field = k.partition("/")
        probs.setdefault(label, {})[field] = v
    return {m: probs[m] for m in MEMBERS if m in probs}


def check_ports(problems: dict) -> dict:
    """Max |port - ntkbo| and the allowed tolerance per problem on the exported check points."""
    out = {}
    for label, p in problems.items():
        rot = p["rotation"] if p["rotation"].size else None
        got = np_transformed(family_of(label), p["check_x"], p["centre"], p["shift"], rot)
        err = float(np.max(np.abs(got - p["check_f"])))
        out[label] = (err, port_tolerance(p["check_f"]))
    return out


def port_tolerance(f_ntkbo) -> float:
    """The agreement asked of the float64 port with ntkbo's float32 values: ntkbo evaluates in
    float32 (eps 6e-8), so the transformed input ``c + Q (x - c - s)`` (a sum of ``d`` products)
    carries a rounding error of a few ulps of the box half-width per coordinate, which the
    function's slope (e.g. Rastrigin's ``20 pi |x|``, Styblinski-Tang's ``2 x^3``) and the sums of
    ``d`` terms turn into errors of up to about 1e-6 of the largest |f| on the check points
    (measured: 2e-7 to 1e-6). 1e-5 of the largest |f| leaves a margin of 10; a wrong formula or a
    dropped shift or rotation changes values by a large fraction of it."""
    return 1e-5 * float(np.max(np.abs(f_ntkbo))) + 1e-6


# ----------------------------------------------------------------------------------------------
# (a) export: ntkbo venv


def _need_cells(stored: str) -> None:
    """``SystemExit`` saying how to get the raw cells when ``stored`` has none (the committed
    folders keep only ``summary.npz``; this script reads the evaluated points)."""
    from ntkbo.experiments import store

    if not store.list_cells(stored):
        raise SystemExit(
            f"{stored} holds no raw cell files (cells/*.npz), which this script reads: regenerate "
            "them with the command in its report's header, or restore them from git history as "
            "benchmarks/README.md says (Committed studies)")


def export(out: str = OUT, stored: str = STORED) -> str:
    import jax

    from ntkbo.benchmarks import suites
    from ntkbo.experiments import store
    from ntkbo.loop import initial_design

    _need_cells(stored)
    sys.path.insert(0, HERE)
    import defaults as D  # noqa: E402  (run as a script: benchmarks/ is sys.path[0])

    dev = suites.suite("dev")
    arrays = {}
    for label in MEMBERS:
        problem = dev[label]
        d = problem.dim
        n_init = 2 * d
        fn = problem.fn
        assert isinstance(fn, suites.Transformed), label
        lo, hi = (np.asarray(b) for b in problem.bounds)
        cells = {a: store.read_cell(store.cell_path(stored, f"{a}__{label}__d{d}"))
                 for a in ("gp_ei", "ntk_gp_ei")}
        xs, fs, ulps = [], [], 0.0
        for i in range(N_KEYS):
            k = KEY_OFFSET + i
            # ntkbo.loop._init: k_design, k_noise, k_algo, k_loop = split(key, 4)
            k_design = jax.random.split(jax.random.PRNGKey(k), 4)[0]
            x0 = np.asarray(initial_design(k_design, problem.bounds, n_init))
            f0 = np.asarray(problem.fn_batch(x0))
            for a, c in cells.items():
                assert c.meta["n_init"] == n_init and c.meta["seed_offset"] == KEY_OFFSET
                j = int(np.flatnonzero(c.seeds == i)[0])
                assert c.keys[j].tolist() == [0, k], (a, label, c.keys[j])
                assert np.array_equal(c.x[j, :n_init], x0), (a, label, k, "initial x differ")
                # the values the run saw (noise-free problem: y == f): fn_batch's up to the
                # float32 rounding of a differently compiled (vmapped) program, a few ulps
                np.testing.assert_allclose(c.y[j, :n_init], f0, rtol=1e-5, atol=1e-5)
            # gp_ei's (the defaults table's comparison); ntk_gp_ei's differ from them by float32 ulps
            y_seen = cells["gp_ei"].y[int(np.flatnonzero(cells["gp_ei"].seeds == i)[0]), :n_init]
            y_ntk = cells["ntk_gp_ei"].y[int(np.flatnonzero(cells["ntk_gp_ei"].seeds == i)[0]),
                                         :n_init]
            ulps = max(ulps, float(np.max(np.abs(y_seen - y_ntk) / np.spacing(np.abs(y_seen)))))
            xs.append(x0)
            fs.append(np.asarray(y_seen))
        rng = np.random.default_rng([20261124, MEMBERS.index(label)])
        check_x = (lo + (hi - lo) * rng.uniform(size=(N_CHECK, d))).astype(lo.dtype)
        check_f = np.asarray(problem.fn_batch(check_x))
        rot = np.zeros((0, 0)) if fn.rotation is None else np.asarray(fn.rotation, float)
        arrays.update({
            f"{label}/lower": lo, f"{label}/upper": hi,
            f"{label}/centre": np.asarray(fn.centre, float),
            f"{label}/shift": np.asarray(fn.shift, float), f"{label}/rotation": rot,
            f"{label}/optimum": np.asarray(float(problem.optimum)),
            f"{label}/normaliser": np.asarray(D.box_median(problem) - float(problem.optimum)),
            f"{label}/keys": np.arange(KEY_OFFSET, KEY_OFFSET + N_KEYS),
            f"{label}/init_x": np.stack(xs), f"{label}/init_f": np.stack(fs),
            f"{label}/check_x": check_x, f"{label}/check_f": check_f,
        })
        print(f"{label}: d={d}, {N_KEYS} keys' initial designs equal the gp_ei and ntk_gp_ei "
              f"cells' first {n_init} points (their values differ by <= {ulps:.0f} float32 ulps)",
              flush=True)
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, PROBLEMS_FILE)
    np.savez_compressed(path, **arrays)
    for label, (err, tol) in check_ports(load_problems(out)).items():
        print(f"port check {label}: max |numpy - ntkbo| = {err:.3g} (tolerance {tol:.3g})")
        assert err <= tol, label
    return path


# ----------------------------------------------------------------------------------------------
# (b) run: BoTorch venv


def _done(path: str) -> set:
    done = set()
    if os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                line = line.strip()
                if line:
                    r = json.loads(line)
                    done.add((r["problem"], r["key"]))
    return done


def run_one(label: str, p: dict, key: int, budget: int = BUDGET) -> dict:
    """One BoTorch run of ``budget`` evaluations from ntkbo's initial design for ``key``."""
    import torch
    from botorch.acquisition import LogExpectedImprovement
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from botorch.optim import optimize_acqf
    from gpytorch.mlls import ExactMarginalLogLikelihood

    torch.manual_seed(torch_seed(MEMBERS.index(label), key))
    i = int(np.flatnonzero(p["keys"] == key)[0])
    lo, hi = np.asarray(p["lower"], float), np.asarray(p["upper"], float)
    rot = p["rotation"] if p["rotation"].size else None
    family = family_of(label)
    d = lo.size
    x = [np.asarray(v, float) for v in p["init_x"][i]]  # float32 design, exactly as ntkbo's
    f = [float(v) for v in p["init_f"][i]]  # the values ntkbo's runs saw
    n_init = len(x)
    kw = dict(dtype=torch.float64)
    unit = torch.stack([torch.zeros(d, **kw), torch.ones(d, **kw)])
    steps = []
    t_run = time.time()
    while len(x) < budget:
        t0 = time.time()
        train_x = torch.tensor((np.stack(x) - lo) / (hi - lo), **kw)
        train_y = -torch.tensor(f, **kw).unsqueeze(-1)  # BoTorch maximises
        model = SingleTaskGP(train_x, train_y)
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        t1 = time.time()
        acq = LogExpectedImprovement(model, best_f=train_y.max())
        cand, _ = optimize_acqf(acq, bounds=unit, q=1, num_restarts=10, raw_samples=512)
        u = cand.detach().numpy().reshape(d)
        x_new = lo + (hi - lo) * u
        f_new = float(np_transformed(family, x_new[None], p["centre"], p["shift"], rot)[0])
        x.append(x_new)
        f.append(f_new)
        steps.append({"fit": t1 - t0, "acq": time.time() - t1})
    return {"problem": label, "key": int(key), "n_init": n_init, "budget": budget,
            "torch_seed": torch_seed(MEMBERS.index(label), key),
            "x": np.stack(x).tolist(), "f": f,
            "fit_time": [s["fit"] for s in steps], "acq_time": [s["acq"] for s in steps],
            "wall_time": time.time() - t_run, "loadavg": list(os.getloadavg()),
            "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def run(out: str = OUT, keys: int = N_KEYS, deadline: str | None = None,
        members: tuple = MEMBERS) -> None:
    import botorch
    import gpytorch
    import torch

    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    with open(os.path.join(out, VERSIONS_FILE), "w") as fh:
        fh.write(f"botorch {botorch.__version__}, torch {torch.__version__}, "
                 f"gpytorch {gpytorch.__version__}\n")
    problems = load_problems(out)
    for label, (err, tol) in check_ports(problems).items():
        assert err <= tol, f"numpy port of {label} disagrees with ntkbo: {err} > {tol}"
    path = os.path.join(out, RUNS_FILE)
    done = _done(path)
    end = None
    if deadline:
        hh, mm = (int(v) for v in deadline.split(":"))
        now = datetime.datetime.now(datetime.timezone.utc)
        end = now.replace(hour=hh, minute=mm, second=0, microsecond=0).timestamp()
    last: dict = {}  # label -> wall time of its last run here (the estimate of the next one)
    for k in range(KEY_OFFSET, KEY_OFFSET + keys):
        for label in members:
            if (label, k) in done:
                continue
            if end is not None:
                guess = last.get(label, 0.0)
                if time.time() + guess > end:
                    print(f"stopping before {label} key {k}: its last run took {guess:.0f} s and "
                          f"the deadline is {deadline} UTC", flush=True)
                    return
            r = run_one(label, problems[label], k)
            last[label] = r["wall_time"]
            with open(path, "a") as fh:
                fh.write(json.dumps(r) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            steps = len(r["fit_time"])
            print(f"{label} key {k}: best f {min(r['f']):.4g}, {r['wall_time']:.0f} s "
                  f"({r['wall_time'] / steps:.2f} s/step)", flush=True)


# ----------------------------------------------------------------------------------------------
# (c) report: ntkbo venv


def _versions() -> str:
    import importlib.metadata as md

    out = []
    for name in ("ntkbo", "jax", "numpy", "scipy"):
        try:
            out.append(f"{name} {md.version(name)}")
        except md.PackageNotFoundError:
            pass
    return ", ".join(out) + f"; BoTorch side: {_botorch_versions(OUT)}"


def _botorch_versions(out: str) -> str:
    """The BoTorch side's versions as ``run`` recorded them (``VERSIONS_FILE``), so that a report
    written later, without the BoTorch venv, still says what produced the runs."""
    try:
        with open(os.path.join(out, VERSIONS_FILE)) as fh:
            return fh.read().strip()
    except OSError:
        return "not recorded"


def _runs(out: str) -> dict:
    runs = {}
    with open(os.path.join(out, RUNS_FILE)) as fh:
        for line in fh:
            if line.strip():
                r = json.loads(line)
                runs[(r["problem"], r["key"])] = r
    return runs


def _cell_at(commit: str, path: str, store):
    """The cell file ``path`` as stored in git ``commit`` (``git show``: reads, changes nothing)."""
    import tempfile

    rel = os.path.relpath(path, os.path.dirname(HERE))
    data = subprocess.run(["git", "-C", os.path.dirname(HERE), "show", f"{commit}:{rel}"],
                          capture_output=True, check=True).stdout
    with tempfile.NamedTemporaryFile(suffix=".npz") as fh:
        fh.write(data)
        fh.flush()
        return store.read_cell(fh.name)


def _mse(v) -> str:
    v = np.asarray(v, float)
    se = v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else float("nan")
    return f"{v.mean():.3f} ± {se:.3f}"


def report(out: str = OUT, stored: str = STORED) -> str:
    from scipy import stats as st

    from ntkbo.experiments import store

    _need_cells(stored)
    problems = load_problems(out)
    runs = _runs(out)
    # the keys every problem has finished: the comparison uses the same keys everywhere
    keys = [k for k in range(KEY_OFFSET, KEY_OFFSET + N_KEYS)
            if all((m, k) in runs for m in MEMBERS)]
    if not keys:
        raise SystemExit("no key has finished on every problem yet")
    norm: dict = {}  # label -> algo -> (len(keys),) normalised regret
    revs: dict = {}  # column -> {(git revision, started, finished) of its cells}
    wall, steps_t, fits_t, acqs_t = {}, {}, {}, {}
    all16: dict = {}  # algo -> per-problem mean over all the cell's keys (the stored table's)
    for label in MEMBERS:
        p = problems[label]
        opt, scale = float(p["optimum"]), float(p["normaliser"])
        d = p["lower"].size
        norm[label] = {LABEL: np.array([(min(runs[(label, k)]["f"]) - opt) / scale
                                        for k in keys])}
        sources = [(a, a, None) for a in COMPARED]
        sources.insert(1, (None, "gp_ei", OLD_GP_COMMIT))
        for col, a, commit in sources:
            path = store.cell_path(stored, f"{a}__{label}__d{d}")
            c = store.read_cell(path) if commit is None else _cell_at(commit, path, store)
            if col is None:  # the committed gp_ei, labelled by the revision it ran at
                col = f"gp_ei@{c.meta['git_revision'][:7]}"
            revs.setdefault(col, set()).add((c.meta["git_revision"][:7], c.meta["started"][:16],
                                             c.meta["finished"][:16]))
            rows = [int(np.flatnonzero(c.seeds == k - KEY_OFFSET)[0]) for k in keys]
            # the same initial design as BoTorch's (asserted at export on the cells then stored)
            n_init = p["init_x"].shape[1]
            design = p["init_x"][[k - KEY_OFFSET for k in keys]]
            assert np.array_equal(c.x[rows, :n_init], design), (col, label)
            # the protocol's number: metric (best regret so far) at the last evaluation / (m - f*)
            norm[label][col] = np.asarray(c.metric, float)[rows, -1] / scale
            all16.setdefault(col, []).append(float(np.mean(np.asarray(c.metric, float)[:, -1]))
                                             / scale)
        ts = [np.add(runs[(label, k)]["fit_time"], runs[(label, k)]["acq_time"]) for k in keys]
        steps_t[label] = float(np.mean(np.concatenate(ts)))
        fits_t[label] = float(np.mean(np.concatenate([runs[(label, k)]["fit_time"]
                                                      for k in keys])))
        acqs_t[label] = float(np.mean(np.concatenate([runs[(label, k)]["acq_time"]
                                                      for k in keys])))
        wall[label] = float(np.mean([runs[(label, k)]["wall_time"] for k in keys]))
    cols = list(norm[MEMBERS[0]])[1:]  # ntkbo's columns: gp_ei, gp_ei@<rev>, ntk_gp_ei, random
    old_gp = cols[1]
    algos = (LABEL,) + tuple(cols)
    port_rel = max(err / float(np.max(np.abs(problems[m]["check_f"])))
                   for m, (err, _) in check_ports(problems).items())
    loads = [r["loadavg"][0] for r in runs.values() if "loadavg" in r]
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    first = min(r["finished"] for r in runs.values())
    last = max(r["finished"] for r in runs.values())
    L = [
        "# BoTorch (SingleTaskGP + LogEI) on the dev suite's d >= 10 problems, paired with "
        "ntkbo's stored cells",
        "",
        "Generated by `benchmarks/botorch_reference.py report` (commands in its docstring: "
        "`export` with the ntkbo venv, `run` with a separate BoTorch venv pinned to one core, "
        "`report`).",
        "",
        f"- Report written {now}; BoTorch runs finished between {first} and {last} "
        "(one process, `taskset -c 1 nice -n 5`, 1 thread).",
        f"- Machine load at report time (`uptime`): `{uptime}`" + (
            f"; 1-minute load average (2 cores) at the end of the {len(loads)} BoTorch runs that "
            f"recorded it: median {np.median(loads):.2f}, range {min(loads):.2f} to "
            f"{max(loads):.2f}" if loads else ""),
        f"- Versions: {_versions()}.",
        f"- Keys: **{len(keys)} of the protocol's {N_KEYS}** reporting keys, "
        f"`PRNGKey({keys[0]})` to `PRNGKey({keys[-1]})`, those that finished on all "
        f"{len(MEMBERS)} problems before the time limit; every number below (BoTorch and "
        "ntkbo's cells alike) is over these keys only, paired by key. For reference, over all "
        "16 keys the stored cells give a mean normalised regret over these 9 problems of "
        + ", ".join(f"{a} {np.mean(v):.3f}" for a, v in all16.items()) + ".",
        "",
        "## Protocol",
        "",
        "`benchmarks/defaults.py` at scale `cpu`: budget 60 evaluations, `2 d` initial points from "
        "`ntkbo.loop.initial_design` with the run's key (the export asserted them equal to the "
        "first `2 d` points of the `gp_ei` and `ntk_gp_ei` cells stored then, and this report "
        "asserts it again for every cell compared below; BoTorch starts from them with the "
        "values the gp_ei cells stored at export saw, which the export checked against "
        "`problem.fn_batch` to 1e-5 relative). "
        "Normalised regret `r = (min_t f(x_t) - f*) / (m - f*)`, `m` the median of `f` over "
        "4096 scrambled Sobol points (`defaults.box_median`, seed 0), `f*` the problem's "
        "optimum; ntkbo's numbers are from its stored cells (sources under the first table; "
        "`metric[:, -1]`, the best regret, as `defaults.table` uses it).",
        "",
        "BoTorch with its documented defaults: float64, `torch.set_num_threads(1)`; inputs "
        "scaled to the unit cube from the problem's bounds; `SingleTaskGP(train_X, train_Y)` "
        "with its default `Standardize` outcome transform and default covariance and priors "
        "(BoTorch 0.18: an ARD RBF kernel without outputscale, lengthscale prior "
        "LogNormal(√2 + log(d)/2, √3), the dimension-scaled prior of Hvarfner et al. 2024; "
        "Gaussian likelihood with BoTorch's log-normal noise prior); "
        "`fit_gpytorch_mll(ExactMarginalLogLikelihood(...))` refitted every step; "
        "`LogExpectedImprovement(model, best_f=train_Y.max())` on the negated objective; "
        "`optimize_acqf(acq, bounds=unit cube, q=1, num_restarts=10, raw_samples=512)`. "
        "BoTorch's evaluations use a float64 numpy port of each problem, checked against "
        f"ntkbo's float32 values on {N_CHECK} points per problem before the run (largest "
        f"|port - ntkbo| / max |f| over the 9 problems: {port_rel:.1g}; allowed 1e-5).",
        "",
        "## Mean normalised regret per problem (mean ± s.e. over the same keys; lower is better)",
        "",
        "| problem | d | " + " | ".join(algos) + " | BoTorch s/step (fit + acq) |",
        "|---|---|" + "---|" * len(algos) + "---|",
    ]
    for label in MEMBERS:
        d = problems[label]["lower"].size
        L.append(f"| {label} | {d} | " + " | ".join(_mse(norm[label][a]) for a in algos)
                 + f" | {steps_t[label]:.2f} ({fits_t[label]:.2f} + {acqs_t[label]:.2f}) |")
    overall = {a: float(np.mean([norm[m][a].mean() for m in MEMBERS])) for a in algos}
    L.append("| **mean over the 9 problems** | | "
             + " | ".join(f"**{overall[a]:.3f}**" for a in algos) + " | |")
    L += ["", "Cells compared: " + "; ".join(
        f"`{col}` from "
        + ("the working tree's `benchmarks/results/defaults-cpu`" if col != old_gp
           else f"git commit {OLD_GP_COMMIT} (`git show`)")
        + ", run at " + ", ".join(sorted({r for r, _, _ in revs[col]}))
        + f" between {min(s_ for _, s_, _ in revs[col])} and "
        f"{max(f_ for _, _, f_ in revs[col])} UTC" for col in cols) + ".", ""]

    def paired(a, b):
        diff = a - b
        t = st.ttest_rel(a, b).pvalue if np.any(diff != 0) else 1.0
        w = st.wilcoxon(a, b).pvalue if np.any(diff != 0) else 1.0
        return float(diff.mean()), float(t), float(w)

    def below(a, b):  # one-sided paired t: is a's mean below b's?
        return float(st.ttest_rel(a, b, alternative="less").pvalue) if np.any(a != b) else 1.0

    pm = {a: np.array([norm[m][a].mean() for m in MEMBERS]) for a in algos}
    L += ["## Paired comparisons (per key: BoTorch's normalised regret minus the other's)", "",
          "Negative: BoTorch better. Each cell: mean difference, two-sided paired t-test p "
          "(`scipy.stats.ttest_rel`), Wilcoxon signed-rank p (`scipy.stats.wilcoxon`), "
          "uncorrected for the 9 problems. The last row compares the 9 per-problem means "
          "(n = 9). For random search, also the one-sided paired t p of \"BoTorch lower\" and "
          "the keys on which BoTorch is lower.", "",
          "| problem | " + " | ".join(f"BoTorch − {c}" for c in cols)
          + " | one-sided p vs random | keys lower than random |",
          "|---|" + "---|" * (len(cols) + 2)]
    for label in MEMBERS + ("**over the 9 problems**",):
        n = norm.get(label, {a: pm[a] for a in algos})
        cells = []
        for c in cols:
            dm, tp, wp = paired(n[LABEL], n[c])
            cells.append(f"{dm:+.3f} (t {tp:.2g}, W {wp:.2g})")
        wins = (f"{int(np.sum(n[LABEL] < n['random_search']))}/{len(keys)}"
                if label in norm else "")
        L.append(f"| {label} | " + " | ".join(cells)
                 + f" | {below(n[LABEL], n['random_search']):.2g} | {wins} |")
    L += ["", f"BoTorch's mean wall time per step over all problems and keys: "
          f"{np.mean(list(steps_t.values())):.2f} s (unweighted mean of the per-problem means "
          "above); per run: "
          + ", ".join(f"{m} {wall[m]:.0f} s" for m in MEMBERS) + ". ntkbo's cells vmap 16 "
          "seeds in one program and are not timed comparably here.", ""]

    # what this shows: statements computed from the tables
    def sig(c, sign):  # problems with two-sided paired t p < 0.05 and the given sign of the mean
        return [m for m in MEMBERS if paired(norm[m][LABEL], norm[m][c])[1] < 0.05
                and np.sign(paired(norm[m][LABEL], norm[m][c])[0]) == sign]

    def names(ms):
        return f"{len(ms)} ({', '.join(ms) or 'none'})"

    i = {m: j for j, m in enumerate(MEMBERS)}
    not_worse_ntk = [m for m in MEMBERS if pm[LABEL][i[m]] <= pm["ntk_gp_ei"][i[m]]]
    below_random = [m for m in MEMBERS if pm[LABEL][i[m]] < pm["random_search"][i[m]]]
    sig_random = [m for m in MEMBERS if below(norm[m][LABEL], norm[m]["random_search"]) < 0.05]
    L += ["## What this shows", "",
          f"Over these {len(keys)} keys and the 9 problems with d >= 10, the mean normalised "
          f"regret is {overall[LABEL]:.3f} for BoTorch, {overall['gp_ei']:.3f} for ntkbo's "
          f"current gp_ei cells, {overall[old_gp]:.3f} for the committed ones ({old_gp}), "
          f"{overall['ntk_gp_ei']:.3f} for ntk_gp_ei and {overall['random_search']:.3f} "
          "for random search.", ""]
    for c in ("gp_ei", old_gp):
        g_all = paired(pm[LABEL], pm[c])
        lower = [m for m in MEMBERS if pm[LABEL][i[m]] < pm[c][i[m]]]
        L.append(f"- ntkbo's {c} against BoTorch: BoTorch's mean is lower on {names(lower)} of "
                 f"the 9 problems; the two-sided paired t-test gives p < 0.05 with BoTorch lower "
                 f"on {names(sig(c, -1))} and with BoTorch higher on {names(sig(c, 1))}. Mean "
                 f"difference over problems {g_all[0]:+.3f} (paired t over the 9 per-problem "
                 f"means: p = {g_all[1]:.2g}).")
    k_all = paired(pm[LABEL], pm["ntk_gp_ei"])
    L += [f"- The target \"no worse than ntk_gp_ei\", for BoTorch itself: its mean normalised "
          f"regret is at most ntk_gp_ei's on {names(not_worse_ntk)} of 9 problems; over the 9 "
          f"problems it is {overall[LABEL]:.3f} against {overall['ntk_gp_ei']:.3f} (paired t "
          f"over the 9 per-problem means: p = {k_all[1]:.2g}); per problem, p < 0.05 with "
          f"BoTorch higher on {names(sig('ntk_gp_ei', 1))} and with BoTorch lower on "
          f"{names(sig('ntk_gp_ei', -1))}.",
          f"- \"Beats random search on every one\": BoTorch's mean is below random search's on "
          f"{len(below_random)} of 9 problems"
          + (f" (not on {', '.join(m for m in MEMBERS if m not in below_random)})"
             if len(below_random) < 9 else "") + "; the one-sided paired t-test gives "
          f"p < 0.05 (uncorrected) on {len(sig_random)} of 9"
          + (f" (not on {', '.join(m for m in MEMBERS if m not in sig_random)})"
             if len(sig_random) < 9 else "") + ".", ""]
    cur = paired(pm[LABEL], pm["gp_ei"])
    L += ["In short: on this protocol BoTorch's mean normalised regret over the 9 problems "
          f"({overall[LABEL]:.3f}) is "
          + ("lower" if overall[LABEL] < overall["gp_ei"] else "not lower")
          + f" than the current gp_ei's ({overall['gp_ei']:.3f}; per problem significantly "
          f"lower on {len(sig('gp_ei', -1))}, significantly higher on {len(sig('gp_ei', 1))}; "
          f"over problems p = {cur[1]:.2g}) and than the committed gp_ei's "
          f"({overall[old_gp]:.3f}), so ntkbo's GP-EI "
          + ("is not yet" if overall[LABEL] < overall["gp_ei"] else "is")
          + " at BoTorch's level here. BoTorch itself "
          + ("meets" if not sig("ntk_gp_ei", 1) and overall[LABEL] <= overall["ntk_gp_ei"]
             else "does not meet")
          + " the target \"no worse than ntk_gp_ei on the 10-D and 20-D problems\" "
          f"({overall[LABEL]:.3f} against {overall['ntk_gp_ei']:.3f}, significantly worse on "
          f"{len(sig('ntk_gp_ei', 1))} of 9) and "
          + ("beats" if len(sig_random) == 9 else "does not beat")
          + " random search on every one of the 9 (one-sided paired t, uncorrected).", ""]
    text = "\n".join(L)
    with open(os.path.join(out, REPORT_FILE), "w") as fh:
        fh.write(text)
    print(text)
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("export", help="ntkbo venv: write problems.npz")
    r = sub.add_parser("run", help="BoTorch venv: append runs to runs.jsonl")
    r.add_argument("--keys", type=int, default=N_KEYS, help="first KEYS reporting keys")
    r.add_argument("--deadline", default=None, help="HH:MM UTC today: start no run that would "
                   "not finish by then (estimated from the problem's last run)")
    r.add_argument("--members", default=None, help="comma-separated subset of the problems")
    sub.add_parser("report", help="ntkbo venv: write botorch_reference.md")
    args = parser.parse_args(argv)
    if args.cmd == "export":
        export()
    elif args.cmd == "run":
        members = MEMBERS if not args.members else tuple(args.members.split(","))
        run(keys=args.keys, deadline=args.deadline, members=members)
    else:
        report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
