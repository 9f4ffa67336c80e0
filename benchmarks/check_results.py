"""Which committed studies are stale against the current code: a maintenance check, not a test.

For every folder of ``benchmarks/results`` with a ``spec.json`` (``ntkbo.experiments.runner``'s
record) each spec that describes it is resolved again with the current code, in the dtype its
cells ran in, and every cell's digest (its resolved definition: options with their defaults,
problem, budget, keys, dtype) is compared with the folder's (``spec.json``, ``summary.npz``, cell
files where present). The specs: ``recorded`` (the folder's own: stale means re-running its command
would give other numbers), ``shipped`` (``benchmarks/specs/NAME.toml`` for ``NAME-cpu`` and
``NAME``) and ``protocol`` (``defaults.py``'s ``dev_spec`` / ``panel_spec`` for ``defaults-cpu``,
``defaults-constrained-cpu``, ``low-budget-cpu``). One row per folder and spec: ``current``,
``incomplete`` or ``stale`` with the first differing cell and field, and the cell dtypes. Exit
status 1 when a shipped or protocol spec is stale, or a shipped spec's cells ran in another dtype
than ``ntkbo bench``'s default (it would not resume them). The fix: pin the setting in the spec, or
re-run the study's command (its report's header) and ``ntkbo summary FOLDER``. ``--reports``
instead regenerates each folder's reports from ``summary.npz`` alone and compares them with the
committed ones. Commands: ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys

import jax

from ntkbo.experiments import runner, store, summary
from ntkbo.experiments.spec import Spec

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
SPECS = os.path.join(HERE, "specs")
#: ``spec.json``'s fields that ``runner.resolved_record`` adds to ``Spec.to_dict()``.
_RECORD_ONLY = ("scale", "scale_caps", "cells")


def study_folders(root: str = RESULTS) -> list[str]:
    """The folders under ``root`` with a ``spec.json``, sorted."""
    return sorted(os.path.dirname(p) for p in glob.glob(os.path.join(root, "*", store.SPEC)))


def stored_metas(out: str) -> dict:
    """``{cell_id: meta}`` of the folder's cells: the summary's entries, updated by the cell files
    present."""
    metas = {e.cell_id: e.meta for e in summary.read_summary(out)}
    metas.update({store.read_meta(p)["cell_id"]: store.read_meta(p)
                  for p in store.list_cells(out)})
    return metas


def candidate_specs(out: str, recorded: dict) -> list[tuple[str, Spec]]:
    """``(kind, Spec)`` for the folder: ``recorded``, and ``shipped`` / ``protocol`` where one
    exists (module docstring)."""
    specs = [("recorded", Spec.from_dict({k: v for k, v in recorded.items()
                                          if k not in _RECORD_ONLY}))]
    name = os.path.basename(out)
    for stem in (name[: -len("-cpu")] if name.endswith("-cpu") else None, name):
        path = os.path.join(SPECS, f"{stem}.toml") if stem else None
        if path and os.path.exists(path) and not stem.endswith("_coco"):
            specs.append(("shipped", Spec.from_toml(path)))
            break
    from benchmarks import defaults as D

    protocol = {"defaults-cpu": lambda: D.dev_spec(),
                "defaults-constrained-cpu": lambda: D.dev_spec(suite="dev_constrained"),
                "low-budget-cpu": lambda: D.panel_spec()}
    if name in protocol:
        specs.append(("protocol", protocol[name]()))
    return specs


def check(out: str, spec: Spec, scale: str, dtypes: set, metas: dict) -> str:
    """``current``, ``incomplete (n of m cells)`` or ``stale: <reason>`` for one spec."""
    x64 = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", dtypes == {"float64"})
    try:
        cells = spec.resolve(scale)
        runner.check_compatible(out, spec, scale, cells)  # spec.json's digests, cell files'
    except ValueError as err:
        return "stale: " + str(err).replace(f"{out}: ", "").replace(
            "; the spec changed, use another --out", "")
    finally:
        jax.config.update("jax_enable_x64", x64)
    by_id = {c.cell_id: c for c in cells}
    for cid, meta in sorted(metas.items()):  # the summary's digests (cells not kept as files)
        if cid not in by_id:
            return f"stale: stored cell {cid!r} is not in this spec at scale {scale!r}"
        if meta.get("digest") != by_id[cid].digest:
            field = runner._first_difference(meta.get("definition", {}), by_id[cid].definition())
            return f"stale: cell {cid!r} differs in field {field!r}"
    missing = sorted(set(by_id) - set(metas))
    return f"incomplete ({len(metas)} of {len(by_id)} cells)" if missing else "current"


def regenerate(out: str) -> dict:
    """Writes ``out``'s reports again from what ``out`` holds (cell files, else ``summary.npz``):
    ``report.md`` (``ntkbo report``), ``defaults.md`` (``defaults.py --report-only``, with the
    ``--paired`` pairs its committed table lists) and ``panel.md`` (``--panel low_budget``), where
    the folder has one; returns ``{file name: text}``."""
    import contextlib
    import io
    import re

    from benchmarks import defaults as D
    from ntkbo.experiments import report

    made = {}
    if os.path.exists(os.path.join(out, "report.md")):
        report.write_report(out)
        made["report.md"] = None
    if os.path.exists(os.path.join(out, "defaults.md")):
        with open(os.path.join(out, "defaults.md")) as fh:
            pairs = re.findall(r"^\| (\S+) \| (\S+) \| \d+ \| [\d.]+ \| [\d.]+ \|", fh.read(), re.M)
        with contextlib.redirect_stdout(io.StringIO()):
            D.main(["--report-only", "--out", out]
                   + [x for a, b in pairs for x in ("--paired", f"{a}:{b}")])
        made["defaults.md"] = None
    if os.path.exists(os.path.join(out, "panel.md")):
        with contextlib.redirect_stdout(io.StringIO()):
            D.main(["--panel", "low_budget", "--report-only", "--out", out])
        made["panel.md"] = None
    for name in made:
        with open(os.path.join(out, name)) as fh:
            made[name] = fh.read()
    return made


def check_reports(out: str) -> str:
    """Regenerates ``out``'s reports in a temporary copy holding only ``spec.json``,
    ``summary.npz`` and the reports (``regenerate``) and compares them with the committed ones:
    ``identical`` or the files that differ."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, os.path.basename(out))
        shutil.copytree(out, copy, ignore=shutil.ignore_patterns(store.CELLS))
        made = regenerate(copy)
    differ = []
    for name, text in made.items():
        with open(os.path.join(out, name)) as fh:
            if fh.read() != text:
                differ.append(name)
    if not made:
        return "no report"
    return "identical" if not differ else "differs: " + ", ".join(differ)


def main(argv=None) -> int:
    from ntkbo import cli

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", help="folder names under benchmarks/results "
                        "(default: every folder with a spec.json)")
    parser.add_argument("--reports", action="store_true",
                        help="instead: regenerate each folder's reports from its summary.npz "
                        "alone and say whether they equal the committed ones")
    args = parser.parse_args(argv)
    folders = study_folders()
    if args.folders:
        unknown = sorted(set(args.folders) - {os.path.basename(f) for f in folders})
        if unknown:
            parser.error(f"folders: no study folder {unknown} under {RESULTS}")
        folders = [f for f in folders if os.path.basename(f) in args.folders]
    if args.reports:
        print("| folder | reports from summary.npz |\n|---|---|")
        for out in folders:
            print(f"| {os.path.basename(out)} | {check_reports(out)} |")
        return 0
    print("| folder | spec | status | cells | dtype |\n|---|---|---|---|---|")
    failed = False
    for out in folders:
        recorded = store.read_spec(out)
        metas = stored_metas(out)
        dtypes = {m.get("definition", {}).get("dtype") for m in metas.values()} - {None}
        default = cli.DEFAULT_DTYPE["bench"]
        dtype = ", ".join(sorted(dtypes)) + ("" if dtypes == {default} else
                                             f" (ntkbo bench's default: {default})")
        for kind, spec in candidate_specs(out, recorded):
            status = check(out, spec, recorded["scale"], dtypes, metas)
            failed |= kind != "recorded" and status.startswith("stale")
            # a shipped spec's study resumes under `ntkbo bench SPEC --out FOLDER` only in the
            # dtype its cells ran in, which should be bench's default
            failed |= kind == "shipped" and dtypes != {default}
            print(f"| {os.path.basename(out)} | {kind} | {status} | {len(metas)} | {dtype} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(HERE))  # `from benchmarks import defaults`
    sys.exit(main())
