"""A COCO/BBOB study from a spec: every algorithm through ``ntkbo coco``, then one ECDF report.

    python benchmarks/coco_study.py benchmarks/specs/neuralbo_coco.toml --scale cpu \
        --out runs/neuralbo_coco --report benchmarks/results/neuralbo_coco

The spec (TOML): ``name``; ``dims`` (list), ``instances`` and ``functions`` (range text such as
``"1-15"``), ``budget_multiplier``, ``seed``; ``[[algorithms]]`` with ``label``, ``name`` and
``options``; ``[scales.NAME]`` tables replacing any of ``dims``, ``instances``, ``functions``,
``budget_multiplier``, with ``[scales.NAME.options.LABEL]`` tables merged into that algorithm's
options at that scale. ``full`` runs the spec as written.

Each algorithm writes ``OUT/LABEL/`` (cocoex's folder ``OUT/LABEL/LABEL`` for ``cocopp``, and
``ntkbo_runs.npz``); an algorithm whose folder already holds a complete record is skipped, so an
interrupted study is resumed by running the same command. The report
(``ntkbo.experiments.coco.report``) goes to ``--report`` (default ``OUT``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tomllib

import jax

jax.config.update("jax_enable_x64", True)  # targets go down to 1e-8, as ``ntkbo coco`` does

from ntkbo import cache  # noqa: E402
from ntkbo.experiments import coco  # noqa: E402
from ntkbo.parts import merge  # noqa: E402

FIELDS = ("dims", "instances", "functions", "budget_multiplier")


def resolve(spec: dict, scale: str) -> tuple[dict, list[dict]]:
    """The study's settings and its algorithms (label, name, options) at ``scale``."""
    settings = {k: spec[k] for k in FIELDS}
    settings["seed"] = spec.get("seed", 0)
    over = dict(spec.get("scales", {}).get(scale, {}))
    if scale != "full" and scale not in spec.get("scales", {}):
        raise ValueError(f"--scale {scale!r}: the spec has no [scales.{scale}] table; choose one "
                         f"of: full, {', '.join(spec.get('scales', {}))}")
    extra = over.pop("options", {})
    unknown = sorted(set(over) - set(FIELDS))
    if unknown:
        raise ValueError(f"[scales.{scale}]: unknown field(s) {', '.join(unknown)}")
    settings.update(over)
    algorithms = []
    for a in spec["algorithms"]:
        label = a.get("label", a["name"])
        algorithms.append({"label": label, "name": a["name"],
                           "options": merge(a.get("options", {}), extra.get(label, {}))})
    return settings, algorithms


def complete(folder: str) -> bool:
    try:
        return bool(coco.read_runs(folder)["meta"].get("complete"))
    except (FileNotFoundError, OSError, KeyError, ValueError):
        return False


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("spec")
    p.add_argument("--scale", default="full")
    p.add_argument("--out", default=None, help="default: runs/<name>-<scale>")
    p.add_argument("--report", default=None, help="the report's folder (default: --out)")
    args = p.parse_args(argv)
    with open(args.spec, "rb") as fh:
        spec = tomllib.load(fh)
    settings, algorithms = resolve(spec, args.scale)
    out = args.out or os.path.join("runs", f"{spec['name']}-{args.scale}")
    cache.enable()
    folders = []
    for a in algorithms:
        folder = os.path.join(out, a["label"])
        folders.append(folder)
        if complete(folder):
            print(f"{a['label']}: complete record in {folder}, skipped", file=sys.stderr)
            continue
        if os.path.exists(folder):  # an interrupted run: cocoex needs a new folder
            os.replace(folder, folder + f".interrupted-{os.getpid()}")
        coco.run(a["name"], dims=settings["dims"],
                 instances=coco.parse_ints(str(settings["instances"]), "instances"),
                 functions=coco.parse_ints(str(settings["functions"]), "functions"),
                 budget_multiplier=settings["budget_multiplier"], out=folder,
                 options=a["options"], seed=settings["seed"], write_report=False)
    report = coco.report(folders, out=args.report or out)
    print(f"report: {report.get('markdown', args.report or out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
