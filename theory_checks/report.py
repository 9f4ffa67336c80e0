"""The report every check returns: rows (claim, measured value, tolerance, pass flag) and curves.

A ``Report`` is plain data. ``write(report, out_dir)`` writes ``<name>.json`` (the report, settings
and curves) and ``<name>.png`` (one log-log panel per distinct ``Curve.panel``, matplotlib's Agg
backend), and ``table(report)`` formats the rows for the terminal.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from typing import Any

import numpy as np


@dataclasses.dataclass
class Row:
    """One claim measured once.

    Attributes:
      quantity: what is measured (e.g. ``"log-log slope of |Theta_m - Theta| vs m, relu depth 1"``).
      measured: the measured value (a float; NaN when it could not be computed, which fails).
      tolerance: the pass rule, stated in advance (e.g. ``"in [-0.7, -0.3]"``).
      passed: whether ``measured`` satisfies ``tolerance``.
      expected: the theory's value (free text, e.g. ``"-1/2"``).
    """

    quantity: str
    measured: float
    tolerance: str
    passed: bool
    expected: str = ""


@dataclasses.dataclass
class Curve:
    """A line of the PNG: ``y`` against ``x`` on panel ``panel`` (log-log unless ``log=False``)."""

    panel: str
    label: str
    x: list
    y: list
    log: bool = True


@dataclasses.dataclass
class Report:
    """What ``run(key, settings)`` returns (see ``theory_checks`` for the interface)."""

    name: str
    claim: str
    source: str
    settings: dict
    rows: list = dataclasses.field(default_factory=list)
    curves: list = dataclasses.field(default_factory=list)
    seconds: float = float("nan")
    cpu_seconds: float = float("nan")
    notes: str = ""

    @property
    def passed(self) -> bool:
        """True when every row passed (and there is at least one row)."""
        return bool(self.rows) and all(r.passed for r in self.rows)

    def add(self, quantity: str, measured, tolerance: str, passed, expected: str = "") -> Row:
        """Appends a row; a non-finite ``measured`` value always fails."""
        value = float(measured)
        row = Row(quantity, value, tolerance, bool(passed) and math.isfinite(value), expected)
        self.rows.append(row)
        return row

    def curve(self, panel: str, label: str, x, y, log: bool = True) -> None:
        """Appends a curve (arrays are stored as lists of floats)."""
        self.curves.append(Curve(panel, label, [float(v) for v in np.ravel(x)],
                                 [float(v) for v in np.ravel(y)], log))

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["passed"] = self.passed
        return d


def within(value: float, low: float, high: float) -> bool:
    """``low <= value <= high`` for a finite ``value``."""
    return math.isfinite(value) and low <= value <= high


def _jsonable(obj: Any):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.generic,)):
        return obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    return obj


def table(report: Report) -> str:
    """The rows as a fixed-width text table with the overall verdict."""
    head = ("quantity", "measured", "tolerance", "expected", "ok")
    lines = [(r.quantity, f"{r.measured:.4g}", r.tolerance, r.expected, "PASS" if r.passed else "FAIL")
             for r in report.rows]
    widths = [max(len(h), *(len(line[i]) for line in lines)) if lines else len(h)
              for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [f"== {report.name}: {report.claim}", f"   source: {report.source}",
           fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*line) for line in lines]
    verdict = "PASS" if report.passed else "FAIL"
    out.append(f"   {verdict} ({sum(r.passed for r in report.rows)}/{len(report.rows)} rows) "
               f"in {report.seconds:.1f} s wall, {report.cpu_seconds:.1f} s CPU")
    return "\n".join(out)


def write(report: Report, out_dir: str) -> tuple[str, str | None]:
    """Writes ``<out_dir>/<name>.json`` and, when matplotlib (the ``plot`` extra) is installed,
    ``<out_dir>/<name>.png``; returns their paths (``None`` for the figure without matplotlib)."""
    os.makedirs(out_dir, exist_ok=True)
    json_path = os.path.join(out_dir, f"{report.name}.json")
    with open(json_path, "w") as f:
        json.dump(_jsonable(report.to_dict()), f, indent=1)
    try:
        import matplotlib  # noqa: F401  (optional: the ``plot`` extra)
    except ImportError:
        return json_path, None
    png_path = os.path.join(out_dir, f"{report.name}.png")
    _plot(report, png_path)
    return json_path, png_path


def _plot(report: Report, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(dict.fromkeys(c.panel for c in report.curves)) or ["(no curves)"]
    cols = min(3, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.5 * cols, 3.6 * rows), squeeze=False)
    for ax, panel in zip(axes.ravel(), panels):
        for c in report.curves:
            if c.panel != panel:
                continue
            x, y = np.asarray(c.x), np.asarray(c.y)
            ok = np.isfinite(x) & np.isfinite(y) & ((x > 0) & (y > 0) if c.log else True)
            ax.plot(x[ok], y[ok], "o-" if len(x) < 30 else "-", label=c.label, ms=3)
            if c.log:
                ax.set_xscale("log")
                ax.set_yscale("log")
        ax.set_title(panel, fontsize=9)
        ax.legend(fontsize=7)
    for ax in axes.ravel()[len(panels):]:
        ax.axis("off")
    fig.suptitle(f"{report.name}: {'PASS' if report.passed else 'FAIL'}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
