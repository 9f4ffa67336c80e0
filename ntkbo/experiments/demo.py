"""``ntkbo demo``: a small comparison study, run with progress bars and reported like any study.

The demo is an experiment spec (``ntkbo.experiments.spec``): NeuralBO, GP-EI and random search on
Branin, 30 evaluations (5 initial) x 8 seeds, reference ``random_search``. The runner
(``ntkbo.experiments.run``) compiles each cell as one program and can report progress only per
cell; the demo runs the same cells through ``ntkbo.loop.minimize_chunks`` instead (all seeds at
once, ``jax.vmap``, in chunks of rounds), so that its progress bar moves every few rounds and shows
the mean best regret so far. Everything else is the runner's: the paired keys (seed ``i`` of every
algorithm uses ``PRNGKey(i)``, so the algorithms share their initial designs), the cells' ``meta``
(``runner.cell_meta``) and ``spec.json`` (``runner.resolved_record``), written with
``ntkbo.experiments.store``. Then ``ntkbo.experiments.report`` writes ``report.md`` (overlaid
curves, final-value table, Welch tests, KS, ranks) from those files, and ``summary_lines`` prints the
verdict against random search."""

from __future__ import annotations

import datetime
import os
import sys
import time

import numpy as np

from ntkbo.experiments import report, runner, spec as spec_mod, store

#: The demo's defaults (``ntkbo demo`` takes --algos, --problem, --budget, --seeds, --n-init).
ALGORITHMS = ("neural_bo", "gp_ei", "random_search")
PROBLEM = "branin"
BUDGET = 30
SEEDS = 8
N_INIT = 5
REFERENCE = "random_search"
#: Algorithms whose demo cell is compile-bound: they compile with XLA's optimisations mostly off
#: (``jax_disable_most_optimizations``; GP-EI's cell on Branin, 30 evaluations x 8 seeds, took 36 s
#: instead of 67 s on the loaded 2-core machine; the other GP variants share its code). NeuralBO's
#: per-round training runs about 4x slower unoptimised (its cell: 65 s instead of 47 s), so it, and
#: every algorithm not listed, keeps them.
COMPILE_BOUND = ("random_search", "gp", "gp_ei", "gp_logei", "gp_pi", "gp_ts", "gp_ucb", "gp_mean")


def make_spec(algorithms=ALGORITHMS, problem=PROBLEM, budget=BUDGET, seeds=SEEDS, n_init=N_INIT,
              reference=REFERENCE) -> spec_mod.Spec:
    """The demo's ``Spec``; the reference defaults to random search (``ValueError`` naming
    ``--algos`` if it is not among the algorithms)."""
    algorithms = list(dict.fromkeys(algorithms))
    if reference not in algorithms:
        raise ValueError(f"--algos must include the reference {reference!r} (the algorithms are "
                         f"tested against it), got {', '.join(algorithms)}")
    if len(algorithms) < 2:
        raise ValueError("--algos needs at least two algorithms to compare")
    return spec_mod.Spec.from_dict({
        "name": "demo", "budget": int(budget), "seeds": int(seeds), "n_init": int(n_init),
        "reference": reference, "algorithms": [{"name": a} for a in algorithms],
        "problems": [{"name": problem}]})


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def run_cell(cell, out: str, *, chunk: int = 5, quiet: bool = False, command: str = "") -> str:
    """Runs one resolved ``spec.Cell`` with a progress bar and writes its cell file; returns the
    path. All seeds at once, one buffer capacity (the next power of two >= the budget, so one
    compilation per program)."""
    import jax
    from tqdm import tqdm

    from ntkbo import loop

    algo, problem = cell.build()
    keys = runner.paired_keys(cell.seeds, cell.seed_offset)  # the runner's paired design
    capacity = 1 << max(0, (cell.budget - 1).bit_length())
    optimum = None if problem.optimum is None else float(problem.optimum)
    started, t0 = _now(), time.time()
    bar = tqdm(total=cell.budget, unit="eval", disable=quiet, file=sys.stderr,
               desc=f"{cell.algorithm.id:>14} x{cell.seeds} seeds",
               bar_format="{desc}: {percentage:3.0f}%|{bar:24}| {n}/{total} evals "
                          "[{elapsed}<{remaining}{postfix}]")
    bar.set_postfix_str("compiling")
    last = None
    for progress in loop.minimize_chunks(algo, problem, cell.budget, keys, n_init=cell.n_init,
                                         chunk=chunk, min_capacity=capacity):
        bar.update(progress.done - bar.n)
        best = np.min(progress.f, axis=1)
        shown = f"regret {np.mean(best - optimum):.3g}" if optimum is not None else \
            f"best {np.mean(best):.4g}"
        bar.set_postfix_str(shown + (", compiling" if last is None and progress.done < cell.budget
                                     else ""))
        last = progress
    bar.close()
    if last is None:
        raise RuntimeError(f"loop.minimize_chunks yielded nothing for cell {cell.cell_id!r}")
    wall = time.time() - t0
    metric = np.asarray(loop.best_regret_plus_violation(last.f, last.c, optimum))
    arrays = {"x": last.x, "y": last.y, "f": last.f, "c": last.c, "c_obs": last.c_obs,
              "feasible": np.all(np.asarray(last.c) <= 0, axis=-1), "metric": metric,
              "keys": np.asarray(keys, dtype=np.uint32), "seeds": np.arange(cell.seeds),
              "wall_time": np.full(cell.seeds, wall / cell.seeds)}
    mesh = runner.seed_mesh(jax.local_devices()[:1])  # one device: the seeds are vmapped there
    extra = {"versions": runner.versions(), "command": command,
             "git_revision": runner.git_revision()}
    meta = runner.cell_meta(cell, problem, loop.batch_size(algo, problem), mesh, started,
                            _now(), extra)
    return store.write_cell(out, cell, arrays, meta)


def run(out: str, spec: spec_mod.Spec | None = None, *, quiet: bool = False,
        plots: bool = True, command: str = "ntkbo demo", fast_compile: bool = True) -> dict:
    """Runs the demo's cells into ``out`` (a fresh folder: finished cells from an earlier demo are
    replaced) and writes the report; returns ``report.write_report``'s summary plus
    ``wall_time_s``. ``fast_compile``: the ``COMPILE_BOUND`` algorithms compile with XLA's
    optimisations mostly off (their values then differ from an optimised run's by rounding); JAX's
    setting is restored afterwards."""
    import jax

    spec = spec or make_spec()
    cells = spec.resolve("full")
    old = store.read_spec(out) if os.path.isdir(out) else None
    if old is not None and old.get("name") != spec.name:
        raise ValueError(f"--out {out!r} holds the study {old.get('name')!r}, not a demo; the demo "
                         "replaces its folder's cells, so choose another folder")
    os.makedirs(out, exist_ok=True)
    for path in store.list_cells(out):  # a demo is re-run whole, never mixed with an older one
        os.unlink(path)
    store.write_spec(out, runner.resolved_record(spec, "full", cells))
    t0 = time.time()
    before = jax.config.read("jax_disable_most_optimizations")
    try:
        for cell in cells:
            jax.config.update("jax_disable_most_optimizations",
                              before or (fast_compile and cell.algorithm.name in COMPILE_BOUND))
            run_cell(cell, out, quiet=quiet, command=command)
    finally:
        jax.config.update("jax_disable_most_optimizations", before)
    rep = report.write_report(out, reference=spec.reference, plots=plots)
    return dict(rep, wall_time_s=time.time() - t0)


def summary_lines(rep: dict) -> list[str]:
    """The demo's printed result: per algorithm the final value's mean, sd and median, and whether
    it beats the reference (one-sided Welch, BH-adjusted over the algorithms)."""
    ref = rep["reference"]
    lines = []
    for p, e in rep["problems"].items():
        algos = e["algorithms"]
        budget = max(d["budget"] for d in algos.values())
        seeds = max(d["n_seeds"] for d in algos.values())
        what = {"regret": "simple regret (best f so far - f*)"}.get(e["kind"], e["kind"])
        lines += ["", f"{p} (d={e['dim']}), {budget} evaluations x {seeds} seeds, "
                  f"{rep['wall_time_s']:.0f} s. Final {what}, lower is better:", ""]
        logs = e["kind"].startswith("regret")
        lines.append(f"  {'algorithm':<15} {'mean':>9} {'sd':>9} {'median':>9}"
                     + (f" {'mean log10':>10}" if logs else "")
                     + f"   lower mean than {ref}? (one-sided Welch t-test, BH-adjusted p)")
        order = sorted(algos, key=lambda a: algos[a]["mean"])
        for a in order:
            d = algos[a]
            w = (d.get("vs_reference") or {}).get("algorithm_lower")
            verdict = "(reference)" if a == ref else "(no test)" if w is None else (
                f"{'yes' if w['rejected'] else 'no '}  p = {w['p']:.2g} (adjusted {w['p_bh']:.2g})")
            lines.append(f"  {a:<15} {d['mean']:>9.3g} {d['sd']:>9.3g} {d['median']:>9.3g}"
                         + (f" {d['mean_log10']:>10.3g}" if logs else "") + f"   {verdict}")
        beats = [a for a in order if a != ref
                 and algos[a]["vs_reference"]["algorithm_lower"]["rejected"]]
        lines.append("")
        if beats:
            lines.append(f"  {' and '.join(beats)} beat{'s' if len(beats) == 1 else ''} {ref}: a "
                         f"lower mean final value, significant at FDR {rep['alpha']}.")
        else:
            lines.append(f"  No algorithm has a significantly lower mean than {ref} at FDR "
                         f"{rep['alpha']} with {seeds} seeds.")
    lines += ["", f"  report: {rep['report']}"]
    lines += [f"  plot:   {os.path.join(os.path.dirname(rep['report']), f)}"
              for f in rep["figures"].values()]
    if not rep["figures"]:
        lines += ["  (no plot: install matplotlib, the `plot` extra)"]
    return lines
