"""``python -m theory_checks [NAME ...|all] [--scale smoke|cpu|gpu] [--out DIR] [--seed N]
[--fault FAULT] [--chunk C] [--dry-run] [--time-budget S] [--jobs N] [--set KEY=JSON]``.

The one command of a GPU window (``docs/theory.md``): ``python -m theory_checks all --scale gpu
--time-budget 450 --out DIR`` (8 processes by default at that scale).

Runs the selected checks (``theory_checks.CHECKS``), prints each table, writes
``DIR/<NAME>.json`` and ``DIR/<NAME>.png``, a ``DIR/summary.json`` and a ``DIR/report.md`` (the
command, date, device, versions, commit and every verdict; both rewritten after every check, so
a run cut short still leaves them), and exits 1 when any selected claim fails or a check could
not run. Float64 is enabled (the checks compare with closed forms). ``--fault`` injects a library
fault (``theory_checks.faults``: ``ntk_scale:F``, ``drop_bias_ntk``, ``sto_no_regulariser``,
``neuralbo_wrong_lambda``, ``pinn_wrong_operator``, ``linear_regret``) while the checks run: a
check that detects it exits 1.

Before a check starts, its peak device-memory estimate is printed (``theory_checks.memory``: each
chunked stage's items, chunk and bytes, against the 64 GB budget) and, at ``gpu`` scale, its time
estimate and power (``theory_checks.timing``); ``--dry-run`` prints the settings, estimates and
power of every selected check and the total time against one GPU call, and exits (1 when a
check's memory or the total time does not fit) without running anything. ``--chunk C`` maps every
stage ``C`` items at a time instead of the scale's ``chunk`` setting (``None``: derived from the
budget). ``--time-budget S``: a check whose time estimate exceeds the seconds left is skipped
(recorded with the reason; the run then exits 1). Each check's seconds in JAX's compile events
are recorded beside its wall time (``summary.json``).

``--jobs N`` (default 8 at ``gpu`` scale, else 1): each check runs in its own process, ``N`` at
once, longest estimate first, each with ``1/N`` of the memory budget; a check whose module has
``SHARDS[scale]`` (``regret_scaling``: one shard per algorithm) runs as one process per shard,
``OUT/<check>.<i>/``. With ``--time-budget`` a process still running when the time is spent is
killed and its verdict is TIMEOUT; the others' verdicts stand. ``--set KEY=JSON`` replaces a
setting of the scale (e.g. ``--set 'algorithms=["neural_bo"]'``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
import traceback
from typing import Any


def _sizes(module, scale: str) -> str:
    """The settings of ``scale`` that differ between the check's scales: its sizes."""
    scales = list(module.SCALES.values())
    here = module.SCALES[scale]
    keys = [k for k in here if k != "chunk" and any(s.get(k) != here[k] for s in scales)]
    return "; ".join(f"{k}={here[k]}" for k in keys)


def _environment() -> dict:
    import jax

    from ntkbo import provenance

    dev = jax.devices()[0]
    env = {"device_kind": dev.device_kind, "platform": dev.platform,
           "device_count": jax.device_count(), "versions": provenance.versions(),
           "commit": provenance.git_revision(), "x64": bool(jax.config.read("jax_enable_x64"))}
    try:
        import subprocess

        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        env["nvidia_smi"] = smi.stdout.strip() or None
    except (OSError, ValueError, subprocess.SubprocessError):
        env["nvidia_smi"] = None
    return env



def _save(out: str, summary: dict, tables: dict, start: float) -> None:
    """``out/summary.json`` and ``out/report.md``, each written whole or not at all
    (``ntkbo.files.atomic_write``: a run killed while saving keeps the previous pair)."""
    from ntkbo.files import atomic_write

    summary["wall_s"] = time.time() - start
    summary["load_average_end"] = os.getloadavg()
    atomic_write(os.path.join(out, "summary.json"), json.dumps(summary, indent=1).encode())
    atomic_write(os.path.join(out, "report.md"), _markdown(summary, tables).encode())

def _markdown(summary: dict, tables: dict) -> str:
    env = summary["environment"]
    v = env["versions"]
    lines = [f"# theory checks at `{summary['scale']}` scale", "",
             f"Command: `{summary['command']}` (seed {summary['seed']}, fault "
             f"{summary['fault']}). Started {summary['date']}, "
             f"{'finished' if summary.get('finished') else 'not finished'} "
             f"after {summary.get('wall_s', 0):.0f} s.",
             f"Device: {env['device_kind']} ({env['platform']}, {env['device_count']} device(s); "
             f"nvidia-smi: {env.get('nvidia_smi')}); jax {v.get('jax')}, jaxlib {v.get('jaxlib')},"
             f" numpy {v.get('numpy')}, Python {v.get('python')}; float64 {env['x64']}; commit "
             f"{env['commit']}. Load average at start {summary['load_average_start']}.", "",
             "| check | verdict | rows passed | wall s | compile s (programs) | estimate s |",
             "|---|---|---:|---:|---:|---:|"]
    def num(c, key, fmt):
        return "-" if c.get(key) is None else format(c[key], fmt)

    for name, c in summary["checks"].items():
        rows = f"{c['rows_passed']}/{c['rows']}" if "rows" in c else "-"
        lines.append(f"| {name} | {c.get('verdict', 'not run yet')} | {rows} | "
                     f"{num(c, 'seconds', '.1f')} | {num(c, 'compile_s', '.1f')} "
                     f"({c.get('compiles', '-')}) | {num(c, 'estimate_s', '.0f')} |")
    lines.append("")
    for name, c in summary["checks"].items():
        if c.get("verdict") in ("SKIPPED", "ERROR", "TIMEOUT"):
            lines += [f"## {name}: {c['verdict']}", "", "```", c.get("reason", ""), "```", ""]
        elif name in tables:
            lines += [f"## {name}: {c['verdict']}", "", "```", tables[name], "```", ""]
    return "\n".join(lines)


@dataclasses.dataclass
class _Job:
    """One check's process under ``--jobs``."""

    name: str
    proc: Any
    log: Any
    log_path: str
    started: float


def jobs_for(names, scale: str, jobs: int) -> list:
    """``[(job, check, overrides)]``: one job per check, or, with ``jobs > 1``, one per shard of a
    check whose module has ``SHARDS[scale]`` (settings overrides, e.g. ``regret_scaling``'s
    algorithms split up: each shard is a run of the check on a subset, with the same values)."""
    import theory_checks

    out = []
    for name in names:
        shards = getattr(theory_checks.get(name), "SHARDS", {}).get(scale) if jobs > 1 else None
        if shards:
            out += [(f"{name}.{i}", name, dict(o)) for i, o in enumerate(shards)]
        else:
            out.append((name, name, {}))
    return out


def _settings(name: str, scale: str, overrides: dict) -> dict:
    import theory_checks

    return dict(theory_checks.get(name).SCALES[scale], **overrides)


def _child_argv(args, name: str, out: str, overrides: dict) -> list:
    # --jobs 1: the child runs its check itself (at gpu scale the default would fork again)
    argv = [name, "--scale", args.scale, "--out", out, "--seed", str(args.seed), "--jobs", "1"]
    for k, v in overrides.items():
        argv += ["--set", f"{k}={json.dumps(v)}"]
    if args.fault is not None:
        argv += ["--fault", args.fault]
    if args.chunk is not None:
        argv += ["--chunk", str(args.chunk)]
    return argv


def _parallel(args, names, argv) -> int:
    """``--jobs N``: each check in its own ``python -m theory_checks NAME`` process writing
    ``OUT/NAME/``, at most ``N`` at once, longest estimate first, each with ``1/N`` of the memory
    budget (``$THEORY_CHECKS_MEMORY_GIB``); a process still running when ``--time-budget`` is
    spent is killed (verdict TIMEOUT). ``OUT/summary.json`` and ``OUT/report.md`` gather the
    children's verdicts and tables, rewritten as each ends."""
    import subprocess

    from theory_checks import memory, timing

    start = time.time()
    command = "python -m theory_checks " + " ".join(sys.argv[1:] if argv is None else argv)
    os.makedirs(args.out, exist_ok=True)
    jobs = {job: (name, over) for job, name, over in jobs_for(names, args.scale, args.jobs)}
    device = timing.local_device()
    est = {job: (timing.estimate(name, _settings(name, args.scale, over), device)["total"]
                 if name in timing.CALIBRATION else 0.0) for job, (name, over) in jobs.items()}
    env = dict(os.environ, THEORY_CHECKS_MEMORY_GIB=f"{memory.BUDGET / 2**30 / args.jobs:.3f}",
               XLA_PYTHON_CLIENT_PREALLOCATE="false", PYTHONUNBUFFERED="1")
    summary = {"scale": args.scale, "seed": args.seed, "fault": args.fault, "command": command,
               "jobs": args.jobs, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "load_average_start": os.getloadavg(), "environment": _environment(),
               "time_budget_s": args.time_budget, "checks": {n: {} for n in jobs}}
    tables: dict = {}

    def save():
        _save(args.out, summary, tables, start)

    def collect(job: _Job, reason=None):
        name, log_path = jobs[job.name][0], job.log_path
        sub = os.path.join(args.out, job.name)
        entry = {"estimate_s": est[job.name] or None, "exit_code": job.proc.returncode,
                 "log": os.path.relpath(log_path, args.out), "overrides": jobs[job.name][1],
                 "started_s": job.started - start, "seconds": time.time() - job.started}
        try:
            with open(os.path.join(sub, "summary.json")) as f:
                child = json.load(f)["checks"].get(name, {})
        except (OSError, ValueError, KeyError):
            child = {}
        wall = entry["seconds"]
        entry.update(child)
        entry["process_s"] = wall
        if reason is not None or "verdict" not in entry:
            with open(log_path, errors="replace") as f:
                tail = f.read()[-3000:]
            entry.update(verdict="TIMEOUT" if reason else "ERROR", passed=False,
                         reason=(reason or f"exit code {job.proc.returncode}") + "; log tail:\n\n"
                         + tail)
        else:
            try:
                from theory_checks.report import Report, Row, table

                with open(os.path.join(sub, f"{name}.json")) as f:
                    d = json.load(f)
                rep = Report(d["name"], d["claim"], d["source"], d["settings"],
                             rows=[Row(**r) for r in d["rows"]], seconds=d["seconds"],
                             cpu_seconds=d["cpu_seconds"])
                tables[job.name] = table(rep)
            except (OSError, ValueError, KeyError, TypeError):
                pass
        summary["checks"][job.name] = entry

    queue = timing.lpt_order(est)
    running: list = []
    while queue or running:
        left = None if args.time_budget is None else args.time_budget - (time.time() - start)
        while queue and len(running) < args.jobs:
            job = queue.pop(0)
            log_path = os.path.join(args.out, f"{job}.log")
            log = open(log_path, "w")
            name, over = jobs[job]
            proc = subprocess.Popen([sys.executable, "-m", "theory_checks",
                                     *_child_argv(args, name, os.path.join(args.out, job), over)],
                                    stdout=log, stderr=subprocess.STDOUT, env=env)
            running.append(_Job(job, proc, log, log_path, time.time()))
            print(f"[{args.scale}] started {job} (estimate {est[job]:.0f} s)", flush=True)
        time.sleep(0.5)
        left = None if args.time_budget is None else args.time_budget - (time.time() - start)
        for job in list(running):
            reason = None
            if job.proc.poll() is None and left is not None and left <= 0:
                job.proc.kill()
                job.proc.wait()
                reason = f"killed at the --time-budget of {args.time_budget:.0f} s"
            if job.proc.poll() is None:
                continue
            job.log.close()
            running.remove(job)
            collect(job, reason)
            c = summary["checks"][job.name]
            print(f"[{args.scale}] {job.name}: {c['verdict']} in {c['process_s']:.0f} s",
                  flush=True)
            save()
        if left is not None and left <= 0:
            for name in queue:
                summary["checks"][name] = {"estimate_s": est[name] or None, "verdict": "SKIPPED",
                                           "passed": False, "reason": "no time left"}
            queue = []
    summary["finished"] = True
    save()
    ok = all(c.get("passed") for c in summary["checks"].values())
    print(f"report: {os.path.join(args.out, 'report.md')}")
    print("ALL PASSED" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


def main(argv=None) -> int:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # No preallocation of GPU memory (JAX's default takes 75% of it when the backend starts):
    # under --jobs this process and its children share one device, each child within its share
    # of the memory budget.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax

    jax.config.update("jax_enable_x64", True)
    import theory_checks
    from theory_checks import timing
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
                        help="print every selected check's sizes, memory and time estimates and "
                             "power, and the total time; run nothing")
    parser.add_argument("--time-budget", type=float, default=None,
                        help="seconds for the whole run: a check whose time estimate exceeds "
                             "the time left is skipped")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=JSON",
                        help="replace one setting of the scale (JSON value), e.g. "
                             "--set 'algorithms=[\"neural_bo\"]'")
    parser.add_argument("--jobs", type=int, default=None,
                        help="run the checks in this many processes at once (longest estimate "
                             "first; a check with SHARDS as several), each with 1/JOBS of the "
                             f"memory budget; default {timing.GPU_JOBS} at gpu scale, else 1 (in "
                             "this process)")
    args = parser.parse_args(argv)
    if args.jobs is None:
        args.jobs = timing.GPU_JOBS if args.scale == "gpu" else 1
    if args.jobs < 1:
        parser.error(f"--jobs must be >= 1, got {args.jobs}")
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

    sets = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        try:
            sets[key] = json.loads(value)
        except ValueError:
            parser.error(f"--set {item!r}: expected KEY=JSON")
        if not sep:
            parser.error(f"--set {item!r}: expected KEY=JSON")
    # --chunk replaces every stage's chunk; without it each scale's own "chunk" setting holds.
    chunk = dict(sets, **({} if args.chunk is None else {"chunk": args.chunk}))
    for name in names:
        unknown = set(sets) - set(theory_checks.get(name).SCALES[args.scale])
        if unknown:
            parser.error(f"--set: unknown settings {sorted(unknown)} for check {name!r}")

    def estimate_s(name):  # on this machine's device (the dry run's: the GPU's at gpu scale)
        device = "gpu" if args.dry_run and args.scale == "gpu" else timing.local_device()
        return (timing.estimate(name, _settings(name, args.scale, chunk), device)["total"]
                if name in timing.CALIBRATION else None)

    fits = True
    plan = {}
    whole = memory.BUDGET
    if args.jobs > 1 and args.dry_run:  # each process's share, as _parallel gives it
        memory.BUDGET = int(whole / args.jobs)
        print(f"[{args.scale}] {args.jobs} processes, each {memory.gib(memory.BUDGET)} of the "
              f"{memory.gib(whole)} budget", flush=True)
    for job, name, over in jobs_for(names, args.scale, args.jobs):
        module = theory_checks.get(name)
        settings = _settings(name, args.scale, dict(over, **chunk))
        stages = module.memory(settings)
        fits &= max(st.peak for st in stages) <= memory.BUDGET
        if name in timing.CALIBRATION:
            plan[job] = timing.estimate(name, settings)
        if args.dry_run:
            print(f"[{args.scale}] {job}: {_sizes(module, args.scale)}"
                  + (f"; shard {over}" if over else ""))
            print(f"[{args.scale}] " + memory.describe(job, stages))
            if name in timing.CALIBRATION:
                print(f"[{args.scale}] " + timing.describe(name, settings), flush=True)
            else:
                print(f"[{args.scale}] time estimate {name}: none (no calibration in "
                      "theory_checks.timing.CALIBRATION)", flush=True)
    memory.BUDGET = whole
    if args.dry_run:
        total, text = timing.plan_jobs(plan, args.scale, args.jobs)
        n_jobs = len(jobs_for(names, args.scale, args.jobs))
        print(text + (f" ({n_jobs - len(plan)} without an estimate)"
                      if len(plan) < n_jobs else ""))
        if args.scale == "gpu":
            fits &= total <= timing.GPU_FILL * timing.GPU_CALL_SECONDS
        return 0 if fits else 1

    if args.jobs > 1:
        return _parallel(args, names, argv)
    spent = {"n": 0, "s": 0.0}

    def listen(event: str, duration_secs: float, **kwargs: str | int) -> None:
        del kwargs
        if event in timing.COMPILE_EVENTS:
            spent["s"] += duration_secs
            spent["n"] += event == timing.COMPILE_EVENTS[-1]

    jax.monitoring.register_event_duration_secs_listener(listen)
    start = time.time()
    command = "python -m theory_checks " + " ".join(sys.argv[1:] if argv is None else argv)
    summary = {"scale": args.scale, "seed": args.seed, "fault": args.fault, "command": command,
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "load_average_start": os.getloadavg(), "environment": _environment(),
               "time_budget_s": args.time_budget, "checks": {}}
    tables: dict = {}

    def save():
        _save(args.out, summary, tables, start)

    ok = True
    for name in names:
        settings = dict(theory_checks.get(name).SCALES[args.scale], **chunk)
        est = estimate_s(name)
        entry = summary["checks"][name] = {"estimate_s": est}
        left = None if args.time_budget is None else args.time_budget - (time.time() - start)
        if left is not None and est is not None and est > left:
            entry.update(verdict="SKIPPED", passed=False,
                         reason=f"its time estimate {est:.0f} s exceeds the {left:.0f} s left "
                                f"of --time-budget {args.time_budget:.0f}")
            print(f"[{args.scale}] {name}: skipped, {entry['reason']}", flush=True)
            ok = False
            save()
            continue
        print(f"[{args.scale}] " + memory.describe(name, theory_checks.get(name).memory(settings)),
              flush=True)
        if est is not None:
            print(f"[{args.scale}] " + timing.describe(name, settings, timing.local_device()),
                  flush=True)
        spent.update(n=0, s=0.0)
        t0 = time.time()
        try:
            report = theory_checks.run_check(name, jax.random.PRNGKey(args.seed), args.scale,
                                             fault=args.fault, **chunk)
        except Exception as e:  # noqa: BLE001  (one check's crash, e.g. out of memory, is recorded)
            entry.update(verdict="ERROR", passed=False, seconds=time.time() - t0,
                         compile_s=spent["s"], compiles=spent["n"], rows=0, rows_passed=0,
                         reason=f"{type(e).__name__}: {str(e)[:2000]}\n\n"
                                + traceback.format_exc()[-4000:])
            print(f"[{args.scale}] {name}: ERROR {type(e).__name__}: {str(e)[:500]}", flush=True)
            ok = False
            save()
            continue
        tables[name] = table(report)
        print(tables[name], flush=True)
        json_path, png_path = write(report, args.out)
        figure = png_path or "no figure (matplotlib missing: pip install ntkbo[plot])"
        print(f"   wrote {json_path}, {figure}\n", flush=True)
        entry.update(passed=report.passed, verdict="PASS" if report.passed else "FAIL",
                     seconds=report.seconds, cpu_seconds=report.cpu_seconds,
                     compile_s=spent["s"], compiles=spent["n"], rows=len(report.rows),
                     rows_passed=sum(r.passed for r in report.rows))
        ok &= report.passed
        save()
    summary["finished"] = True
    save()
    print("ALL PASSED" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
