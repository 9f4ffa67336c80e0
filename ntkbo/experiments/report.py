"""``ntkbo report DIR``: a study's report from its stored cell files, never by re-running anything.

Reads ``DIR/spec.json`` (optional: its ``reference``, ``scale`` and ``name``) and every
``DIR/cells/*.npz`` through ``ntkbo.experiments.store``, or for a cell without a file its entry in
``DIR/summary.npz`` (``ntkbo.experiments.summary``, which it writes first), and writes

- ``DIR/report.md``: header (spec, scale, seeds, budget, versions, device, command, git revision,
  run times, and where each problem of the user's own came from with its code hash or
  version); per problem a figure and a final-value table (n, mean, sd, median, fraction of seeds
  with a feasible point when constrained, seconds per seed); NeuralBO's Table 2 (one-sided Welch
  tests of every algorithm against the reference, Benjamini-Hochberg over the whole table) in both
  directions (is the reference lower, the paper's question; is the algorithm lower, the question
  against a baseline such as random search); its Table 1 (KS normality p-values of the final
  values); average ranks across problems;
- ``DIR/report.json``: the same numbers, machine-readable;
- ``DIR/tables/<table>.csv`` and ``DIR/tables/<table>.tex`` for every table of ``report.md``
  (their names: ``tables``): the CSV with one header row and the values at full precision
  (``repr`` of the float, empty where the markdown shows a dash), the LaTeX a booktabs
  ``tabular`` with the markdown's cells, special characters escaped (``\\usepackage{booktabs}``
  in the document);
- ``DIR/curves_<problem>.{png,pdf,svg}`` per problem, one figure saved in each format
  (``FIGURE_FORMATS``; matplotlib, the ``plot`` extra; without it the report is written without
  figures and says so).

The value compared is, per seed, the last point of a best-so-far curve to be minimised:

- optimum known: the cell's ``metric``, best simple regret ``min_t f(x_t) - f*`` so far (plus the
  constraint violation ``sum_k [c_k]^+`` when the problem is constrained: Neural-CBO's metric);
  plotted as the mean over seeds of ``log10(max(regret, 1e-12))`` with a 95% t interval (the floor
  keeps an exactly-found optimum finite; it is far below any regret a float32 run resolves);
- optimum unknown: the best noise-free ``f`` so far (plus violation when constrained), plotted on a
  linear scale with a 95% t interval of the mean.

The tests (Welch, KS) take the raw final values, as NeuralBO's tables do; ranks use the mean final
value per problem. A seed whose final value is not finite (every evaluation failed) is left out and
counted in the final-value table.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from typing import Any, NamedTuple

import numpy as np

from ntkbo.experiments import stats, store
from ntkbo.experiments import summary as study_summary

LOG_FLOOR = 1e-12
ALPHA = 0.05  # the FDR level of Table 2's T/F


class Cell(NamedTuple):
    """One cell reduced to what the report needs."""

    algorithm: str  # the spec's algorithm label
    problem: str  # the spec's problem label
    dim: int
    curve: np.ndarray  # (S, B) best-so-far values to minimise
    kind: str  # 'regret' | 'regret+violation' | 'f' | 'f+violation'
    feasible_found: np.ndarray | None  # (S,) bool when constrained, else None
    wall_time: np.ndarray  # (S,)
    n_init: int
    meta: dict
    path: str


def reduce_cell(rec: store.CellRecord) -> Cell:
    """The curve of a cell (module docstring; ``summary.curve``): ``metric`` where the optimum is
    known, else the best ``f`` (plus violation) so far."""
    meta = rec.meta
    prob, alg = meta.get("problem", {}), meta.get("algorithm", {})
    curve, kind, feasible_found = study_summary.curve(rec)
    return Cell(
        algorithm=str(alg.get("label") or alg.get("name")),
        problem=str(prob.get("label") or prob.get("name")),
        dim=int(prob.get("dim", rec.x.shape[-1])),
        curve=curve, kind=kind, feasible_found=feasible_found,
        wall_time=np.asarray(rec.wall_time, dtype=float),
        n_init=int(meta.get("n_init") or 0), meta=meta, path=rec.path)


def from_entry(out: str, e: "study_summary.Entry") -> Cell:
    """A summary entry (``summary.read_summary``) as the report's ``Cell``; equal to
    ``reduce_cell`` of the cell file it was made from (the curve read back in float64)."""
    meta = e.meta
    prob, alg = meta.get("problem", {}), meta.get("algorithm", {})
    return Cell(
        algorithm=str(alg.get("label") or alg.get("name")),
        problem=str(prob.get("label") or prob.get("name")),
        dim=int(prob["dim"]), curve=np.asarray(e.curve, dtype=float), kind=e.kind,
        feasible_found=e.feasible, wall_time=np.asarray(e.wall_time, dtype=float),
        n_init=int(meta.get("n_init") or 0), meta=meta,
        path=f"{study_summary.summary_path(out)}#{e.cell_id}")


def load(out: str) -> tuple[dict | None, list[Cell]]:
    """``(spec or None, cells)`` of an experiment folder in ``store.list_cells``' order: each cell from its
    cell file where ``DIR/cells`` has one (``reduce_cell``), else from ``DIR/summary.npz``
    (``from_entry``; a folder whose raw cells are not kept); ``ValueError`` naming ``DIR`` if it
    holds neither."""
    if not os.path.isdir(out):
        raise ValueError(f"DIR {out!r} is not a folder")
    cells = {e.cell_id: from_entry(out, e) for e in study_summary.read_summary(out)}
    for p in store.list_cells(out):
        c = reduce_cell(store.read_cell(p))
        cells[c.meta["cell_id"]] = c
    if not cells:
        raise ValueError(f"DIR {out!r} has no cell files (expected {store.cells_dir(out)}/*.npz, "
                         f"written by `ntkbo bench`) and no {study_summary.SUMMARY}")
    return store.read_spec(out), [cells[k] for k in sorted(cells, key=study_summary.order)]


def _problem_keys(cells: list[Cell]) -> list[str]:
    """A name per cell's problem: its label, with `` d=<dim>`` added when one label runs at several
    dimensions (the tables also have a ``d`` column)."""
    dims: dict = {}
    for c in cells:
        dims.setdefault(c.problem, set()).add(c.dim)
    return [c.problem if len(dims[c.problem]) == 1 else f"{c.problem} d={c.dim}" for c in cells]


def _ordered(labels: list[str], spec_order: list) -> list[str]:
    seen: list[str] = []
    for label in list(spec_order) + list(labels):
        if label in labels and label not in seen:
            seen.append(label)
    return seen


def _spec_labels(spec: dict | None, what: str) -> list:
    out = []
    for item in (spec or {}).get(what, []) or []:
        if isinstance(item, dict):
            out.append(item.get("label") or item.get("name"))
        elif isinstance(item, str):
            out.append(item)
    return out


#: The two one-sided questions of Table 2, each its own Benjamini-Hochberg family: the paper's
#: (the reference, its proposed method, is lower than each baseline) and the converse (each
#: algorithm is lower than the reference, the question when the reference is random search).
DIRECTIONS = {"reference_lower": "greater", "algorithm_lower": "less"}


def summarise(spec: dict | None, cells: list[Cell], reference: str | None = None) -> dict:
    """Every number of the report as a JSON-able dict (module docstring). Per problem and
    algorithm other than the reference, ``vs_reference`` holds Welch's ``t`` and ``df`` and, per
    ``DIRECTIONS`` key, ``p``, the BH-adjusted ``p_bh`` over all that direction's tests, and
    ``rejected`` (``p_bh <= ALPHA``)."""
    algos = _ordered(_distinct([c.algorithm for c in cells]), _spec_labels(spec, "algorithms"))
    by_problem: dict[str, dict[str, Cell]] = {}
    cells = sorted(cells, key=lambda c: (c.problem, c.dim))
    for c, key in zip(cells, _problem_keys(cells)):
        if c.algorithm in by_problem.setdefault(key, {}):
            raise ValueError(f"two cells for {c.algorithm} on {key}: {by_problem[key][c.algorithm].path}"
                             f" and {c.path}")
        by_problem[key][c.algorithm] = c
    problems = list(by_problem)

    finals = {p: {a: c.curve[:, -1] for a, c in cs.items()} for p, cs in by_problem.items()}
    finite = {p: {a: v[np.isfinite(v)] for a, v in fa.items()} for p, fa in finals.items()}
    mean_table = np.array([[stats.describe(finite[p][a])["mean"] if a in finite[p] else np.nan
                            for a in algos] for p in problems])
    ranks = stats.average_ranks(mean_table)

    ref_source = "--reference"
    if reference is None and (named := (spec or {}).get("reference")):
        reference, ref_source = named, "spec.json"
    if reference is None:  # nothing named: the best average rank
        reference, ref_source = algos[int(np.nanargmin(ranks))], "best average rank (none named)"
    if reference not in algos:
        raise ValueError(f"reference {reference!r} (from {ref_source}) is not an algorithm of this "
                         f"study: {', '.join(algos)}")
    perm = [algos.index(reference)] + [i for i, a in enumerate(algos) if a != reference]
    algos, ranks = [algos[i] for i in perm], ranks[perm]  # the reference first, as Table 1

    table2: dict = {p: {} for p in problems}
    for direction, alternative in DIRECTIONS.items():
        for p, a, res, p_adj, rejected in stats.table2_rows(finite, reference, q=ALPHA,
                                                              alternative=alternative):
            entry = table2[p].setdefault(a, {"t": res.statistic, "df": res.df})
            entry[direction] = {"p": res.pvalue, "p_bh": p_adj, "rejected": rejected}

    out_problems = {}
    for p in problems:
        cs = by_problem[p]
        entry = {"dim": next(iter(cs.values())).dim, "kind": next(iter(cs.values())).kind,
                 "algorithms": {}}
        for a in algos:
            if a not in cs:
                continue
            c = cs[a]
            d = stats.describe(finite[p][a])
            d["n_seeds"] = int(c.curve.shape[0])
            # the plotted quantity's end point: mean log10 regret (a geometric mean), which one
            # stalled seed moves far less than the arithmetic mean
            d["mean_log10"] = (float(np.mean(np.log10(np.maximum(finite[p][a], LOG_FLOOR))))
                               if c.kind.startswith("regret") and finite[p][a].size else None)
            d["n_not_finite"] = int(c.curve.shape[0] - finite[p][a].size)
            d["ks"] = stats.ks_normal(finite[p][a])._asdict()
            d["wall_time_per_seed"] = float(np.mean(c.wall_time))
            d["budget"] = int(c.curve.shape[1])
            if c.feasible_found is not None:
                d["feasible_fraction"] = float(np.mean(c.feasible_found))
            d["vs_reference"] = table2[p].get(a)
            entry["algorithms"][a] = d
        out_problems[p] = entry

    return {"reference": reference, "reference_source": ref_source, "algorithms": algos,
            "problems": out_problems, "average_ranks": dict(zip(algos, map(float, ranks))),
            "ranked_on": "mean final value per problem (1 = lowest; ties averaged)",
            "alpha": ALPHA, "header": _header(spec, cells)}


def _distinct(values):
    out = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def _header(spec: dict | None, cells: list[Cell]) -> dict:
    metas = [c.meta for c in cells]
    get = lambda k: _distinct([m.get(k) for m in metas if m.get(k) is not None])
    seeds = _distinct([int(c.curve.shape[0]) for c in cells])
    return {
        "spec": (spec or {}).get("name"), "scale": (spec or {}).get("scale"),
        "seeds": seeds, "budget": get("budget"), "n_init": get("n_init"), "q": get("q"),
        "dtype": get("dtype"), "versions": get("versions"), "device_kind": get("device_kind"),
        "n_devices": get("n_devices"), "n_processes": get("n_processes"),
        "command": get("command"), "git_revision": get("git_revision"),
        "started": min(get("started"), default=None), "finished": max(get("finished"), default=None),
        "cells": len(cells),
        "wall_time_total_s": float(sum(np.sum(c.wall_time) for c in cells)),
        **_own_problems(cells),
    }


def _own_problems(cells: list[Cell]) -> dict:
    """``{"own_problems": {label: {source, code or version}}}`` for the cells of user-defined
    problems (their definition's ``fingerprint``, ``ntkbo.experiments.spec.fingerprint``); ``{}``
    when there are none, so a study of registered problems reports as before."""
    own: dict = {}
    for c in cells:
        fp = ((c.meta.get("definition") or {}).get("problem") or {}).get("fingerprint")
        if isinstance(fp, dict):
            own.setdefault(c.problem, {k: fp[k] for k in ("source", "code", "version")
                                       if k in fp})
    return {"own_problems": own} if own else {}


# ----------------------------------------------------------------------------------------------
# Figures


def _matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_")


#: The formats each figure is saved in, one ``savefig`` of the same figure per format: PNG for
#: report.md, PDF and SVG (vector) for publication.
FIGURE_FORMATS = ("png", "pdf", "svg")

#: savefig settings per format. TrueType (Type 42) fonts in the PDF, as publishers ask instead of
#: matplotlib's default Type 3; no creation date in the PDF and SVG and a fixed SVG id salt, so
#: that the same cells give the same files.
_SAVE_RC: dict[Any, Any] = {"pdf.fonttype": 42, "svg.hashsalt": "ntkbo"}  # matplotlib rc keys
_SAVE_METADATA = {"pdf": {"CreationDate": None}, "svg": {"Date": None}}


def plot_problem(stem: str, title: str, cells: dict, order: list, plt=None,
                 formats: tuple = ("png",)) -> bool:
    """Overlaid best-so-far curves of every algorithm on one problem, mean and 95% t interval over
    seeds (log10 regret when the optimum is known, module docstring); False without matplotlib.
    ``stem`` is the path without an extension: the figure is saved as ``f'{stem}.{fmt}'`` for each
    of ``formats``."""
    plt = plt or _matplotlib()
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    kind = None
    n_init = 0
    for a in order:
        if a not in cells:
            continue
        c = cells[a]
        kind, n_init = c.kind, max(n_init, c.n_init)
        v = c.curve
        v = v[np.all(np.isfinite(v), axis=1)] if c.kind.startswith("f") else v
        if c.kind.startswith("regret"):
            v = np.log10(np.maximum(np.where(np.isfinite(v), v, np.nan), LOG_FLOOR))
            v = v[np.all(np.isfinite(v), axis=1)]
        if v.shape[0] == 0:
            continue
        mean, lo, hi = stats.t_interval(v)
        n = np.arange(1, mean.size + 1)
        (line,) = ax.plot(n, mean, lw=1.8, label=f"{a} ({v.shape[0]} seeds)")
        ax.fill_between(n, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
    if n_init:
        ax.axvline(n_init, color="0.6", ls=":", lw=1)
    ylabel = {"regret": "log10 simple regret (best so far)",
              "regret+violation": "log10 (best regret + violation)",
              "f": "best f so far", "f+violation": "best f + violation so far"}.get(kind or "", "")
    ax.set_ylabel(ylabel)
    ax.set_xlabel("evaluations")
    what = "log10 values" if kind and kind.startswith("regret") else "values"
    ax.set_title(f"{title}\nmean of the seeds' {what}, 95% t interval of the mean", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    try:
        with plt.rc_context(_SAVE_RC):
            for fmt in formats:
                store.atomic_write(f"{stem}.{fmt}", lambda fh, fmt=fmt: fig.savefig(
                    fh, format=fmt, metadata=_SAVE_METADATA.get(fmt)))
    finally:
        plt.close(fig)
    return True


# ----------------------------------------------------------------------------------------------
# Tables: each built once, written as markdown (in report.md), CSV and LaTeX


def _g(v, digits=4) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:.{digits}g}"


def _p(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:.3g}"


class Column(NamedTuple):
    """A column of a table: its header in markdown and LaTeX, and the CSV column(s) it becomes."""

    header: str
    csv: tuple  # the CSV headers: one per value of the column's cells
    numeric: bool = True  # right-aligned in LaTeX


class Table(NamedTuple):
    """A table of the report. Each cell is ``(text, values)``: the text shown in markdown and
    LaTeX, and the values of its CSV columns (``Column.csv``), unrounded."""

    name: str  # file name without extension, under DIR/tables/
    caption: str  # what the table holds (a comment line of the LaTeX file)
    columns: list
    rows: list  # per row, per column: (text, tuple of values)


def _final_table(p: str, e: dict) -> Table:
    constrained = any("feasible_fraction" in d for d in e["algorithms"].values())
    logs = e["kind"].startswith("regret")
    cols = [Column("algorithm", ("algorithm",), False), Column("seeds", ("seeds", "failed seeds")),
            Column("mean", ("mean",)), Column("sd", ("sd",)), Column("median", ("median",))]
    if logs:
        cols.append(Column("mean log10", ("mean log10",)))
    if constrained:
        cols.append(Column("fraction of seeds with a feasible point",
                           ("fraction of seeds with a feasible point",)))
    cols.append(Column("s/seed", ("s/seed",)))
    rows = []
    for a, d in e["algorithms"].items():
        seeds = f"{d['n']}" + (f" (+{d['n_not_finite']} failed)" if d["n_not_finite"] else "")
        row = [(a, (a,)), (seeds, (d["n"], d["n_not_finite"])), (_g(d["mean"]), (d["mean"],)),
               (_g(d["sd"]), (d["sd"],)), (_g(d["median"]), (d["median"],))]
        if logs:
            row.append((_g(d["mean_log10"], 3), (d["mean_log10"],)))
        if constrained:
            row.append((_g(d.get("feasible_fraction"), 3), (d.get("feasible_fraction"),)))
        rows.append(row + [(_g(d["wall_time_per_seed"], 3), (d["wall_time_per_seed"],))])
    budget = max(d["budget"] for d in e["algorithms"].values())
    return Table(f"final_{_slug(p)}",
                 f"Final {e['kind']} after {budget} evaluations: {p} (d={e['dim']})", cols, rows)


def tables(summary: dict) -> list[Table]:
    """Every table of ``report.md``, in its order: ``final_<problem>`` per problem (the final-value
    table), ``table2_reference_lower`` and ``table2_algorithm_lower`` (the two one-sided Welch
    questions; CSV: ``p``, the BH-adjusted ``p_bh`` and ``rejected`` per algorithm),
    ``table1_ks`` (KS normality p-values) and ``average_ranks``."""
    ref, algos = summary["reference"], summary["algorithms"]
    others = [a for a in algos if a != ref]
    out, names = [], set()
    for p, e in summary["problems"].items():
        t = _final_table(p, e)
        name, i = t.name, 1
        while name in names:  # two labels with one slug
            i += 1
            name = f"{t.name}_{i}"
        names.add(name)
        out.append(t._replace(name=name))

    lead = [Column("problem", ("problem",), False), Column("d", ("d",))]
    captions = {"reference_lower": f"One-sided Welch t-tests, Ha: mean(algorithm) > mean({ref})",
                "algorithm_lower": f"One-sided Welch t-tests, Ha: mean(algorithm) < mean({ref})"}
    for direction, caption in captions.items():
        cols = lead + [Column(a, (f"{a} p", f"{a} p_bh", f"{a} rejected")) for a in others]
        rows = []
        for p, e in summary["problems"].items():
            row = [(p, (p,)), (str(e["dim"]), (e["dim"],))]
            for a in others:
                w = (e["algorithms"].get(a) or {}).get("vs_reference")
                if w is None:
                    row.append(("—", (None, None, None)))
                    continue
                w = w[direction]
                row.append((f"({_p(w['p'])}, {'T' if w['rejected'] else 'F'})",
                            (w["p"], w["p_bh"], bool(w["rejected"]))))
            rows.append(row)
        out.append(Table(f"table2_{direction}", caption + f" (BH at FDR {summary['alpha']})",
                         cols, rows))

    rows = []
    for p, e in summary["problems"].items():
        row = [(p, (p,)), (str(e["dim"]), (e["dim"],))]
        for a in algos:
            v = e["algorithms"][a]["ks"]["pvalue"] if a in e["algorithms"] else None
            row.append((_p(v), (v,)))
        rows.append(row)
    out.append(Table("table1_ks", "KS normality p-values of the final values",
                     lead + [Column(a, (a,)) for a in algos], rows))

    ranked = sorted(summary["average_ranks"].items(), key=lambda kv: (math.isnan(kv[1]), kv[1]))
    out.append(Table("average_ranks", f"Average rank of each algorithm's {summary['ranked_on']}",
                     [Column("algorithm", ("algorithm",), False),
                      Column("average rank", ("average rank",))],
                     [[(a, (a,)), (_g(r, 3), (r,))] for a, r in ranked]))
    return out


def table_markdown(t: Table) -> list[str]:
    """The table's markdown lines."""
    return (["| " + " | ".join(c.header for c in t.columns) + " |",
             "|" + "---|" * len(t.columns)]
            + ["| " + " | ".join(text for text, _ in row) + " |" for row in t.rows])


def _csv_value(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))  # the shortest string that reads back as the same float
    return str(v)


def table_csv(t: Table) -> str:
    """The table as CSV: one header row (``Column.csv``), then one row per table row."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([h for c in t.columns for h in c.csv])
    for row in t.rows:
        w.writerow([_csv_value(v) for _, values in row for v in values])
    return buf.getvalue()


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                  "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
                  "—": "---"}


def latex_escape(s: str) -> str:
    """``s`` as LaTeX text: ``\\ & % $ # _ { } ~ ^ < >`` escaped, the dash of a missing value as
    ``---``."""
    return re.sub("|".join(map(re.escape, _LATEX_SPECIAL)), lambda m: _LATEX_SPECIAL[m.group()], s)


def table_latex(t: Table) -> str:
    """The table as a booktabs ``tabular`` (``\\toprule``, ``\\midrule``, ``\\bottomrule``) with the
    markdown's cells, preceded by a comment with its caption; text columns left-aligned, numbers
    right-aligned."""
    spec = "".join("r" if c.numeric else "l" for c in t.columns)
    line = lambda cells: " & ".join(latex_escape(x) for x in cells) + r" \\"
    return "\n".join([f"% {latex_escape(t.caption)}",
                      "% written by `ntkbo report`; needs \\usepackage{booktabs}",
                      rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
                      line(c.header for c in t.columns), r"\midrule"]
                     + [line(text for text, _ in row) for row in t.rows]
                     + [r"\bottomrule", r"\end{tabular}", ""])


# ----------------------------------------------------------------------------------------------
# Markdown


def _table_links(t: Table) -> str:
    return f"Also as [CSV](tables/{t.name}.csv) and [LaTeX](tables/{t.name}.tex)."


def render(summary: dict, figures: dict, plot_note: str | None,
           tabs: list[Table] | None = None) -> str:
    """The markdown of ``report.md`` from ``summarise``'s dict, the written figures (problem ->
    PNG name; its PDF and SVG are linked beside it) and ``tables(summary)`` (computed when not
    given)."""
    h, ref, algos = summary["header"], summary["reference"], summary["algorithms"]
    tabs = tables(summary) if tabs is None else tabs
    finals, rest = tabs[:len(summary["problems"])], {t.name: t for t in tabs}
    lines = [f"# Report: {h['spec'] or 'experiment'}", ""]
    one = lambda xs: ", ".join(map(str, xs)) if xs else "—"
    lines += [
        f"- spec: `{h['spec']}`, scale `{h['scale']}`; {h['cells']} cells; seeds {one(h['seeds'])}; "
        f"budget {one(h['budget'])}; n_init {one(h['n_init'])}; q {one(h['q'])}; "
        f"dtype {one(h['dtype'])}",
        f"- device: {one(h['device_kind'])} x {one(h['n_devices'])}, "
        f"{one(h['n_processes'])} process(es); run {h['started']} .. {h['finished']} UTC; "
        f"{h['wall_time_total_s']:.0f} s of cell time",
        f"- command: {one(['`' + c + '`' for c in h['command']])}",
        f"- git revision: {one(h['git_revision'])}",
        "- versions: " + one([", ".join(f"{k} {v}" for k, v in sorted(vs.items()))
                               for vs in h["versions"]]),
        f"- reference: **{ref}** ({summary['reference_source']})",
        *([("- problems of your own: " + "; ".join(
            f"`{p}` from {fp.get('source')}, " + (f"version {fp['version']}" if "version" in fp
                                                  else f"code {str(fp.get('code'))[:12]}")
            for p, fp in h["own_problems"].items()))] if h.get("own_problems") else []),
        "",
        "Values are to be minimised: the best simple regret so far (`metric`) where the optimum is "
        "known (plus the constraint violation when constrained), else the best noise-free f so far. "
        "Curves: mean over seeds (of log10 regret where the optimum is known) with a 95% t "
        "interval; tables use the final values.",
        "",
    ]
    if plot_note:
        lines += [f"> {plot_note}", ""]

    lines += ["## Per problem", ""]
    for (p, e), t in zip(summary["problems"].items(), finals):
        lines += [f"### {p} (d={e['dim']})", ""]
        if p in figures:
            stem = os.path.splitext(figures[p])[0]
            lines += [f"![{p}]({figures[p]})", "",
                      f"Also as [PDF]({stem}.pdf) and [SVG]({stem}.svg).", ""]
        budget = max(d["budget"] for d in e["algorithms"].values())
        lines += [f"Final {e['kind']} after {budget} evaluations:", ""]
        lines += table_markdown(t) + ["", _table_links(t), ""]

    others = [a for a in algos if a != ref]
    n_tests = sum(1 for e in summary["problems"].values() for a in others
                  if (e["algorithms"].get(a) or {}).get("vs_reference"))
    lines += [
        f"## One-sided Welch t-tests against {ref} (NeuralBO's Table 2)", "",
        f"Welch's t-test on the final values of each algorithm against {ref}'s, one-sided, each "
        f"question its own family of {n_tests} tests. Each cell is (p, T/F): T when H0 is "
        f"rejected after Benjamini-Hochberg at FDR {summary['alpha']} (the adjusted p-values are "
        "in report.json and the CSV files).", "",
    ]
    questions = {
        "reference_lower": (f"Is {ref} lower? H0: mean(algorithm) <= mean({ref}), Ha: "
                            f"mean(algorithm) > mean({ref}) (the paper's Table 2, its proposed "
                            "method as the reference)"),
        "algorithm_lower": (f"Is the algorithm lower than {ref}? H0: mean(algorithm) >= "
                            f"mean({ref}), Ha: mean(algorithm) < mean({ref})"),
    }
    for direction, question in questions.items():
        t = rest[f"table2_{direction}"]
        lines += [f"{question}:", ""] + table_markdown(t) + ["", _table_links(t), ""]

    t = rest["table1_ks"]
    lines += [
        "## KS normality p-values (NeuralBO's Table 1)", "",
        "Kolmogorov-Smirnov test of each sample of final values against the normal with the "
        "sample's own mean and sd (ddof=1), exact two-sided law (as `scipy.stats.kstest(z, 'norm')`"
        " on standardised data). Estimating the mean and sd makes these p-values conservative "
        "(it is not Lilliefors' test), as in the paper's table.", ""]
    lines += table_markdown(t) + ["", _table_links(t), ""]

    t = rest["average_ranks"]
    lines += ["## Average ranks across problems", "",
              f"Rank of each algorithm's {summary['ranked_on']}, averaged over the "
              f"{len(summary['problems'])} problem(s).", ""]
    lines += table_markdown(t) + ["", _table_links(t), ""]
    return "\n".join(lines)


def write_report(out: str, reference: str | None = None, plots: bool = True) -> dict:
    """Reads ``out``'s cells (``load``) and writes ``out/summary.npz`` (``summary.write_summary``),
    ``out/report.md``, ``out/report.json``, each table as
    ``out/tables/<name>.csv`` and ``.tex``, and the figures (``curves_<problem>`` in each of
    ``FIGURE_FORMATS``); returns the summary dict with ``report`` (the markdown's path),
    ``figures`` (problem -> PNG name), ``figure_files`` (problem -> every format's name) and
    ``tables`` (table name -> ``{'csv': path, 'tex': path}``) added."""
    study_summary.write_summary(out)
    spec, cells = load(out)
    summary = summarise(spec, cells, reference)
    figures, figure_files, note = {}, {}, None
    plt = _matplotlib() if plots else None
    if plots and plt is None:
        note = ("matplotlib is not installed (the `plot` extra: `pip install ntkbo[plot]`), so this "
                "report has no figures.")
    elif not plots:
        note = "Figures were not requested (--no-plot)."
    if plt is not None:
        by_problem: dict = {}
        for c, key in zip(cells, _problem_keys(cells)):
            by_problem.setdefault(key, {})[c.algorithm] = c
        stems: set = set()
        for p in summary["problems"]:
            stem, i = f"curves_{_slug(p)}", 1
            while stem in stems:  # two labels with one slug
                i += 1
                stem = f"curves_{_slug(p)}_{i}"
            stems.add(stem)
            title = f"{p} (d={summary['problems'][p]['dim']})"
            if plot_problem(os.path.join(out, stem), title, by_problem[p], summary["algorithms"],
                            plt, formats=FIGURE_FORMATS):
                figures[p] = f"{stem}.png"
                figure_files[p] = [f"{stem}.{fmt}" for fmt in FIGURE_FORMATS]
    tabs = tables(summary)
    table_files = {}
    for t in tabs:
        paths = {"csv": os.path.join(out, "tables", f"{t.name}.csv"),
                 "tex": os.path.join(out, "tables", f"{t.name}.tex")}
        for fmt, text in (("csv", table_csv(t)), ("tex", table_latex(t))):
            data = text.encode()
            store.atomic_write(paths[fmt], lambda fh, b=data: fh.write(b))
        table_files[t.name] = paths
    text = render(summary, figures, note, tabs)
    path = os.path.join(out, "report.md")
    store.atomic_write(path, lambda fh: fh.write(text.encode()))
    summary = dict(summary, report=path, figures=figures, figure_files=figure_files,
                   tables=table_files)
    js = json.dumps(summary, indent=1, default=_json_default)
    store.atomic_write(os.path.join(out, "report.json"), lambda fh: fh.write(js.encode()))
    return summary


def _json_default(o):
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.bool_):
        return bool(o)
    raise TypeError(type(o))
