"""COCO/BBOB: ntkbo's algorithms on the 24 noiseless ``bbob`` functions, and the ECDF report.

``ntkbo coco --algo NAME --dims 2,3,5,10 --instances 1-15 --budget-multiplier 20 --out DIR``
(``run``) drives ``cocoex`` (the ``coco`` extra: ``pip install 'ntkbo[coco]'``): its
``Suite("bbob", "instances: ...", "dimensions: ... function_indices: ...")`` and its
``Observer("bbob", ...)``, which writes ``DIR/NAME/`` (``NAME`` the last part of ``DIR``, which
``cocopp`` uses as the algorithm's label in its plots) in the format ``cocopp`` reads
(``python -m cocopp DIR1/NAME1 DIR2/NAME2``). Every problem is evaluated on the host; the
algorithm runs unchanged through ``ntkbo.ask_tell`` (``start``/``ask``/``tell``: the same Sobol
initial design of ``ntkbo.loop.default_n_init`` (a preset's ``algo.n_init``, else
``min(budget, max(2, d + 1))``) points as
``ntkbo.minimize``, then ``algo.suggest``, buffers grown by doubling). The command line turns on
``jax_enable_x64`` (targets go down to 1e-8; ``--float32`` keeps float32). The budget of a
problem in dimension ``d`` is ``budget_multiplier * d`` evaluations (NeuralBO's study: 20 d,
Phan-Trong et al. 2023, Figure 2); a batch (``q > 1``) that would overrun it is cut.

Keys: the problem ``(function f, dimension d, instance i)`` runs with

    key = fold_in(fold_in(fold_in(PRNGKey(seed), f), d), i)

so a problem's run does not depend on which other problems were selected or their order.

The search box is cocoex's (``[-5, 5]^d`` for ``bbob``). ``f_opt`` is not exposed by cocoex's
Python interface (2.8: ``Problem._f0`` fails), so it is read back from the ``Fopt (...)`` header
that cocoex's ``bbob`` logger writes into its ``.dat`` file for each run (printed with 13
significant digits; BBOB's ``f_opt`` are multiples of 0.01, so the value read is the double
cocoex subtracts; the tests check ntkbo's runtimes against cocopp's reading of cocoex's log).

What ntkbo records, besides cocoex's folder: ``DIR/ntkbo_runs.npz`` (``read_runs`` lists the
arrays), rewritten about every minute so that a killed run keeps the problems it finished.

The report (``report``; ``ntkbo coco-report DIR [DIR ...]``) is computed from those records only:
the runtime of a (run, target) pair is the first evaluation ``n`` (1-based) at which
``f - f_opt <= target``, for the 11 targets ``10^2, 10^1, ..., 10^-8`` (``TARGETS``); the ECDF at
``n`` evaluations is the fraction of (function, instance, target) triples of a dimension whose
runtime is ``<= n``, plotted against ``n / d``. Every instance counts as one run: this is the
plain empirical distribution, without ``cocopp``'s simulated restarts (which re-sample the
unsuccessful runs' budgets and so extend curves past the budget).
"""

from __future__ import annotations

import glob
import json
import os
import platform
import re
import sys
import time

import numpy as np

from ntkbo import files

#: The 11 targets on ``f - f_opt``: ``10^2, 10^1, ..., 10^-8`` (NeuralBO's Figure 2, COCO's
#: ECDF default range).
TARGETS = 10.0 ** np.arange(2, -9, -1)
#: Dimensions of the ``bbob`` suite.
BBOB_DIMS = (2, 3, 5, 10, 20, 40)
#: Function ids of the ``bbob`` suite.
BBOB_FUNCTIONS = tuple(range(1, 25))
RUNS_FILE = "ntkbo_runs.npz"
REPORT_FILE = "coco_report.md"
#: While ``run`` runs, it rewrites its record (marked incomplete) after the first problem that
#: finishes this many seconds or more after the last write, so a killed run keeps its problems.
SAVE_EVERY_S = 60.0

_EXTRA_MSG = ("COCO/BBOB needs the 'coco' extra (coco-experiment, cocopp): "
              "pip install 'ntkbo[coco]'")


def import_cocoex():
    """``cocoex``, imported on first use; ``ImportError`` naming the extra if it is missing."""
    try:
        import cocoex
    except ImportError as err:
        raise ImportError(f"{_EXTRA_MSG} ({err})") from err
    return cocoex


def parse_ints(text: str, name: str, allowed=None) -> list[int]:
    """``"2,3,5,10"``, ``"1-15"`` or ``"1-5,7"`` as a sorted list of distinct ints.

    ``ValueError`` naming ``name`` (the command-line flag) on bad syntax, an empty range or a
    value outside ``allowed``."""
    out = set()
    for part in str(text).replace(" ", "").split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise ValueError(f"{name}: expected integers and ranges like '1-15' or '2,3,5,10', "
                             f"got {text!r}")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise ValueError(f"{name}: range {part!r} is empty (end before start)")
        out.update(range(lo, hi + 1))
    if allowed is not None:
        bad = sorted(out - set(allowed))
        if bad:
            raise ValueError(f"{name}: {bad} not available; choose from {list(allowed)}")
    if min(out) < 1:
        raise ValueError(f"{name}: values must be >= 1, got {text!r}")
    return sorted(out)


def _ranges(values: list[int]) -> str:
    """``[1, 2, 3, 5]`` -> ``"1-3,5"`` (cocoex's option syntax)."""
    parts, start = [], None
    for i, v in enumerate(values):
        if start is None:
            start = v
        if i + 1 == len(values) or values[i + 1] != v + 1:
            parts.append(f"{start}" if start == v else f"{start}-{v}")
            start = None
    return ",".join(parts)


def problem_key(seed: int, function: int, dim: int, instance: int):
    """The key of problem ``(function, dim, instance)``: ``fold_in`` of the three into
    ``PRNGKey(seed)`` in that order."""
    import jax

    key = jax.random.PRNGKey(seed)
    for v in (function, dim, instance):
        key = jax.random.fold_in(key, v)
    return key


def runtimes(gaps, targets=TARGETS) -> np.ndarray:
    """The runtime of every (run, target) pair: ``(n_runs, n_targets)``.

    ``gaps`` ``(n_runs, B)`` holds ``f - f_opt`` per evaluation. The runtime is the first
    evaluation ``n`` (1-based) with ``gaps[r, n - 1] <= target``, ``inf`` if none within ``B``."""
    g = np.asarray(gaps, dtype=float)
    t = np.asarray(targets, dtype=float)
    if g.ndim != 2:
        raise ValueError(f"gaps must be (n_runs, evaluations), got shape {g.shape}")
    best = np.minimum.accumulate(g, axis=1) if g.shape[1] else g
    hit = best[:, :, None] <= t[None, None, :]
    first = np.argmax(hit, axis=1).astype(float) + 1.0
    return np.where(hit.any(axis=1), first, np.inf)


def ecdf(rt, evals) -> np.ndarray:
    """Fraction of the (run, target) pairs with runtime ``<= n``, for each ``n`` in ``evals``."""
    r = np.asarray(rt, dtype=float).reshape(-1)
    n = np.asarray(evals, dtype=float)
    if r.size == 0:
        raise ValueError("no (run, target) pairs")
    return (r[None, :] <= n.reshape(-1, 1)).mean(axis=1).reshape(n.shape)


def cocoex_folder_name(out: str) -> str:
    """The name of cocoex's folder inside ``out``: ``out``'s last part (characters other than
    letters, digits, ``_.-`` replaced by ``_``), which ``cocopp`` shows as the algorithm's label."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(os.path.normpath(out)))
    return name.strip(".") or "cocoex"


def _fopt_from_dat(folder: str, function: int, dim: int) -> float:
    """The ``Fopt`` of the last run cocoex logged for (function, dim): its ``.dat`` header."""
    paths = glob.glob(os.path.join(folder, f"data_f{function}", f"*_f{function}_DIM{dim}.dat"))
    if len(paths) != 1:
        raise RuntimeError(f"expected one cocoex .dat file for f{function} in {dim}-D under "
                           f"{folder}, found {paths}")
    fopt = None
    with open(paths[0]) as fh:
        for line in fh:
            if line.startswith("%"):
                m = re.search(r"Fopt \(\s*([-+0-9.eE]+)\s*\)", line)
                if m:
                    fopt = float(m.group(1))
    if fopt is None:
        raise RuntimeError(f"{paths[0]}: no 'Fopt (...)' header written by cocoex's logger")
    return fopt


def _versions() -> dict:
    import jax

    from ntkbo.provenance import versions

    out = {"ntkbo": versions()["ntkbo"], "jax": jax.__version__,
           "python": platform.python_version()}
    try:
        from importlib.metadata import version

        out["coco-experiment"] = version("coco-experiment")
    except Exception:  # noqa: BLE001 - a version string is informative only
        pass
    return out


def _write_npz(path: str, arrays: dict) -> None:
    files.atomic_write(path, lambda fh: np.savez_compressed(fh, **arrays))


def run(algo_name: str, *, dims=(2, 3, 5, 10), instances=tuple(range(1, 16)),
        functions=BBOB_FUNCTIONS, budget_multiplier: int = 20, out: str, options=None,
        seed: int = 0, quiet: bool = False, write_report: bool = True) -> dict:
    """Runs ``algo_name`` (``ntkbo.algorithms.get(algo_name, **options)``) on every selected
    ``bbob`` problem under cocoex's observer; writes ``out/NAME/`` (cocoex's folder, ``NAME`` the
    last part of ``out``), ``out/ntkbo_runs.npz`` and
    (``write_report``) ``out/coco_report.md`` with ``out/coco_ecdf.png`` and ``.csv``.

    Returns ``{"out", "cocoex_folder", "problems", "wall_time_s", "solved"}`` (``solved``: per
    dimension, the fraction of (function, instance, target) triples solved within the budget).
    ``ValueError`` names the argument that is wrong (``--algo``, ``--dims``, ...), before cocoex
    is imported; ``ImportError`` names the extra if cocoex is missing."""
    from ntkbo import algorithms

    options = dict(options or {})
    if algo_name not in algorithms.names():
        raise ValueError(f"--algo: unknown algorithm {algo_name!r}; choose one of: "
                         f"{', '.join(algorithms.names())}")
    if algorithms.uses_pde(algo_name):
        raise ValueError(f"--algo {algo_name} needs a PDE; the bbob problems have none")
    if algorithms.models_constraints(algo_name, **options):
        raise ValueError(f"--algo {algo_name} models black-box constraints; the bbob problems "
                         "have none (use its unconstrained counterpart)")
    dims = parse_ints(",".join(map(str, dims)), "--dims", BBOB_DIMS)
    functions = parse_ints(",".join(map(str, functions)), "--functions", BBOB_FUNCTIONS)
    instances = parse_ints(",".join(map(str, instances)), "--instances")
    if int(budget_multiplier) < 1:
        raise ValueError(f"--budget-multiplier must be >= 1, got {budget_multiplier}")
    budget_multiplier = int(budget_multiplier)
    out = os.path.abspath(out)
    if re.search(r"\s", out):
        raise ValueError(f"--out {out!r}: cocoex's option string cannot hold whitespace")
    # one writer per folder: a second run into ``out`` stops here, before it checks the folder
    with files.lock_folder(out, " ".join(sys.argv)):
        files.remove_temporaries(out)  # a killed writer's, whole or not: never renamed
        return _run(algo_name, options, dims, instances, functions, budget_multiplier, out, seed,
                    quiet, write_report)


def _run(algo_name, options, dims, instances, functions, budget_multiplier, out, seed, quiet,
         write_report) -> dict:
    """``run`` after its checks, under the folder's lock."""
    from ntkbo import algorithms, ask_tell
    from ntkbo.loop import design_size

    cocoex_name = cocoex_folder_name(out)
    if os.path.exists(os.path.join(out, RUNS_FILE)) or os.path.exists(
            os.path.join(out, cocoex_name)):
        raise ValueError(f"--out {out!r} already holds a COCO run; choose a new folder")
    algo = algorithms.get(algo_name, **options)  # ValueError/TypeError on a bad --set
    try:
        resolved = {k: repr(v) for k, v in
                    algorithms.resolved_options(algo_name, **options).items()}
    except ValueError:
        resolved = {k: repr(v) for k, v in options.items()}

    cocoex = import_cocoex()
    from tqdm import tqdm

    os.makedirs(out, exist_ok=True)
    suite = cocoex.Suite("bbob", f"instances: {_ranges(instances)}",
                         f"dimensions: {','.join(map(str, dims))} "
                         f"function_indices: {_ranges(functions)}")
    observer = cocoex.Observer("bbob", f"outer_folder: {out} result_folder: {cocoex_name} "
                                       f"algorithm_name: {algo_name}")
    folder = observer.result_folder
    per_dim: dict[int, dict[str, list]] = {}
    t_start = time.time()
    n_problems = len(suite)
    bar = tqdm(total=n_problems, desc=f"{algo_name} on bbob", unit="problem", disable=quiet,
               file=sys.stderr)
    solved_so_far: list[np.ndarray] = []
    meta = {
        "format": 1, "algorithm": algo_name, "options": resolved, "seed": int(seed),
        "budget_multiplier": budget_multiplier, "dims": dims, "functions": functions,
        "instances": instances, "targets": TARGETS.tolist(),
        "key": "fold_in(fold_in(fold_in(PRNGKey(seed), function), dim), instance)",
        "cocoex_folder": os.path.relpath(folder, out), "command": " ".join(sys.argv),
        "versions": _versions(), "problems": n_problems,
    }
    last_save = time.time()
    try:
        for problem in suite:
            fid, d, iid = int(problem.id_function), int(problem.dimension), int(problem.id_instance)
            pid = str(problem.id)
            problem.observe_with(observer)
            lb = np.asarray(problem.lower_bounds, float)
            ub = np.asarray(problem.upper_bounds, float)
            budget = budget_multiplier * d
            key = problem_key(seed, fid, d, iid)
            t0 = time.time()
            bounds = np.stack([lb, ub])
            preset = getattr(algo, "n_init", None)  # a preset's design, else the drivers' default
            n_init = min(budget, design_size(d) if preset is None else preset)
            study = ask_tell.start(algo, bounds, key, n_init=n_init)
            xs, fs = [], []
            while len(fs) < budget:
                x, study = ask_tell.ask(algo, study)
                x = np.clip(np.asarray(x, float), lb, ub)[: budget - len(fs)]
                f = np.array([float(problem(xi)) for xi in x])
                xs.extend(x)
                fs.extend(f)
                if len(fs) < budget:  # the last batch is not told: nothing would use it
                    study = ask_tell.tell(algo, study, x, f)
            wall = time.time() - t0
            problem.free()  # the logger writes its files
            fopt = _fopt_from_dat(folder, fid, d)
            f_arr = np.asarray(fs)
            rec = per_dim.setdefault(d, {k: [] for k in
                                         ("function", "instance", "x", "f", "fopt", "wall", "key")})
            rec["function"].append(fid)
            rec["instance"].append(iid)
            rec["x"].append(np.asarray(xs))
            rec["f"].append(f_arr)
            rec["fopt"].append(fopt)
            rec["wall"].append(wall)
            rec["key"].append(np.asarray(key_data(key)))
            solved_so_far.append(runtimes((f_arr - fopt)[None]) <= budget)
            bar.update(1)
            bar.set_postfix(problem=pid, solved=f"{np.mean(solved_so_far):.3f}")
            if time.time() - last_save > SAVE_EVERY_S:  # a killed run keeps what it finished
                _save_runs(out, {**meta, "complete": False, "wall_time_s": time.time() - t_start},
                           per_dim)
                last_save = time.time()
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM (ntkbo.cli): the finished problems kept
        if per_dim:
            _save_runs(out, {**meta, "complete": False,
                             "wall_time_s": time.time() - t_start}, per_dim)
        raise
    bar.close()
    wall_total = time.time() - t_start
    arrays = _save_runs(out, {**meta, "complete": True, "wall_time_s": wall_total}, per_dim)
    result = {"out": out, "cocoex_folder": folder, "problems": n_problems,
              "wall_time_s": wall_total,
              "solved": {d: float(np.mean(runtimes(arrays[f"d{d}_gap"]) <= budget_multiplier * d))
                         for d in sorted(per_dim)}}
    if write_report:
        result["report"] = report([out], out)
    return result


def _save_runs(out: str, meta: dict, per_dim: dict) -> dict:
    """Writes ``out/ntkbo_runs.npz`` atomically (see the module docstring); returns its arrays."""
    arrays = {"meta": np.asarray(json.dumps(meta))}
    for d, rec in per_dim.items():
        f = np.stack(rec["f"])
        fopt = np.asarray(rec["fopt"])
        arrays.update({
            f"d{d}_function": np.asarray(rec["function"], np.int32),
            f"d{d}_instance": np.asarray(rec["instance"], np.int32),
            f"d{d}_x": np.stack(rec["x"]), f"d{d}_f": f, f"d{d}_fopt": fopt,
            f"d{d}_gap": f - fopt[:, None], f"d{d}_wall": np.asarray(rec["wall"]),
            f"d{d}_key": np.stack(rec["key"]).astype(np.uint32),
        })
    _write_npz(os.path.join(out, RUNS_FILE), arrays)
    return arrays


def key_data(key):
    """The raw ``uint32`` data of ``key`` (typed or raw)."""
    import jax
    import jax.numpy as jnp

    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(key)
    return key


def read_runs(folder: str) -> dict:
    """The record ``run`` wrote: ``{"meta": dict, "dims": {d: {"function", "instance", "x", "f",
    "fopt", "gap", "wall", "key"}}}`` (numpy arrays).

    The file ``DIR/ntkbo_runs.npz`` holds, per dimension ``d``: ``d{d}_function``, ``d{d}_instance``
    ``(n,)``, ``d{d}_x`` ``(n, B, d)`` every evaluated point, ``d{d}_f`` ``(n, B)`` cocoex's value
    there, ``d{d}_fopt`` ``(n,)``, ``d{d}_gap`` ``(n, B)`` ``f - f_opt``, ``d{d}_wall`` ``(n,)``
    seconds, ``d{d}_key`` ``(n, 2)`` the raw keys, and ``meta`` (a JSON string: algorithm, resolved
    options, seed, budget multiplier, versions, command, and ``complete``). A long run rewrites the
    file about every minute, marked incomplete, so a killed run keeps the problems it finished (the
    report says so); it cannot be resumed: cocoex's observer starts a new folder, so a new run needs
    a new ``--out``.
    """
    path = os.path.join(folder, RUNS_FILE)
    if not os.path.exists(path):
        raise ValueError(f"{folder!r} holds no {RUNS_FILE}: not a folder written by `ntkbo coco`")
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        dims: dict[int, dict] = {}
        for name in z.files:
            m = re.fullmatch(r"d(\d+)_(\w+)", name)
            if m:
                dims.setdefault(int(m.group(1)), {})[m.group(2)] = z[name]
    return {"meta": meta, "dims": dict(sorted(dims.items()))}


def _checkpoints(multiplier: int) -> list[float]:
    """Evaluations per dimension at which the report tabulates the ECDF: 1, 2, 5, 10, 20, ...
    below the multiplier, and the multiplier."""
    pts = [m * 10 ** e for e in range(0, 7) for m in (1, 2, 5) if m * 10 ** e < multiplier]
    return pts + [multiplier]


def _label(meta: dict, folder: str, seen: set) -> str:
    label = meta["algorithm"]
    if label in seen:
        label = f"{label} ({os.path.basename(os.path.normpath(folder))})"
    seen.add(label)
    return label


def report(folders, out: str | None = None) -> dict:
    """Writes ``coco_report.md``, ``coco_ecdf.csv`` and (with matplotlib) ``coco_ecdf.png`` into
    ``out`` (default: the folders' common parent, or the folder itself if there is one) comparing
    the ``ntkbo coco`` runs in ``folders``. Returns ``{"markdown", "png", "csv", "curves"}`` with
    ``curves[label][d] = (evals_per_dim, fraction)``."""
    folders = [os.fspath(f) for f in folders]
    if not folders:
        raise ValueError("coco-report: give at least one folder written by `ntkbo coco`")
    if out is None:
        out = folders[0] if len(folders) == 1 else os.path.commonpath(
            [os.path.abspath(f) for f in folders])
    os.makedirs(out, exist_ok=True)
    seen: set = set()
    runs = [(_label(r["meta"], f, seen), f, r) for f in folders for r in [read_runs(f)]]
    all_dims = sorted({d for _, _, r in runs for d in r["dims"]})
    curves: dict[str, dict[int, tuple]] = {}
    at_budget: dict[str, dict[int, tuple]] = {}
    per_function: dict[int, dict[str, dict[int, float]]] = {}
    csv_rows = ["algorithm,dim,evaluations,evaluations_per_dim,fraction_solved"]
    for label, _, r in runs:
        mult = int(r["meta"]["budget_multiplier"])
        for d, rec in r["dims"].items():
            rt = runtimes(rec["gap"])
            budget = rec["gap"].shape[1]
            n = np.arange(1, budget + 1)
            frac = ecdf(rt, n)
            curves.setdefault(label, {})[d] = (n / d, frac)
            at_budget.setdefault(label, {})[d] = (float(frac[-1]), budget, rt.size, mult)
            for n_i, fr in zip(n, frac):
                csv_rows.append(f"{label},{d},{n_i},{n_i / d:.6g},{fr:.6g}")
            hits = np.isfinite(rt).sum(axis=1)
            for fid in np.unique(rec["function"]):
                sel = rec["function"] == fid
                per_function.setdefault(d, {}).setdefault(label, {})[int(fid)] = float(
                    hits[sel].mean())
    csv_path = os.path.join(out, "coco_ecdf.csv")
    files.atomic_write(csv_path, ("\n".join(csv_rows) + "\n").encode())
    png = _plot(os.path.join(out, "coco_ecdf.png"), curves, all_dims)
    md = _markdown(runs, all_dims, curves, at_budget, per_function, png, csv_path, out)
    md_path = os.path.join(out, REPORT_FILE)
    files.atomic_write(md_path, md.encode())
    return {"markdown": md_path, "png": png, "csv": csv_path, "curves": curves,
            "at_budget": at_budget}


def _plot(path: str, curves: dict, dims: list[int]) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    from matplotlib.ticker import FuncFormatter, NullFormatter

    n = len(dims)
    fig, axes = plt.subplots(1, n, figsize=(max(6.0, 4 * n), 3.8), dpi=110, squeeze=False,
                             sharey=True)
    handles = {}
    for ax, d in zip(axes[0], dims):
        for i, (label, per_d) in enumerate(curves.items()):
            if d in per_d:
                x, y = per_d[d]
                (line,) = ax.step(x, y, where="post", lw=2, color=f"C{i % 10}", label=label)
                handles.setdefault(label, line)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(0, 1)
        ax.set_title(f"bbob, {d}-D")
        ax.set_xlabel("evaluations / d")
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("fraction of (function, target) pairs")
    axes[0][0].legend(list(handles.values()), list(handles), loc="upper left", fontsize=8)
    fig.suptitle("ECDF of (function, instance, target) triples; targets 1e2..1e-8 on f - f_opt",
                 fontsize=9)
    fig.tight_layout()
    try:
        files.atomic_write(path, lambda fh: fig.savefig(fh, format="png"))
    finally:
        plt.close(fig)
    return path


def _markdown(runs, dims, curves, at_budget, per_function, png, csv_path, out) -> str:
    lines = ["# COCO/BBOB report", "",
             "Fraction of (function, instance, target) triples solved — `f - f_opt <= target` "
             "for the 11 targets 1e2, 1e1, ..., 1e-8 — computed by ntkbo from its records "
             f"(`{RUNS_FILE}`); each instance is one run, no simulated restarts. The cocoex "
             "folders can also be read by `python -m cocopp FOLDER`.", "",
             "| algorithm | folder | functions | instances | budget | seed | problems run | "
             "cocoex folder |",
             "|---|---|---|---|---|---|---|---|"]
    for label, folder, r in runs:
        m = r["meta"]
        done = sum(len(rec["function"]) for rec in r["dims"].values())
        status = (f"{done}" if m.get("complete", True) else
                  f"{done} of {m.get('problems', '?')} (**incomplete**: the run was stopped)")
        lines.append(f"| {label} | `{folder}` | {_ranges(m['functions'])} | "
                     f"{_ranges(m['instances'])} | {m['budget_multiplier']} d | {m['seed']} | "
                     f"{status} | `{os.path.join(folder, m['cocoex_folder'])}` |")
    sets = {(tuple(r["meta"]["functions"]), tuple(r["meta"]["instances"])) for _, _, r in runs}
    if len(sets) > 1:
        lines += ["", "**Warning:** the folders ran different functions or instances; their "
                      "fractions are not over the same pairs."]
    labels = [label for label, _, _ in runs]
    lines += ["", "## Fraction solved at the budget", "",
              "| d | " + " | ".join(labels) + " |", "|---" * (len(labels) + 1) + "|"]
    for d in dims:
        cells = []
        for label in labels:
            v = at_budget.get(label, {}).get(d)
            cells.append("—" if v is None else f"{v[0]:.3f} ({v[1]} evals, {v[2]} pairs)")
        lines.append(f"| {d} | " + " | ".join(cells) + " |")
    lines += ["", "## ECDF at evaluations / d", ""]
    for d in dims:
        mults = sorted({p for label in labels if d in curves.get(label, {})
                        for p in _checkpoints(int(round(curves[label][d][0][-1])))})
        lines += [f"### {d}-D", "", "| evals / d | " + " | ".join(labels) + " |",
                  "|---" * (len(labels) + 1) + "|"]
        for p in mults:
            cells = []
            for label in labels:
                c = curves.get(label, {}).get(d)
                if c is None or p > c[0][-1] + 1e-9:
                    cells.append("—")
                else:
                    i = int(np.searchsorted(c[0], p + 1e-9)) - 1
                    cells.append("0.000" if i < 0 else f"{c[1][i]:.3f}")
            lines.append(f"| {p:g} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## Targets reached per function (mean over instances, of 11)", ""]
    for d in dims:
        fids = sorted({f for lab in per_function.get(d, {}).values() for f in lab})
        lines += [f"### {d}-D", "", "| function | " + " | ".join(labels) + " |",
                  "|---" * (len(labels) + 1) + "|"]
        for fid in fids:
            cells = [("—" if fid not in per_function[d].get(label, {})
                      else f"{per_function[d][label][fid]:.2f}") for label in labels]
            lines.append(f"| f{fid} | " + " | ".join(cells) + " |")
        lines.append("")
    rel = lambda p: os.path.relpath(p, out)  # noqa: E731
    lines += ["## Files", "",
              (f"![ECDF]({rel(png)})" if png else
               "matplotlib is not installed: no plot; the curves are in the CSV."),
              "", f"ECDF values per evaluation: `{rel(csv_path)}`.", ""]
    return "\n".join(lines)


__all__ = ["TARGETS", "ecdf", "import_cocoex", "parse_ints", "problem_key", "read_runs",
           "report", "run", "runtimes"]

