"""``python -m theory_checks [NAME ...|all] [--scale smoke|cpu|gpu] [--out DIR] [--seed N]
[--fault FAULT]``.

Runs the selected checks (``theory_checks.CHECKS``), prints each table, writes
``DIR/<NAME>.json`` and ``DIR/<NAME>.png`` and a ``DIR/summary.json``, and exits 1 when any
selected claim fails. Float64 is enabled (the checks compare with closed forms). ``--fault``
injects a library fault (``theory_checks.faults``: ``ntk_scale:F``, ``drop_bias_ntk``,
``sto_no_regulariser``, ``neuralbo_wrong_lambda``, ``pinn_wrong_operator``, ``linear_regret``)
while the checks run: a check that detects it exits 1.
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
    summary = {"scale": args.scale, "seed": args.seed, "fault": args.fault,
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "load_average_start": os.getloadavg(), "checks": {}}
    ok = True
    for name in names:
        report = theory_checks.run_check(name, jax.random.PRNGKey(args.seed), args.scale,
                                         fault=args.fault)
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
