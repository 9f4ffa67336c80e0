"""``python -m theory_checks.fault_matrix [--scale smoke|cpu|gpu] [--out DIR] [--checks NAME ...]
[--probe FAULT ...] [--seed N]``: the (check, fault) matrix.

For every selected check (default: all of ``theory_checks.CHECKS``) it runs the check without a
fault (it must PASS), then with every fault of its ``DETECTS[scale]`` (each must FAIL), then with
every ``--probe`` fault (measured, no expectation: how to find the smallest fault a check detects,
e.g. ``--probe ntk_scale:1.01 ntk_scale:1.05``). The fault runs reuse the check's cached reference
side (``theory_checks.faults.touches``), so they cost much less than the first run.

It prints and writes ``DIR/fault_matrix_<scale>.md``: a header with the command, the date, the
JAX version and the machine's load average at start and end, then one table row per run: check,
fault, verdict, expected verdict, whether it is as expected, the row that decides (for a FAIL the
failing row with its measured value and criterion; for a PASS the number of rows), and the wall
time. It exits 1 when any run is not as expected.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def _deciding_row(report) -> tuple[str, str, str]:
    failing = [r for r in report.rows if not r.passed]
    if failing:
        r = failing[0]
        more = f" (+{len(failing) - 1} more failing rows)" if len(failing) > 1 else ""
        return r.quantity + more, f"{r.measured:.4g}", r.tolerance
    return f"all {len(report.rows)} rows pass", "", ""


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def main(argv=None) -> int:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import jax

    jax.config.update("jax_enable_x64", True)
    import theory_checks

    parser = argparse.ArgumentParser(prog="python -m theory_checks.fault_matrix",
                                     description=__doc__)
    parser.add_argument("--scale", choices=theory_checks.SCALE_NAMES, default="cpu")
    parser.add_argument("--out", default="theory_checks_out", help="output directory")
    parser.add_argument("--checks", nargs="*", default=None, help="checks (default: all)")
    parser.add_argument("--probe", nargs="*", default=[],
                        help="further faults to measure on every selected check (no expectation)")
    parser.add_argument("--seed", type=int, default=0, help="jax.random.PRNGKey seed")
    args = parser.parse_args(argv)
    names = args.checks or theory_checks.CHECKS
    for name in names:
        theory_checks.get(name)
    for fault in args.probe:
        theory_checks.faults.parse(fault)
    command = "python -m theory_checks.fault_matrix " + " ".join(argv if argv is not None
                                                                   else sys.argv[1:])
    start = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_start = os.getloadavg()
    key = jax.random.PRNGKey(args.seed)
    lines, all_ok = [], True
    for name in names:
        module = theory_checks.get(name)
        runs = [(None, "PASS")] + [(f, "FAIL") for f in module.DETECTS[args.scale]]
        runs += [(f, "(probe)") for f in args.probe if f not in module.DETECTS[args.scale]]
        for fault, expected in runs:
            report = theory_checks.run_check(name, key, args.scale, fault=fault)
            verdict = "PASS" if report.passed else "FAIL"
            ok = expected == "(probe)" or verdict == expected
            all_ok &= ok
            row, measured, criterion = _deciding_row(report)
            mark = "-" if expected == "(probe)" else ("yes" if ok else "**NO**")
            lines.append(f"| {name} | {fault or '(none)'} | {verdict} | {expected} | {mark} | "
                         f"{_cell(row)} | {measured} | {_cell(criterion)} | "
                         f"{report.seconds:.1f} |")
            print(lines[-1], flush=True)
    load_end = os.getloadavg()
    head = [f"# theory_checks fault matrix, `{args.scale}` scale", "",
            f"Command: `{command}` (seed {args.seed}).",
            f"Date: {start} to {time.strftime('%H:%M UTC', time.gmtime())}; jax "
            f"{jax.__version__}; {os.cpu_count()} CPUs; load average (1, 5, 15 min) "
            f"{tuple(round(v, 1) for v in load_start)} at start, "
            f"{tuple(round(v, 1) for v in load_end)} at end (the machine is shared: wall times "
            "are inflated by the load).", "",
            "Each check runs without a fault (must PASS), with every fault of its "
            "`DETECTS[scale]` (must FAIL) and with the probes (measured). For a FAIL the first "
            "failing row is shown with its measured value and criterion. Fault runs reuse the "
            "check's cached reference side, so their times are small.", "",
            "| check | fault | verdict | expected | as expected | deciding row | measured | "
            "criterion | wall s |",
            "|---|---|---|---|---|---|---|---|---|"]
    text = "\n".join(head + lines) + "\n\n" + ("Every run as expected.\n" if all_ok else
                                               "SOME RUNS NOT AS EXPECTED.\n")
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"fault_matrix_{args.scale}.md")
    with open(path, "w") as f:
        f.write(text)
    print(text)
    print(f"wrote {path}")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
