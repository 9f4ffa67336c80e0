"""Compilation as a cost: what a first call of ntkbo spends tracing, lowering and compiling.

Every case runs in a fresh process (nothing compiled before it), on ``--problem`` (default
``hartmann6``, 6-D) with each algorithm's defaults (``ntkbo.algorithms.get(name)``), float32:

* ``first``: the first ``ntkbo.minimize(algo, problem, B, key)`` of a process, for each budget
  of ``--budgets`` (default 30 and 100), as a new user meets it: JAX's persistent compilation
  cache on (``ntkbo.cache``) in a new, empty folder. Reported: the seconds JAX spent tracing,
  lowering to StableHLO and compiling (its monitoring events ``/jax/core/compile/*_duration``,
  summed over every program of the call), the call's wall time, the second call's (a new key: the
  run alone), the number of capacity segments (``ntkbo.loop.plan``) and the size of the compiled
  programs (the bytes the cache folder holds afterwards: serialised, compressed executables).
* ``parts``: the same run's pieces compiled ahead of time one by one at its first segment's
  capacity: ``suggest`` (the posterior and the acquisition search), ``update`` (the new rows and
  the model's fit or training) and the whole ``minimize`` program, each with its trace, lower and
  compile seconds and its size (``jax.experimental.serialize_executable``, uncompressed, and the
  optimised HLO's instruction count). The whole program holds one ``update`` for the initial
  design and one ``suggest`` and ``update`` per segment (an update staged as append and refit,
  ``ntkbo.base.StagedUpdate``, refits in the first segment's scan for the design too: one
  ``update`` per segment); ``driver`` is what remains of its compile
  seconds (the scan, the evaluations, the bookkeeping; XLA optimises the whole program at once, so
  it can come out negative).
* ``vmap``: ``jax.vmap(lambda k: ntkbo.minimize(algo, problem, 30, k))`` over ``--seeds`` (8) keys.
* ``asktell``: ``ntkbo.ask_tell``: ``start``, the initial design asked and told, then one ``ask``
  and ``tell``.
* ``job``: the 30-evaluation job as a script (``import jax, ntkbo``; ``minimize``; print), whole
  process, twice with one new cache folder: the first process compiles and writes it, the second
  should compile nothing. Reported: each process's CPU time (user + system, what the machine paid)
  and wall time, and the second's compile seconds. ``botorch``: the same job with BoTorch
  (``SingleTaskGP`` and ``LogExpectedImprovement`` with their defaults, ``fit_gpytorch_mll``,
  ``optimize_acqf`` with 10 restarts and 512 raw samples; the same 7-point initial design size,
  scrambled Sobol), run by ``--botorch-python`` (default: this interpreter), skipped with a
  message where it cannot import botorch.

Prints a Markdown table and, with ``--json``, writes every result (commands:
``benchmarks/README.md``; ``--quick`` is CI's run: random_search, budget 8). Compile seconds are
wall seconds of the compiling thread; XLA compiles on several threads, so a process's CPU time can
exceed its wall time. On a loaded machine every number grows: compare rows measured in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if os.path.dirname(HERE) not in sys.path:  # run as a script: import benchmarks.speed
    sys.path.insert(0, os.path.dirname(HERE))

from benchmarks.speed import machine_info  # noqa: E402

RESULT_TAG = "COMPILE-RESULT "
DEFAULT_ALGOS = ("gp_ei", "ntk_gp", "neural_bo")
CASES = ("first", "parts", "vmap", "asktell", "job", "botorch")
EVENT_NAMES = {"/jax/core/compile/jaxpr_trace_duration": "trace",
               "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
               "/jax/core/compile/backend_compile_duration": "compile"}

# The job a user starts with, as a script: one fresh process runs it (``job``); the listener only
# adds up JAX's compile events for the report and prints them on standard error.
JOB = """
import sys, time
import jax
spent = {{"trace": 0.0, "lower": 0.0, "compile": 0.0}}
names = {names!r}
jax.monitoring.register_event_duration_secs_listener(
    lambda e, s, **k: spent.__setitem__(names[e], spent[names[e]] + s) if e in names else None)
import ntkbo
result = ntkbo.minimize(ntkbo.algorithms.get({algo!r}), ntkbo.benchmarks.get({problem!r}), {budget},
                        jax.random.PRNGKey(0))
print(float(result.best_y))
print("SPENT", spent["trace"], spent["lower"], spent["compile"], file=sys.stderr)
"""

# BoTorch's same job: its documented defaults, the initial design's size as ntkbo's (d + 1).
BOTORCH_JOB = """
import torch
from botorch.acquisition import LogExpectedImprovement
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.optim import optimize_acqf
from botorch.test_functions import Hartmann
from botorch.utils.sampling import draw_sobol_samples
from gpytorch.mlls import ExactMarginalLogLikelihood

torch.manual_seed(0)
f = Hartmann(dim=6, negate=True)  # BoTorch maximises: -hartmann6
bounds = torch.stack([torch.zeros(6), torch.ones(6)]).double()
x = draw_sobol_samples(bounds, n={n_init}, q=1, seed=0).squeeze(1)
y = f(x).unsqueeze(-1)
for _ in range({budget} - {n_init}):
    model = SingleTaskGP(x, y)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    acq = LogExpectedImprovement(model, best_f=y.max())
    new, _ = optimize_acqf(acq, bounds=bounds, q=1, num_restarts=10, raw_samples=512)
    x, y = torch.cat([x, new]), torch.cat([y, f(new).unsqueeze(-1)])
print(float(-y.max()))
"""


# ---------------------------------------------------------------------------------------------
# Inside a worker process


class _Spent:
    """Seconds per compile stage (``EVENT_NAMES``), from JAX's monitoring events, for one block."""

    def __init__(self):
        import jax

        self.seconds = dict.fromkeys(EVENT_NAMES.values(), 0.0)
        self.hits = self.misses = 0
        jax.monitoring.register_event_duration_secs_listener(self._duration)
        jax.monitoring.register_event_listener(self._event)

    def _duration(self, event, seconds, **_):
        if event in EVENT_NAMES:
            self.seconds[EVENT_NAMES[event]] += seconds

    def _event(self, event, **_):
        self.hits += event == "/jax/compilation_cache/cache_hits"
        self.misses += event == "/jax/compilation_cache/cache_misses"

    def take(self) -> dict:
        out = dict(self.seconds, cache_hits=self.hits, cache_misses=self.misses)
        self.seconds = dict.fromkeys(EVENT_NAMES.values(), 0.0)
        self.hits = self.misses = 0
        return out


def _folder_bytes(folder: str) -> int:
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))


def _setup(spec: dict):
    import jax

    import ntkbo

    algo = ntkbo.algorithms.get(spec["algo"])
    problem = ntkbo.benchmarks.get(spec["problem"])
    return jax, ntkbo, algo, problem


def measure_first(spec: dict) -> dict:
    """``first``: the first and second ``minimize`` of a process (module docstring)."""
    spent = _Spent()
    jax, ntkbo, algo, problem = _setup(spec)
    from ntkbo import loop

    spent.take()  # importing and building compile nothing worth counting; start from zero
    budget = spec["budget"]
    t0 = time.perf_counter()
    jax.block_until_ready(ntkbo.minimize(algo, problem, budget, jax.random.PRNGKey(0)))
    wall = time.perf_counter() - t0
    first = spent.take()
    t0 = time.perf_counter()
    jax.block_until_ready(ntkbo.minimize(algo, problem, budget, jax.random.PRNGKey(1)))
    n_init = loop.default_n_init(problem, budget)
    return dict(first, wall=wall, second_wall=time.perf_counter() - t0,
                segments=len(loop.plan(budget, n_init, loop.batch_size(algo, problem))),
                program_bytes=_folder_bytes(os.environ["NTKBO_CACHE_DIR"]))


def _aot(jax, fn, *args, static=()) -> dict:
    """Trace, lower and compile ``jax.jit(fn)`` for ``args`` ahead of time: seconds and size."""
    from jax.experimental import serialize_executable

    t0 = time.perf_counter()
    traced = jax.jit(fn, static_argnums=static).trace(*args)
    t1 = time.perf_counter()
    lowered = traced.lower()
    t2 = time.perf_counter()
    compiled = lowered.compile()
    t3 = time.perf_counter()
    hlo = compiled.as_text() or ""
    return {"trace": t1 - t0, "lower": t2 - t1, "compile": t3 - t2,
            "program_bytes": len(serialize_executable.serialize(compiled)[0]),
            "hlo_instructions": sum(" = " in line for line in hlo.splitlines())}


def measure_parts(spec: dict) -> dict:
    """``parts``: ``suggest``, ``update`` and the whole program, each compiled ahead of time."""
    jax, _, algo, problem = _setup(spec)
    from ntkbo import loop
    from ntkbo.base import StagedUpdate

    budget = spec["budget"]
    n_init = loop.default_n_init(problem, budget)
    q = loop.batch_size(algo, problem)
    segments = loop.plan(budget, n_init, q)
    capacity = segments[0].capacity
    key = jax.random.PRNGKey(0)
    state = jax.eval_shape(lambda k: algo.init(k, problem.bounds, capacity), key)
    d = problem.bounds.shape[-1]
    x = jax.ShapeDtypeStruct((q, d), problem.bounds.dtype)
    y = jax.ShapeDtypeStruct((q,), problem.bounds.dtype)
    parts = {"suggest": _aot(jax, algo.suggest, key, state),
             "update": _aot(jax, algo.update, state, x, y)}
    parts["minimize"] = _aot(jax, loop._minimize, algo, problem, key, budget, n_init, q,
                             loop.MIN_CAPACITY, static=(0, 3, 4, 5, 6))
    # A staged update (ntkbo.base.StagedUpdate, gp's) refits in the first segment's scan for the
    # initial design too: one copy of it per segment (and a small append of the design's rows).
    staged = isinstance(algo.update, StagedUpdate)
    copies = {"suggest": len(segments), "update": len(segments) + (not staged)}
    parts["driver"] = {stage: parts["minimize"][stage] - sum(
        copies[p] * parts[p][stage] for p in copies) for stage in ("trace", "lower", "compile")}
    return {"parts": parts, "copies": copies, "segments": len(segments), "capacity": capacity}


def measure_vmap(spec: dict) -> dict:
    spent = _Spent()
    jax, ntkbo, algo, problem = _setup(spec)
    spent.take()
    keys = jax.random.split(jax.random.PRNGKey(0), spec["seeds"])
    run = jax.vmap(lambda k: ntkbo.minimize(algo, problem, spec["budget"], k))
    t0 = time.perf_counter()
    jax.block_until_ready(run(keys))
    wall = time.perf_counter() - t0
    first = spent.take()
    t0 = time.perf_counter()
    jax.block_until_ready(run(jax.random.split(jax.random.PRNGKey(1), spec["seeds"])))
    return dict(first, wall=wall, second_wall=time.perf_counter() - t0)


def measure_asktell(spec: dict) -> dict:
    spent = _Spent()
    jax, ntkbo, algo, problem = _setup(spec)
    import numpy as np

    from ntkbo import ask_tell

    spent.take()
    fn = jax.jit(jax.vmap(problem.fn))
    t0 = time.perf_counter()
    study = ask_tell.start(algo, problem.bounds, jax.random.PRNGKey(0))
    for _ in range(2):  # the initial design, then one step of the algorithm
        x, study = ask_tell.ask(algo, study)
        for trial, value in zip(ask_tell.pending(study), np.asarray(fn(x))):
            study = ask_tell.tell(algo, study, trial.id, float(value))
    return dict(spent.take(), wall=time.perf_counter() - t0)


def worker(spec: dict) -> None:
    from ntkbo import configure_blas_threads

    configure_blas_threads()
    kind = spec["case"]
    result = {"first": measure_first, "parts": measure_parts, "vmap": measure_vmap,
              "asktell": measure_asktell}[kind](spec)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result["process_cpu"] = usage.ru_utime + usage.ru_stime
    print(RESULT_TAG + json.dumps(result), flush=True)


# ---------------------------------------------------------------------------------------------
# The driver


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_process(cmd: list[str], env: dict, timeout: float) -> dict:
    """Runs ``cmd``; its wall and CPU seconds (user + system of it and its children), output."""
    cpu0, t0 = _child_cpu(), time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s", "wall": time.perf_counter() - t0}
    out = {"wall": time.perf_counter() - t0, "cpu": _child_cpu() - cpu0, "rc": proc.returncode,
           "stdout": proc.stdout, "stderr": proc.stderr}
    if proc.returncode:
        lines = proc.stderr.strip().splitlines() or ["(no output)"]
        out["error"] = f"exit {proc.returncode}: {lines[-1][:200]}"
    return out


def run_case(spec: dict, env: dict, timeout: float) -> dict:
    """One worker case in a fresh process with a new, empty cache folder."""
    folder = tempfile.mkdtemp(prefix="ntkbo-compile-")
    try:
        out = run_process([sys.executable, os.path.abspath(__file__), "--worker",
                           json.dumps(spec)], dict(env, NTKBO_CACHE_DIR=folder), timeout)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for line in out.get("stdout", "").splitlines():
        if line.startswith(RESULT_TAG):
            return dict(spec, **json.loads(line[len(RESULT_TAG):]))
    return dict(spec, error=out.get("error", "no result"), stderr=out.get("stderr", "")[-3000:])


def run_job(spec: dict, env: dict, timeout: float) -> list[dict]:
    """``job``: the script twice in fresh processes sharing one new cache folder."""
    folder = tempfile.mkdtemp(prefix="ntkbo-compile-job-")
    script = JOB.format(names=EVENT_NAMES, algo=spec["algo"], problem=spec["problem"],
                        budget=spec["budget"])
    rows = []
    try:
        for which in ("job (1st process)", "job (2nd process)"):
            out = run_process([sys.executable, "-c", script], dict(env, NTKBO_CACHE_DIR=folder),
                              timeout)
            row = dict(spec, case=which, wall=out["wall"], process_cpu=out.get("cpu"))
            if "error" in out:
                row["error"] = out["error"]
            for line in out.get("stderr", "").splitlines():
                if line.startswith("SPENT "):
                    row.update(zip(("trace", "lower", "compile"), map(float, line.split()[1:])))
            rows.append(row)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return rows


def run_botorch(python: str, spec: dict, env: dict, timeout: float) -> dict:
    row = dict(spec, algo="BoTorch SingleTaskGP + LogEI", case="job (BoTorch)")
    probe = subprocess.run([python, "-c", "import botorch"], capture_output=True, text=True,
                           env=env)
    if probe.returncode:
        row["skipped"] = f"botorch is not importable by {python}"
        print(f"skipped BoTorch's job: {row['skipped']} (--botorch-python names another)",
              file=sys.stderr)
        return row
    script = BOTORCH_JOB.format(budget=spec["budget"], n_init=spec["n_init"])
    out = run_process([python, "-c", script], env, timeout)
    row.update(wall=out["wall"], process_cpu=out.get("cpu"))
    if "error" in out:
        row["error"] = out["error"]
    return row


def _fmt(v, digits=2) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def table(rows: list[dict]) -> list[str]:
    head = ("| algorithm | case | budget | trace s | lower s | compile s | program MB | "
            "wall s | 2nd call s | process CPU s | note |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        note = r.get("error") or r.get("skipped") or ""
        if "segments" in r and not note:
            note = f"{r['segments']} segment(s)"
        if r.get("cache_hits") or r.get("cache_misses"):
            note += f"; cache {r.get('cache_hits', 0)} hit(s), {r.get('cache_misses', 0)} miss(es)"
        mb = r.get("program_bytes")
        lines.append("| " + " | ".join([
            r["algo"], r["case"], _fmt(r.get("budget")), _fmt(r.get("trace")),
            _fmt(r.get("lower")), _fmt(r.get("compile")),
            "-" if mb is None else f"{mb / 2**20:.2f}", _fmt(r.get("wall")),
            _fmt(r.get("second_wall")), _fmt(r.get("process_cpu")), note.strip("; ")]) + " |")
    return lines


def parts_table(rows: list[dict]) -> list[str]:
    head = ("| algorithm | budget | part | copies | trace s | lower s | compile s | program MB | "
            "HLO instructions |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        if "parts" not in r:
            continue
        for name, p in r["parts"].items():
            mb = p.get("program_bytes")
            lines.append("| " + " | ".join([
                r["algo"], str(r["budget"]), name, str(r["copies"].get(name, 1 if name ==
                                                                        "minimize" else "-")),
                _fmt(p["trace"]), _fmt(p["lower"]), _fmt(p["compile"]),
                "-" if mb is None else f"{mb / 2**20:.2f}",
                _fmt(p.get("hlo_instructions"))]) + " |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algos", default=",".join(DEFAULT_ALGOS),
                        help="comma-separated registry names, or 'all'")
    parser.add_argument("--cases", default=",".join(CASES), help=f"any of {','.join(CASES)}")
    parser.add_argument("--budgets", default="30,100", help="budgets of the 'first' case")
    parser.add_argument("--budget", type=int, default=30,
                        help="budget of the parts, vmap and job cases")
    parser.add_argument("--seeds", type=int, default=8, help="keys of the vmap case")
    parser.add_argument("--problem", default="hartmann6")
    parser.add_argument("--botorch-python", default=sys.executable)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per process")
    parser.add_argument("--json", default=None, help="write every result here")
    parser.add_argument("--quick", action="store_true",
                        help="CI's smoke run: random_search at budget 8, every case but botorch")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        worker(json.loads(args.worker))
        return 0
    if args.quick:
        args.algos, args.budgets, args.budget, args.seeds = "random_search", "8", 8, 2
        args.cases = ",".join(c for c in CASES if c != "botorch")
    import ntkbo

    algos = (list(ntkbo.algorithms.names()) if args.algos == "all"
             else [a for a in args.algos.split(",") if a])
    cases = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"--cases: unknown {unknown}; choose from {CASES}")
    env = dict(os.environ, JAX_ENABLE_X64="0", NTKBO_QUIET="1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    base = {"problem": args.problem}
    rows: list[dict] = []

    def add(new):
        for r in new if isinstance(new, list) else [new]:
            rows.append(r)
            print("\n".join(table([r])[2:]), flush=True)

    print("\n".join(table([])))
    for algo in algos:
        if "first" in cases:
            for budget in (int(b) for b in args.budgets.split(",")):
                add(run_case(dict(base, algo=algo, case="first", budget=budget), env,
                             args.timeout))
        for case in ("parts", "vmap", "asktell"):
            if case in cases:
                add(run_case(dict(base, algo=algo, case=case, budget=args.budget,
                                  seeds=args.seeds), env, args.timeout))
        if "job" in cases:
            add(run_job(dict(base, algo=algo, budget=args.budget), env, args.timeout))
    if "botorch" in cases:
        n_init = ntkbo.loop.design_size(ntkbo.benchmarks.get(args.problem).bounds.shape[-1])
        add(run_botorch(args.botorch_python, dict(base, budget=args.budget, n_init=n_init), env,
                        args.timeout))
    report = ["", f"machine: {json.dumps(machine_info(False))}", ""] + table(rows)
    if any("parts" in r for r in rows):
        report += ["", "Parts, compiled ahead of time one by one:", ""] + parts_table(rows)
    print("\n".join(report))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": machine_info(False), "argv": sys.argv[1:], "rows": rows}, fh,
                      indent=1)
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
