"""The GP baseline against NTK-GP and random search on the dev suite's 10-D and 20-D problems.

The target: ``gp()`` with its defaults beats random search on every 10-D and 20-D
problem of ``ntkbo.benchmarks.suite("dev")`` and its mean normalised regret is no worse than
``ntk_gp(acquisition="ei")``'s. Protocol (settings fixed before the run; keys from
``REPORTING_KEYS``, which no tuning used):

- algorithms: ``gp`` (defaults: L-BFGS MAP fit on the refit schedule, LogEI), ``gp_old`` (the
  former fit as options: ``fit_method="adam", num_fit_steps=50, refit_ratio=1, log_ei=False``; the
  priors' floors and starts are the new ones, so it is not bit for bit the former code),
  ``ntk_gp(acquisition="ei")``, ``random_search``;
- per problem and key ``PRNGKey(100000 + i)``: ``ntkbo.minimize`` with ``--budget`` evaluations,
  ``2 d`` initial points (the same design for every algorithm: paired seeds), buffers of capacity
  ``--min-capacity`` from the start (one compilation per algorithm and problem);
- per problem: mean best value, mean normalised regret ``(min_t f(x_t) - f*) / (m - f*)`` with ``m``
  the median of ``f`` over 4096 scrambled-Sobol points (``benchmarks/defaults.py``'s definition),
  and the one-sided Welch p-value of "mean best value below random search's" (no multiplicity
  correction; a row with p >= 0.05 is a failure and is printed as one).

Usage::

    python benchmarks/gp_baseline.py --keys 16 --out benchmarks/results/gp_baseline.md
    python benchmarks/gp_baseline.py --keys 4 --dims 10 --algos gp,random_search   # a part
    python benchmarks/gp_baseline.py --keys 8 --report-only --out FILE  # table of stored cells

Each (algorithm, problem) cell is appended to ``--json`` as soon as it finishes, and cells already
there are not rerun, so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import jax  # noqa: E402
import numpy as np  # noqa: E402
import scipy.stats  # noqa: E402

import ntkbo  # noqa: E402
from ntkbo.benchmarks import suites  # noqa: E402

ALGOS = {
    "gp": lambda: ntkbo.algorithms.gp(acquisition="ei"),
    "gp_old": lambda: ntkbo.algorithms.gp(acquisition="ei",
                                          fit=dict(method="adam", num_steps=50, refit_ratio=1.0),
                                          search=dict(log_ei=False)),
    "ntk_gp_ei": lambda: ntkbo.algorithms.ntk_gp(acquisition="ei"),
    "random_search": lambda: ntkbo.algorithms.random_search(),
}
REFERENCE = "random_search"


def box_median(problem, n: int = 4096) -> float:
    """Median of ``f`` over ``n`` scrambled-Sobol points of the box (as benchmarks/defaults.py)."""
    from scipy.stats import qmc

    lo, hi = np.asarray(problem.bounds[0], float), np.asarray(problem.bounds[1], float)
    u = qmc.Sobol(problem.dim, scramble=True, seed=0).random(n)
    return float(np.median(np.asarray(problem.fn_batch(lo + (hi - lo) * u))))


def run_cell(name, problem, keys, budget, min_capacity):
    algo = ALGOS[name]()
    d = problem.bounds.shape[1]
    run = jax.jit(lambda k: ntkbo.minimize(algo, problem, budget, k, n_init=2 * d,
                                           min_capacity=min_capacity).best_f)
    t0 = time.time()
    compiled = run.lower(jax.random.PRNGKey(keys[0])).compile()
    t_compile = time.time() - t0
    best, times = [], []
    for k in keys:
        t0 = time.time()
        best.append(float(compiled(jax.random.PRNGKey(k))))
        times.append(time.time() - t0)
    return {"best": best, "compile_s": t_compile, "run_s": times}


def table(cells, problems, algos, medians):
    lines = ["| problem | algorithm | mean best (± s.e.) | mean normalised regret | "
             "Welch p vs random (one-sided) | beats random |",
             "|---|---|---:|---:|---:|---|"]
    regrets = {a: [] for a in algos}
    for pn in problems:
        p = suites.suite("dev")[pn]
        ref = cells.get(f"{REFERENCE}/{pn}")
        for a in algos:
            c = cells.get(f"{a}/{pn}")
            if c is None:
                lines.append(f"| {pn} | {a} | not run | | | |")
                continue
            b = np.asarray(c["best"])
            r = (b - p.optimum) / (medians[pn] - p.optimum)
            regrets[a].append(r.mean())
            se = b.std(ddof=1) / np.sqrt(len(b)) if len(b) > 1 else float("nan")
            if a == REFERENCE or ref is None:
                pv, verdict = "", ""
            else:
                pv_f = scipy.stats.ttest_ind(b, np.asarray(ref["best"]), equal_var=False,
                                             alternative="less").pvalue
                pv, verdict = f"{pv_f:.3g}", ("yes" if pv_f < 0.05 else "**no (failure)**")
            lines.append(f"| {pn} | {a} | {b.mean():.3f} ± {se:.3f} | {r.mean():.3f} | {pv} | "
                         f"{verdict} |")
    lines += ["", "| algorithm | mean normalised regret over the problems run | problems |",
              "|---|---:|---:|"]
    for a in algos:
        if regrets[a]:
            lines.append(f"| {a} | {np.mean(regrets[a]):.3f} | {len(regrets[a])} |")
    return "\n".join(lines)


def main(argv=None):
    ntkbo.configure_blas_threads()  # one LAPACK thread (ntkbo.lapack_threads), as ntkbo's CLI
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keys", type=int, default=16)
    ap.add_argument("--dims", default="10,20")
    ap.add_argument("--algos", default="gp,random_search,ntk_gp_ei,gp_old")
    ap.add_argument("--problems", default=None, help="labels, default: every problem of --dims")
    ap.add_argument("--budget", type=int, default=100)
    ap.add_argument("--min-capacity", type=int, default=128)
    ap.add_argument("--json", default="/tmp/gp_baseline.json")
    ap.add_argument("--out", default=None, help="write the Markdown report here")
    ap.add_argument("--report-only", action="store_true",
                    help="no runs: the table from the cells already in --json (missing: 'not run')")
    args = ap.parse_args(argv)
    dims = {int(v) for v in args.dims.split(",")}
    algos = args.algos.split(",")
    dev = suites.suite("dev")
    problems = (args.problems.split(",") if args.problems
                else [k for k, p in dev.items() if p.bounds.shape[1] in dims])
    keys = list(suites.REPORTING_KEYS)[: args.keys]
    cells = json.load(open(args.json)) if os.path.exists(args.json) else {}
    load = os.getloadavg()
    rev = os.popen("git -C " + _ROOT + " rev-parse --short HEAD").read().strip()
    medians = {pn: box_median(dev[pn]) for pn in problems}
    for pn in problems:
        for a in algos:
            tag = f"{a}/{pn}"
            if args.report_only or (tag in cells and len(cells[tag]["best"]) >= len(keys)):
                continue
            c = run_cell(a, dev[pn], keys, args.budget, args.min_capacity)
            cells[tag] = c
            json.dump(cells, open(args.json, "w"))
            print(f"{tag}: mean best {np.mean(c['best']):.3f}, compile {c['compile_s']:.0f} s, "
                  f"run {np.sum(c['run_s']):.0f} s", flush=True)
    head = [
        "# GP baseline on the dev suite", "",
        f"Command: `python benchmarks/gp_baseline.py {' '.join(sys.argv[1:] if argv is None else argv)}`",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load average "
        f"at start {load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f} (shared with other jobs); jax "
        f"{jax.__version__}, x64 {'on' if jax.config.jax_enable_x64 else 'off'}; "
        f"git {rev} at start.", "",
        f"Keys: PRNGKey(k) for k in REPORTING_KEYS[:{len(keys)}] ({keys[0]}..{keys[-1]}); budget "
        f"{args.budget}, 2 d initial points, capacity {args.min_capacity}.", "",
    ]
    text = "\n".join(head) + table(cells, problems, algos, medians) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
