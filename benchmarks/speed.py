"""Wall-clock speed of ntkbo's optimisers: one BO step against n, and vmapped seeds against a loop.

Two measurements, printed as Markdown tables (to paste into a README) with the machine on top:

1. **Step time against n.** For each algorithm and each number of observations ``n`` (default
   50, 100, 200, 500, 1000, 2000, 4000) on ``ackley`` in d = 10: a state of capacity
   ``ntkbo.data.next_capacity(n + 1)`` holding ``n`` Sobol points and their values (the first
   ``n - 1`` told in one ``update``, which factorises and fits the surrogate once: the *fit*
   column, what a refit of the hyper-parameters costs at that n; then the n-th through the
   ``update`` the table times). ``suggest`` and ``update`` are compiled ahead of time
   (``jax.jit(...).lower(...).compile()``, the *compile* column), run once to warm up, then timed as
   the median of ``--reps`` calls with ``block_until_ready``. The timed ``update`` appends the
   suggested point (n -> n + 1) as a BO round does: a kernel model extends its Cholesky factor
   (``ntkbo.gp.factor_append``) unless its refit schedule refits at n + 1. The summary gives the
   log-log slope of the step time against n over the grid points from 500 to 4000 (least
   squares), and each cell's peak resident memory (the measuring process's ``ru_maxrss``: jax's
   runtime, the compiled programs and the arrays).
2. **Seeds: vmap against a loop.** ``--seeds`` (16) runs of ``ntkbo.minimize`` with ``--budget``
   (30) evaluations on ``branin`` (2-D): ``jax.jit(jax.vmap(run, in_axes=(0, None)))(keys,
   problem)`` against a Python loop calling ``jax.jit(run)(key, problem)`` once per key, where
   ``run(k, p) = ntkbo.minimize(algo, p, budget, k)``. Both are compiled first (compile times
   reported separately, not in the run times). ``--budget 30,300`` gives one row per budget. The
   process CPU time of each side is reported next to the wall time: on a loaded machine equal CPU
   time with unequal wall time means one side used the cores better, not that it did less work.
   ``--parts seeds-step`` measures the same at large n without running the rounds before it:
   ``--seeds`` states, each holding n Sobol points of ``--problem`` (its own per seed) for each n
   of ``--grid``, and one round (suggest, evaluate, update) of all of them, ``jax.vmap``-ed
   against a loop over jitted single-state rounds: the throughput of a long vmapped run at that
   n (a 2000-evaluation run of 64 seeds is hours per side on 2 cores). Both time one warm-up call
   per side first; ``--no-warmup`` skips it for runs of minutes (64 seeds at budget 300), where it
   would double the cell.

3. **A second identical command.** ``--parts cache``: ``ntkbo run --algo A --problem branin
   --budget B --seeds S`` twice, each in a fresh process, with a new, empty persistent compilation
   cache folder (``ntkbo.cache``) shared by the two: the first compiles and writes the cache, the
   second loads from it. For each: the wall time, and the time spent compiling, the sum of JAX's
   monitoring events for tracing, lowering to MLIR and the backend compilation (or the cache
   read that replaces it), ``/jax/core/compile/*_duration``.

Every cell runs in its own subprocess, so ``--timeout-per-cell`` is a hard limit (the child is
killed, the cell reads "timeout (> X s)") and one cell's memory cannot affect the next. Within a
cell the number of repetitions is reduced if ``--reps`` would not fit in the time left. Once a cell
of an algorithm times out, or its measured step exceeds ``--skip-above``, its larger ``n`` are
skipped ("skipped (...)") instead of being run: the cost only grows with ``n``.

Algorithms are built with ``ntkbo.algorithms.get(name, **options)``; ``--set name:key=value``
(repeatable; values are Python literals, else strings) sets an option, e.g. ``--set
neural_bo:network.width=500``. ``--blas-threads N`` sets ``OPENBLAS_NUM_THREADS`` (and MKL's,
OpenMP's) in the measuring processes: jax's CPU LAPACK calls go to scipy's OpenBLAS, whose threads
compete with XLA's (``benchmarks/README.md``); the header says which setting a table was made
with. The commands: ``benchmarks/README.md``.

Timings depend on the machine and on its load; the header prints the load average at start.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import math
import platform
import resource
import statistics
import subprocess
import sys
import time

# Import the checkout this script belongs to, also when the package is not installed.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from ntkbo.parts import set_option  # noqa: E402  (after the checkout is importable)

DEFAULT_GRID = (50, 100, 200, 500, 1000, 2000, 4000)
#: The range of n over which the summary fits the log-log slope of the step time.
SLOPE_RANGE = (500, 4000)
QUICK_GRID = (50, 100)
RESULT_TAG = "@@speed-result "


# ---------------------------------------------------------------------------------------------
# Command line


def parse_options(items: list[str]) -> dict[str, dict]:
    """``["neural_bo:network.width=500", ...]`` -> ``{"neural_bo": {"network": {"width": 500}}}``
    (a dotted key sets a part's field, ``ntkbo.parts``)."""
    options: dict[str, dict] = {}
    for item in items:
        try:
            name, assignment = item.split(":", 1)
            key, value = assignment.split("=", 1)
        except ValueError:
            raise SystemExit(f"--set expects name:key=value, got {item!r}") from None
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            parsed = value
        set_option(options.setdefault(name.strip(), {}), key.strip(), parsed)
    return options


class _Formatter(argparse.HelpFormatter):
    """Appends ``(default: X)`` to options that have a default and do not state one."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default not in (None, False, [], argparse.SUPPRESS) and "default" not in text:
            text += " (default: %(default)s)"
        return text


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Time ntkbo's suggest/update against n, and vmapped seeds against a loop.",
        formatter_class=_Formatter)
    p.add_argument("--algos", default="neural_bo,ntk_gp,gp",
                   help="comma-separated names for ntkbo.algorithms.get")
    p.add_argument("--set", dest="options", action="append", default=[], metavar="ALGO:KEY=VALUE",
                   help="an option of one algorithm's factory (repeatable)")
    p.add_argument("--parts", default="step,seeds",
                   help="which measurements: step, seeds, seeds-step, cache (comma-separated)")
    p.add_argument("--grid", default=None,
                   help="comma-separated n for the step timing (default: "
                        + ",".join(map(str, DEFAULT_GRID)) + ")")
    p.add_argument("--max-n", type=int, default=None, help="drop grid points above this n")
    p.add_argument("--problem", default="ackley", help="problem of the step timing")
    p.add_argument("--dim", type=int, default=10, help="its dimension")
    p.add_argument("--reps", type=int, default=None,
                   help="timed repetitions, the median is reported (default 5; --quick 2)")
    p.add_argument("--seeds", type=int, default=None,
                   help="seeds of the vmap-against-loop timing (default 16; --quick 4)")
    p.add_argument("--budget", default=None,
                   help="evaluations per seed, or a comma-separated list of budgets, each a row "
                        "(e.g. 30,300; default 30; --quick 15)")
    p.add_argument("--seeds-problem", default="branin", help="problem of the seeds timing")
    p.add_argument("--seeds-dim", type=int, default=None,
                   help="its dimension (default: the problem's own)")
    p.add_argument("--timeout-per-cell", type=float, default=None,
                   help="hard wall-clock limit per cell in seconds, compilation included "
                        "(default 600; --quick 300)")
    p.add_argument("--skip-above", type=float, default=60.0,
                   help="skip larger n of an algorithm once its step (suggest + update) takes "
                        "longer than this many seconds")
    p.add_argument("--blas-threads", type=int, default=None, metavar="N",
                   help="set OPENBLAS_NUM_THREADS (and MKL_, OMP_) to N in the measuring "
                        "processes; default: leave the environment as it is")
    p.add_argument("--no-warmup", action="store_true",
                   help="seeds cells: time --reps calls without a warm-up call first (for runs of "
                        "minutes, where the warm-up doubles the cell for a negligible correction)")
    p.add_argument("--x64", action="store_true",
                   help="enable jax_enable_x64 (float64; default float32)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: n in " + ",".join(map(str, QUICK_GRID)) + ", 2 reps, 4 seeds of "
                        "budget 15, "
                        "timeout 300 s")
    p.add_argument("--json", default=None, metavar="PATH", help="also write all results as JSON")
    p.add_argument("--seed", type=int, default=0, help="PRNG seed")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)  # internal: one cell
    return p


# ---------------------------------------------------------------------------------------------
# The measurements (run inside a worker subprocess)


def _setup_jax(x64: bool):
    import jax

    if x64:
        jax.config.update("jax_enable_x64", True)
    return jax


def _compile(fn, *args):
    """``(compiled, seconds)``: ahead-of-time compilation of ``jax.jit(fn)`` for ``args``."""
    import jax

    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    return compiled, time.perf_counter() - t0


def _time(call, reps: int) -> list[float]:
    import jax

    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(call())
        out.append(time.perf_counter() - t0)
    return out


def _reps_that_fit(reps: int, each: float, deadline: float) -> int:
    """At most ``reps``, at least 1, so that the remaining calls end well before ``deadline``."""
    return max(1, min(reps, int(0.8 * (deadline - time.monotonic()) / max(each, 1e-9))))


def measure_step(algo_name, options, problem_name, dim, n, reps, deadline, seed, x64):
    jax = _setup_jax(x64)
    import ntkbo
    from ntkbo import data as D
    from ntkbo import qmc

    problem = ntkbo.benchmarks.get(problem_name, dim=dim)
    algo = ntkbo.algorithms.get(algo_name, **options)
    capacity = D.next_capacity(n + 1)
    k_init, k_x, k_suggest = jax.random.split(jax.random.PRNGKey(seed), 3)
    x = qmc.sobol(k_x, n, problem.bounds)
    y = jax.vmap(problem.fn)(x)
    # The first n - 1 points in one update: the model's one factorisation and fit at this n (a
    # state whose buffer is written directly would hold no valid Cholesky factor).
    state = algo.init(k_init, problem.bounds, capacity)
    tell_all, _ = _compile(algo.update, state, x[: n - 1], y[: n - 1])
    t0 = time.perf_counter()
    state, _ = jax.block_until_ready(tell_all(state, x[: n - 1], y[: n - 1]))
    t_fit_all = time.perf_counter() - t0
    del tell_all

    update, t_compile_update = _compile(algo.update, state, x[n - 1:], y[n - 1:])
    # The one fit (n - 1 -> n observations). It runs the same executable, on arguments of the same
    # shapes, as the timed update, so it is also the update's warm-up (an update at n = 2000 can
    # take minutes: a second warm-up call would double the cost of the cell).
    t0 = time.perf_counter()
    state, _ = jax.block_until_ready(update(state, x[n - 1:], y[n - 1:]))
    t_fit = time.perf_counter() - t0
    suggest, t_compile_suggest = _compile(algo.suggest, k_suggest, state)
    t0 = time.perf_counter()
    x_new, _ = jax.block_until_ready(suggest(k_suggest, state))  # warm-up, the timed arguments
    t_warm_suggest = time.perf_counter() - t0
    y_new = jax.vmap(problem.fn)(x_new)

    r = _reps_that_fit(reps, t_warm_suggest + t_fit, deadline)
    suggest_times = _time(lambda: suggest(k_suggest, state), r)
    update_times = _time(lambda: update(state, x_new, y_new), r)
    count = [int(leaf.count) for leaf in jax.tree_util.tree_leaves(
        state, is_leaf=lambda node: isinstance(node, D.Data)) if isinstance(leaf, D.Data)]
    assert all(c == n for c in count), (count, n)
    return {
        "algo": algo_name, "n": n, "capacity": capacity, "reps": r,
        "compile_suggest": t_compile_suggest, "compile_update": t_compile_update,
        "first_fit": t_fit, "fit": t_fit_all, "suggest": statistics.median(suggest_times),
        "update": statistics.median(update_times), "suggest_times": suggest_times,
        "update_times": update_times,
    }


def _loop_against_vmap(sequential, vectorised, reps: int, deadline: float,
                       warmup: bool = True) -> dict:
    """Times ``sequential()`` (a Python loop over seeds) against ``vectorised()`` (their vmapped
    program), both compiled already: one warm-up call each (unless ``warmup=False``), then the
    median of the repetitions that fit before ``deadline``, with this process's CPU seconds per
    repetition (all threads)."""
    import jax

    if warmup:
        t0 = time.perf_counter()
        jax.block_until_ready(sequential())
        t_warm_seq = time.perf_counter() - t0
        t0 = time.perf_counter()
        jax.block_until_ready(vectorised())
        t_warm_vmap = time.perf_counter() - t0
        r = _reps_that_fit(reps, t_warm_seq + t_warm_vmap, deadline)
    else:
        r = reps
    c0 = time.process_time()
    seq_times = _time(sequential, r)
    c1 = time.process_time()
    vmap_times = _time(vectorised, r)
    c2 = time.process_time()
    seq, vm = statistics.median(seq_times), statistics.median(vmap_times)
    return {"reps": r, "warmup": warmup, "sequential": seq, "vmap": vm, "speedup": seq / vm,
            "cpu_sequential": (c1 - c0) / r, "cpu_vmap": (c2 - c1) / r,
            "sequential_times": seq_times, "vmap_times": vmap_times}


def measure_seeds(algo_name, options, problem_name, dim, budget, seeds, reps, deadline, seed,
                  x64, warmup=True):
    jax = _setup_jax(x64)
    import ntkbo

    kwargs = {} if dim is None else {"dim": dim}
    problem = ntkbo.benchmarks.get(problem_name, **kwargs)
    algo = ntkbo.algorithms.get(algo_name, **options)
    keys = jax.random.split(jax.random.PRNGKey(seed), seeds)

    def run(k, _):  # the problem closed over: a traced one cannot say whether it is noisy
        return ntkbo.minimize(algo, problem, budget, k)

    timing = _seeds_timing(run, keys, None, [None] * seeds, (0, None), reps, deadline, warmup)
    return {"algo": algo_name, "problem": problem.name, "dim": int(problem.dim),
            "budget": budget, "seeds": seeds, **timing}


def _seeds_timing(fn, keys, batched, singles, in_axes, reps, deadline, warmup) -> dict:
    """``fn(key, a)`` jitted per seed (``singles[i]``) in a loop against ``jax.vmap(fn,
    in_axes)(keys, batched)``: the compile times and ``_loop_against_vmap``'s timing."""
    import jax

    one, t_compile_seq = _compile(fn, keys[0], singles[0])
    many, t_compile_vmap = _compile(jax.vmap(fn, in_axes=in_axes), keys, batched)
    timing = _loop_against_vmap(lambda: [one(k, a) for k, a in zip(keys, singles)],
                                lambda: many(keys, batched), reps, deadline, warmup)
    return dict(timing, compile_sequential=t_compile_seq, compile_vmap=t_compile_vmap)


def measure_seeds_step(algo_name, options, problem_name, dim, n, seeds, reps, deadline, seed,
                       x64, warmup=True):
    """One BO round (suggest, evaluate, update) of ``seeds`` states at ``n`` observations:
    ``jax.vmap`` over the states against a Python loop over them (the throughput of a vmapped
    long run at that n, without running the n - 1 rounds before it)."""
    jax = _setup_jax(x64)
    import ntkbo
    from ntkbo import data as D
    from ntkbo import qmc

    problem = ntkbo.benchmarks.get(problem_name, dim=dim)
    algo = ntkbo.algorithms.get(algo_name, **options)
    capacity = D.next_capacity(n + 1)
    keys = jax.random.split(jax.random.PRNGKey(seed), seeds)

    def start(k):  # each seed its own n Sobol points, told in one update
        k_init, k_x = jax.random.split(k)
        x = qmc.sobol(k_x, n, problem.bounds)
        return algo.update(algo.init(k_init, problem.bounds, capacity), x,
                           jax.vmap(problem.fn)(x))[0]

    def round_(k, state):
        x, _ = algo.suggest(k, state)
        return algo.update(state, x, jax.vmap(problem.fn)(x))[0]

    states = jax.block_until_ready(jax.jit(jax.vmap(start))(keys))
    singles = [jax.tree_util.tree_map(lambda a, i=i: a[i], states) for i in range(seeds)]
    timing = _seeds_timing(round_, keys, states, singles, 0, reps, deadline, warmup)
    return {"algo": algo_name, "problem": problem.name, "dim": int(problem.dim), "n": n,
            "budget": f"one round at n = {n}", "seeds": seeds, **timing}


#: JAX's monitoring events whose durations make up the time spent compiling a program.
COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration",
                  "/jax/core/compile/jaxpr_to_mlir_module_duration",
                  "/jax/core/compile/backend_compile_duration")


def measure_cli(algo_name, options, problem_name, budget, seeds, cache_dir, out, x64=False, **_):
    """One ``ntkbo run`` in this (fresh) process with the persistent cache in ``cache_dir``: its
    wall time and the seconds spent in ``COMPILE_EVENTS``."""
    os.environ["NTKBO_CACHE_DIR"] = cache_dir
    _setup_jax(x64)
    import jax.monitoring

    spent = {e: 0.0 for e in COMPILE_EVENTS}
    jax.monitoring.register_event_duration_secs_listener(
        lambda e, s, **_: spent.__setitem__(e, spent[e] + s) if e in spent else None)
    from ntkbo import cli

    # ``run``'s own default precision is float64 (ntkbo.cli.DEFAULT_DTYPE): pass the cell's
    argv = ["run", "--algo", algo_name, "--problem", problem_name, "--budget", str(budget),
            "--seeds", str(seeds), "--out", out, "--no-plot",
            "--dtype", "float64" if x64 else "float32"]
    for k, v in options.items():
        argv += ["--set", f"{k}={v}"]
    t0 = time.perf_counter()
    rc = cli.main(argv)
    wall = time.perf_counter() - t0
    return {"algo": algo_name, "problem": problem_name, "budget": budget, "seeds": seeds,
            "rc": rc, "run_wall": wall, "compile": sum(spent.values()),
            "compile_parts": spent, "cache_entries": len(os.listdir(cache_dir))}


def worker(spec: dict) -> None:
    from ntkbo import configure_blas_threads

    configure_blas_threads()  # one LAPACK thread unless --blas-threads set the environment
    deadline = time.monotonic() + spec.pop("timeout")
    kind = spec.pop("kind")
    fn = {"step": measure_step, "seeds": measure_seeds, "seeds_step": measure_seeds_step,
          "cache": measure_cli}[kind]
    result = fn(**spec, deadline=deadline)
    # Peak resident memory of this measuring process (Linux reports kilobytes).
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(RESULT_TAG + json.dumps(result), flush=True)


# ---------------------------------------------------------------------------------------------
# The driver


BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")


def run_cell(spec: dict, timeout: float, env: dict | None = None) -> dict:
    """Runs one cell in a subprocess; returns its result or ``{"error": ...}``."""
    spec = dict(spec, timeout=timeout)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", json.dumps(spec)]
    t0 = time.perf_counter()
    try:
        # subprocess.run kills the child it started when the timeout expires.
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": "timeout", "wall": time.perf_counter() - t0}
    wall = time.perf_counter() - t0
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_TAG):
            return dict(json.loads(line[len(RESULT_TAG):]), wall=wall)
    lines = proc.stderr.strip().splitlines() or ["(no output)"]
    errors = [ln for ln in lines if "Error" in ln.split(":", 1)[0]]
    tail = (errors or lines)[-1].replace("|", "/")
    return {"error": f"failed: {tail[:160]}", "wall": wall, "stderr": proc.stderr[-4000:]}


def machine_info(x64: bool) -> dict:
    import jax
    import jaxlib

    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    import ntkbo

    return {
        "cpu": model, "cpu_count": os.cpu_count(), "cpus_usable": usable,
        "load_average": load, "python": platform.python_version(),
        "jax": jax.__version__, "jaxlib": jaxlib.__version__, "ntkbo": ntkbo.__version__,
        "backend": jax.default_backend(), "devices": [str(d) for d in jax.devices()],
        "x64": bool(x64), "platform": platform.platform(),
    }


def fmt_time(seconds) -> str:
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


def slope(points: list[tuple[int, float]], lo: int = SLOPE_RANGE[0], hi: int = SLOPE_RANGE[1]):
    """Least-squares slope of ``log t`` against ``log n`` over the ``(n, t)`` with ``lo <= n <= hi``
    (``None`` with fewer than two such points)."""
    pts = [(math.log(n), math.log(t)) for n, t in points if lo <= n <= hi and t > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx if sxx > 0 else None


def step_table(results: list[dict], algos: list[str], grid: list[int]) -> list[str]:
    lines = [
        "| algorithm | n | capacity | compile suggest / update | fit (n - 1 points) | suggest | "
        "update | step (suggest + update) | peak RSS | reps |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        if "error" in r or "skipped" in r:
            why = r.get("skipped") or r["error"]
            lines.append(f"| {r['algo']} | {r['n']} | {r['capacity']} | {why} | | | | | | |")
            continue
        rss = r.get("peak_rss_mb")
        lines.append(
            f"| {r['algo']} | {r['n']} | {r['capacity']} | "
            f"{fmt_time(r['compile_suggest'])} / {fmt_time(r['compile_update'])} | "
            f"{fmt_time(r.get('fit'))} | {fmt_time(r['suggest'])} | {fmt_time(r['update'])} | "
            f"**{fmt_time(r['suggest'] + r['update'])}** | "
            f"{'-' if rss is None else f'{rss:.0f} MB'} | {r['reps']} |")
    # A compact summary: step time, algorithms by n.
    lo, hi = SLOPE_RANGE
    lines += ["", "Step time (suggest + update, median) by number of observations n, and the "
              f"log-log slope from n = {lo} to {hi}:", "",
              "| algorithm | " + " | ".join(f"n = {n}" for n in grid) + f" | slope {lo}-{hi} |",
              "|---|" + "---:|" * (len(grid) + 1)]
    by = {(r["algo"], r["n"]): r for r in results}
    for a in algos:
        cells, points = [], []
        for n in grid:
            r = by.get((a, n))
            if r is None:
                cells.append("-")
            elif "skipped" in r:
                cells.append("skipped")
            elif "error" in r:
                cells.append("timeout" if r["error"].startswith("timeout") else "failed")
            else:
                cells.append(fmt_time(r["suggest"] + r["update"]))
                points.append((n, r["suggest"] + r["update"]))
        b = slope(points)
        lines.append(f"| {a} | " + " | ".join(cells) + f" | {'-' if b is None else f'{b:.2f}'} |")
    return lines


def seeds_table(results: list[dict]) -> list[str]:
    lines = [
        "| algorithm | problem | budget | seeds | compile loop / vmap | loop over seeds | "
        "vmap over seeds | speed-up | CPU s loop / vmap | reps |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['algo']} | | {r.get('budget', '')} | | {r['error']} | | | | | |")
            continue
        lines.append(
            f"| {r['algo']} | {r['problem']} (d = {r['dim']}) | {r['budget']} | {r['seeds']} | "
            f"{fmt_time(r['compile_sequential'])} / {fmt_time(r['compile_vmap'])} | "
            f"{fmt_time(r['sequential'])} | {fmt_time(r['vmap'])} | "
            f"**{r['speedup']:.2f}x** | {r.get('cpu_sequential', float('nan')):.3g} / "
            f"{r.get('cpu_vmap', float('nan')):.3g} | {r['reps']} |")
    return lines


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    if args.worker is not None:
        worker(json.loads(args.worker))
        return 0

    defaults = (dict(reps=2, seeds=4, budget="15", timeout_per_cell=300.0) if args.quick
                else dict(reps=5, seeds=16, budget="30", timeout_per_cell=600.0))
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    budgets = [int(b) for b in str(args.budget).split(",") if b.strip()]
    grid = list(QUICK_GRID if args.quick else DEFAULT_GRID)
    if args.grid:
        grid = [int(v) for v in args.grid.split(",") if v.strip()]
    if args.max_n is not None:
        grid = [n for n in grid if n <= args.max_n]
    if any(n < 1 for n in grid):
        raise SystemExit("every n of the grid must be >= 1")
    grid = sorted(set(grid))
    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    import ntkbo

    unknown = [a for a in algos if a not in ntkbo.algorithms.names()]
    if unknown:
        raise SystemExit(f"--algos: {unknown} not in ntkbo.algorithms.names()")
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    if not parts <= {"step", "seeds", "seeds-step", "cache"}:
        raise SystemExit(f"--parts takes step, seeds, seeds-step and/or cache, got {args.parts!r}")
    options = parse_options(args.options)
    for name in options:
        if name not in algos:
            raise SystemExit(f"--set names {name!r}, which is not in --algos {algos}")

    _setup_jax(args.x64)
    machine = machine_info(args.x64)
    env = dict(os.environ)
    if args.blas_threads is not None:
        env.update({v: str(args.blas_threads) for v in BLAS_THREAD_VARIABLES})
    machine["blas_threads"] = {v: env.get(v) for v in BLAS_THREAD_VARIABLES}
    log = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731

    def cell(spec: dict, **row) -> dict:
        r = dict(run_cell(dict(spec, options=options.get(spec["algo_name"], {}), x64=args.x64),
                          args.timeout_per_cell, env), **row)
        if r.get("error") == "timeout":
            r["error"] = f"timeout (> {args.timeout_per_cell:g} s)"
        elif "error" in r:
            log(r.get("stderr", ""))
        return r

    step_results: list[dict] = []
    for a in algos if "step" in parts else []:
        stop = None
        for n in grid:
            cap = ntkbo.data.next_capacity(n + 1)
            if stop:
                step_results.append({"algo": a, "n": n, "capacity": cap, "skipped": stop})
                continue
            log(f"[step] {a} n={n} capacity={cap} ...")
            r = cell(dict(kind="step", algo_name=a, problem_name=args.problem, dim=args.dim, n=n,
                          reps=args.reps, seed=args.seed), algo=a, n=n, capacity=cap)
            step_results.append(r)
            if r.get("error", "").startswith("timeout"):
                stop = f"skipped (n = {n} timed out)"
            elif "error" in r:
                stop = f"skipped (n = {n} failed)"
            elif r["suggest"] + r["update"] > args.skip_above:
                stop = (f"skipped (step > {args.skip_above:g} s at n = {n}: "
                        f"{fmt_time(r['suggest'] + r['update'])})")
            log(f"    {_summary(r)}")

    seed_results: list[dict] = []
    warmup = not args.no_warmup
    for budget, a in ((b, a) for b in budgets for a in algos) if "seeds" in parts else []:
        log(f"[seeds] {a} {args.seeds} seeds x budget {budget} on {args.seeds_problem} ...")
        seed_results.append(cell(dict(
            kind="seeds", algo_name=a, problem_name=args.seeds_problem, dim=args.seeds_dim,
            budget=budget, seeds=args.seeds, reps=args.reps, seed=args.seed, warmup=warmup),
            algo=a, budget=budget))
        log(f"    {_summary(seed_results[-1])}")
    for n, a in ((n, a) for n in grid for a in algos) if "seeds-step" in parts else []:
        log(f"[seeds-step] {a} {args.seeds} seeds, one round at n = {n} ...")
        seed_results.append(cell(dict(
            kind="seeds_step", algo_name=a, problem_name=args.problem, dim=args.dim, n=n,
            seeds=args.seeds, reps=args.reps, seed=args.seed, warmup=warmup),
            algo=a, budget=f"one round at n = {n}"))
        log(f"    {_summary(seed_results[-1])}")

    cache_results: list[dict] = []
    if "cache" in parts:
        import tempfile

        for budget, a in ((b, a) for b in budgets for a in algos):
            with tempfile.TemporaryDirectory(prefix="ntkbo-speed-cache-") as tmp:
                for which in ("first", "second"):
                    log(f"[cache] {a} budget {budget}, {args.seeds} seeds: {which} run ...")
                    r = cell(dict(kind="cache", algo_name=a, problem_name=args.seeds_problem,
                                  budget=budget, seeds=args.seeds,
                                  cache_dir=os.path.join(tmp, "cache"),
                                  out=os.path.join(tmp, which)), algo=a, budget=budget,
                             which=which)
                    if "error" not in r:
                        log(f"    run {fmt_time(r['run_wall'])}, compiling "
                            f"{fmt_time(r['compile'])} (process {r['wall']:.1f} s)")
                    cache_results.append(r)

    out = [
        "## ntkbo speed",
        "",
        f"Machine: {machine['cpu']}; {machine['cpu_count']} CPUs ({machine['cpus_usable']} usable); "
        f"load average at start {_load(machine['load_average'])}; backend {machine['backend']}; "
        f"jax {machine['jax']} (jaxlib {machine['jaxlib']}); x64 {'on' if args.x64 else 'off'} "
        f"(float{'64' if args.x64 else '32'}); OPENBLAS_NUM_THREADS="
        f"{env.get('OPENBLAS_NUM_THREADS', 'unset')}; Python {machine['python']}; "
        f"ntkbo {machine['ntkbo']}.",
        "",
        "Command: `" + " ".join(["python benchmarks/speed.py"]
                                + list(sys.argv[1:] if argv is None else argv)) + "`",
    ]
    if options:
        out += ["", "Options: " + "; ".join(
            f"`{a}`: " + ", ".join(f"{k}={v!r}" for k, v in o.items()) for a, o in options.items())]
    if step_results:
        out += ["", f"### One BO step against the number of observations n "
                    f"({args.problem}, d = {args.dim})", "",
                "Median of `reps` calls after one warm-up; compile time excluded and shown "
                "separately. `update` appends one point to n and refits.", ""]
        out += step_table(step_results, algos, grid)
    if seed_results:
        out += ["", f"### {args.seeds} seeds: `jax.vmap` against a Python loop", "",
                "Median of `reps` repetitions of all seeds"
                + (" (no warm-up call, `--no-warmup`)" if args.no_warmup else
                   " after one warm-up call each")
                + "; compile time excluded and shown separately. Speed-up = loop time / vmap "
                "time. A budget is a whole `minimize`; 'one round at n' is one suggest, "
                "evaluation and update of states holding n "
                "observations (`--parts seeds-step`, on `--problem`).", ""]
        out += seeds_table(seed_results)
    if cache_results:
        out += ["", "### A second identical `ntkbo run` (persistent compilation cache)", "",
                "Each run in a fresh process; the cache folder starts empty before the first. "
                "Compiling = tracing + lowering + backend compilation or cache read (JAX's "
                "monitoring events); process = the whole subprocess, imports included.", "",
                "| algorithm | problem | budget | seeds | run | wall of `run` | compiling | "
                "process | cache files |", "|---|---|---:|---:|---|---:|---:|---:|---:|"]
        for r in cache_results:
            if "error" in r:
                out.append(f"| {r['algo']} | | {r['budget']} | | {r['which']} | {r['error']} "
                           "| | | |")
                continue
            out.append(f"| {r['algo']} | {r['problem']} | {r['budget']} | {r['seeds']} | "
                       f"{r['which']} | {fmt_time(r['run_wall'])} | "
                       f"**{fmt_time(r['compile'])}** | {r['wall']:.1f} s | "
                       f"{r['cache_entries']} |")
    print("\n".join(out))

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine, "args": vars(args), "grid": grid,
                       "step": step_results, "seeds": seed_results, "cache": cache_results}, f,
                      indent=1)
        log(f"wrote {args.json}")
    return 0


def _load(load) -> str:
    return "n/a" if load is None else ", ".join(f"{v:.2f}" for v in load)


def _summary(r: dict) -> str:
    if "skipped" in r:
        return r["skipped"]
    if "error" in r:
        return f"{r['error']} after {r.get('wall', 0):.1f} s"
    if "speedup" in r:
        return (f"loop {fmt_time(r['sequential'])}, vmap {fmt_time(r['vmap'])}, "
                f"speed-up {r['speedup']:.2f}x (compile {fmt_time(r['compile_sequential'])} / "
                f"{fmt_time(r['compile_vmap'])}; cell {r['wall']:.1f} s)")
    return (f"suggest {fmt_time(r['suggest'])}, update {fmt_time(r['update'])} "
            f"(compile {fmt_time(r['compile_suggest'])} / {fmt_time(r['compile_update'])}; "
            f"cell {r['wall']:.1f} s)")


if __name__ == "__main__":
    sys.exit(main())
