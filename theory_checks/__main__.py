"""``python -m theory_checks [NAME ...|all] [--scale smoke|cpu|gpu] [--out DIR] [--seed N]
[--fault FAULT] [--chunk C] [--dry-run]``.

Runs the selected checks (``theory_checks.CHECKS``), prints each table, writes
``DIR/<NAME>.json`` and ``DIR/<NAME>.png`` and a ``DIR/summary.json``, and exits 1 when any
selected claim fails. Float64 is enabled (the checks compare with closed forms). ``--fault``
injects a library fault (``theory_checks.faults``: ``ntk_scale:F``, ``drop_bias_ntk``,
``sto_no_regulariser``, ``neuralbo_wrong_lambda``, ``pinn_wrong_operator``, ``linear_regret``)
while the checks run: a check that detects it exits 1.

Before a check starts, its peak device-memory estimate is printed (``theory_checks.memory``: each
chunked stage's items, chunk and bytes, against the 64 GB budget); ``--dry-run`` prints the
estimates of every selected check and exits (1 when one does not fit) without running anything.
``--chunk C`` maps every stage ``C`` items at a time instead of the scale's ``chunk`` setting
(``None``: derived from the budget).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def main(argv=None) -> int:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import jax

    jax.config.update("jax_enable_x64", True)
    import theory_checks
    from theory_checks.report import table, write

    parser = argparse.ArgumentParser(prog="python -m theory_checks", description=__doc__)
    parser.add_argument("names", nargs="*", default=["all"],
                        help=f"checks to run: {', '.join(theory_checks.CHECKS)} or all")
    parser.add_argument("--scale", choices=theory_checks.SCALE_NAMES, default="cpu")
    parser.add_argument("--out", default="theory_checks_out", help="output directory")
    parser.add_argument("--seed", type=int, default=0, help="jax.random.PRNGKey seed")
    parser.add_argument("--fault", default=None,
                        help="inject a library fault: " + ", ".join(
                            f"{k} ({v})" for k, v in theory_checks.faults.FAULTS.items()))
    parser.add_argument("--chunk", type=int, default=None,
                        help="items per chunk of every stage (default: the largest that fits "
                             "the memory budget)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print every selected check's memory estimate and exit")
    args = parser.parse_args(argv)
    if args.fault is not None:
        try:
            theory_checks.faults.parse(args.fault)
        except ValueError as e:
            parser.error(str(e))
    names = theory_checks.CHECKS if "all" in args.names else args.names
    for name in names:
        if name not in theory_checks.CHECKS:
            parser.error(f"unknown check {name!r}; choose from {', '.join(theory_checks.CHECKS)}"
                         " or all")
    from theory_checks import memory

    fits = True
    # --chunk replaces every stage's chunk; without it each scale's own "chunk" setting holds.
    chunk = {} if args.chunk is None else {"chunk": args.chunk}
    for name in names:
        settings = dict(theory_checks.get(name).SCALES[args.scale], **chunk)
        stages = theory_checks.get(name).memory(settings)
        fits &= max(st.peak for st in stages) <= memory.BUDGET
        if args.dry_run:
            print(f"[{args.scale}] " + memory.describe(name, stages), flush=True)
    if args.dry_run:
        return 0 if fits else 1
    summary = {"scale": args.scale, "seed": args.seed, "fault": args.fault,
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "load_average_start": os.getloadavg(), "checks": {}}
    ok = True
    for name in names:
        settings = dict(theory_checks.get(name).SCALES[args.scale], **chunk)
        print(f"[{args.scale}] " + memory.describe(name, theory_checks.get(name).memory(settings)),
              flush=True)
        report = theory_checks.run_check(name, jax.random.PRNGKey(args.seed), args.scale,
                                         fault=args.fault, **chunk)
        print(table(report), flush=True)
        json_path, png_path = write(report, args.out)
        figure = png_path or "no figure (matplotlib missing: pip install ntkbo[plot])"
        print(f"   wrote {json_path}, {figure}\n", flush=True)
        summary["checks"][name] = {"passed": report.passed, "seconds": report.seconds,
                                   "cpu_seconds": report.cpu_seconds}
        ok &= report.passed
    summary["load_average_end"] = os.getloadavg()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print("ALL PASSED" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
