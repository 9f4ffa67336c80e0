"""A study's compact per-seed summary, ``DIR/summary.npz``: what its reports need, without raw x.

The cell files (``store``) hold every evaluation; a report needs per seed only the best-so-far
curve it plots and tests, and the panel of ``benchmarks/defaults.py`` one statistic of ``x`` (the
revisit share). ``write_summary(DIR)`` reduces every cell file of ``DIR`` to that (``summarise_cell``)
and keeps the entries of an earlier summary whose cell file is absent (a folder whose raw cells
were not kept); ``read_summary`` reads it back; ``report.load`` reads a folder from its cell files
where there are some and from the summary for the rest. ``runner.run`` and ``ntkbo report`` write
it; ``ntkbo summary DIR...`` writes it for existing folders.

Layout (schema 1; ``S`` seeds, ``B`` budget; ``i`` the entry's index in ``index['cells']``):

================  =========  ==============================================================
name              shape      meaning
================  =========  ==============================================================
``index``         () str     JSON: ``{'schema': 1, 'cells': [{'cell_id', 'kind', 'meta'}]}``,
                             ``meta`` the cell file's meta (``store``), ``kind`` the curve's
``{i}.curve``     (S, B)     best-so-far value to minimise (``report`` module docstring): the
                             cell's ``metric`` where the optimum is known, else the running
                             minimum of ``f`` (plus violation); in the run's dtype when that is
                             exact (the metric, the best ``f``), else float64
``{i}.keys``      (S, 2)     uint32 key data of each seed
``{i}.seeds``     (S,)       seed indices
``{i}.wall_time`` (S,)       seconds per seed
``{i}.revisit``   (S,)       ``revisit_share`` of each seed's run
``{i}.feasible``  (S,) bool  a feasible point was found (constrained cells only)
================  =========  ==============================================================

The final value of seed ``s`` is ``curve[s, -1]``.
"""

from __future__ import annotations

import io
import json
import os
from typing import NamedTuple

import numpy as np

from ntkbo.experiments import migrations, store

#: The version of the summary layout; ``read_summary`` refuses other versions.
SCHEMA = 1
SUMMARY = "summary.npz"
#: A step "revisits" when its point lies within this fraction of the box's width, in every
#: coordinate, of an earlier evaluation (``revisit_share``).
REVISIT = 1e-2
_ARRAYS = ("curve", "keys", "seeds", "wall_time", "revisit")


def summary_path(out: str) -> str:
    """``out/summary.npz``."""
    return os.path.join(out, SUMMARY)


def revisit_share(x, bounds, n_init: int) -> float:
    """Of the evaluations after the first ``n_init`` of one run ``x`` ``(B, d)``, the share within
    ``REVISIT`` of the box's width (Chebyshev distance of the points scaled to the unit box) of
    an earlier evaluation; NaN when the run has no evaluation after ``n_init``. ``bounds``:
    ``(2, d)`` lower and upper corners."""
    lo, hi = (np.asarray(b, float) for b in bounds)
    u = (np.asarray(x, float) - lo) / np.where(hi > lo, hi - lo, 1.0)
    close = np.tril(np.abs(u[:, None, :] - u[None, :, :]).max(-1) <= REVISIT, -1)
    later = close.any(axis=1)[n_init:]
    return float(later.mean()) if later.size else float("nan")


def _best_so_far(v: np.ndarray) -> np.ndarray:
    """``ntkbo.loop.best_so_far`` of ``v`` with a NaN counted as +inf (``curve``)."""
    from ntkbo.loop import best_so_far

    return best_so_far(np.where(np.isnan(v), np.inf, v))


def curve(rec: store.CellRecord) -> tuple[np.ndarray, str, np.ndarray | None]:
    """``(curve, kind, feasible_found)`` of a cell, float64: the value the reports minimise
    (``ntkbo.experiments.report``'s docstring), per seed and evaluation ``(S, B)``. Where the
    optimum is known, the cell's ``metric`` (best regret so far, plus the violation
    ``sum_k [c_k]^+`` when constrained), kind ``regret`` or ``regret+violation``; else the running
    minimum of ``f`` (plus violation), kind ``f`` or ``f+violation`` (a NaN counts as +inf).
    ``feasible_found`` ``(S,)``: a feasible point was evaluated (None when unconstrained)."""
    k = rec.c.shape[-1] if rec.c.ndim == 3 else 0
    metric = np.asarray(rec.metric, dtype=float)
    known = rec.meta.get("problem", {}).get("optimum") is not None and not np.all(np.isnan(metric))
    if known:
        values, kind = metric, ("regret+violation" if k else "regret")
    else:
        f = np.asarray(rec.f, dtype=float)
        if k:
            f = f + np.sum(np.maximum(np.asarray(rec.c, dtype=float), 0.0), axis=-1)
        values, kind = _best_so_far(f), ("f+violation" if k else "f")
    return values, kind, (np.asarray(np.asarray(rec.feasible).any(axis=1)) if k else None)


class Entry(NamedTuple):
    """One cell of a summary: arrays with the shapes of the module docstring, ``feasible`` None
    when the cell is unconstrained, ``meta`` the cell file's meta."""

    cell_id: str
    kind: str
    curve: np.ndarray
    keys: np.ndarray
    seeds: np.ndarray
    wall_time: np.ndarray
    revisit: np.ndarray
    feasible: np.ndarray | None
    meta: dict


def summarise_cell(rec: store.CellRecord) -> Entry:
    """The summary entry of a cell file read by ``store.read_cell`` (module docstring); the curve
    is ``curve``'s, stored in the run's dtype when that cast is exact."""
    values, kind, feasible = curve(rec)
    narrow = values.astype(rec.metric.dtype)
    if np.array_equal(narrow.astype(float), values, equal_nan=True):
        values = narrow
    meta = rec.meta
    bounds = meta["problem"]["bounds"]
    n_init = int(meta.get("n_init") or 0)
    revisit = np.array([revisit_share(run, bounds, n_init) for run in np.asarray(rec.x)])
    return Entry(cell_id=str(meta["cell_id"]), kind=kind, curve=values,
                 keys=np.asarray(rec.keys), seeds=np.asarray(rec.seeds),
                 wall_time=np.asarray(rec.wall_time), revisit=revisit, feasible=feasible,
                 meta=meta)


def order(cell_id: str) -> str:
    """The sort key of a cell id: its file name, so that entries keep ``store.list_cells``' order
    (the order the report reads cells in)."""
    return f"{cell_id}.npz"


def read_summary(out: str) -> list[Entry]:
    """The entries of ``out/summary.npz`` in its order (``order``); ``[]`` if there is
    none; ``ValueError`` for another schema, or naming the file if it is truncated or damaged."""
    path = summary_path(out)
    if not os.path.exists(path):
        return []
    try:
        z = np.load(path, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError("it holds a single array, not a set of named arrays")
        with z:
            index = json.loads(str(z["index"]))
            if not isinstance(index, dict):
                raise ValueError(f"its index is a {type(index).__name__}, not a dict")
            if index.get("schema") != SCHEMA:
                raise _Schema(f"{path}: summary schema {index.get('schema')!r}, this ntkbo reads "
                              f"{SCHEMA}")
            entries = []
            for i, item in enumerate(index["cells"]):
                arrays = {k: z[f"{i}.{k}"] for k in _ARRAYS}
                feasible = z[f"{i}.feasible"] if f"{i}.feasible" in z.files else None
                meta = migrations.migrate_meta(item["meta"], path)  # its definition's format
                entries.append(Entry(cell_id=item["cell_id"], kind=item["kind"],
                                     feasible=feasible, meta=meta, **arrays))
    except (FileNotFoundError, _Schema, migrations.FormatError):
        raise
    except store.READ_ERRORS + (TypeError,) as err:
        raise ValueError(f"{path}: not a readable study summary (truncated or damaged: "
                         f"{type(err).__name__}: {err}); restore it from a copy, or rebuild it "
                         "from the study's cell files: delete it and run `ntkbo summary DIR`"
                         ) from None
    return entries


class _Schema(ValueError):
    """A summary of another schema (passed through ``read_summary``'s damage check)."""


def collect(out: str) -> list[Entry]:
    """The entries of ``out``: one per cell file (``summarise_cell``), and the entries of an
    existing ``out/summary.npz`` whose cell has no file; in ``order``."""
    entries = {e.cell_id: e for e in read_summary(out)}
    for path in store.list_cells(out):
        e = summarise_cell(store.read_cell(path))
        entries[e.cell_id] = e
    return [entries[k] for k in sorted(entries, key=order)]


def write_summary(out: str) -> str | None:
    """Writes ``out/summary.npz`` (``collect``'s entries, compressed, atomically) and returns its
    path; ``None`` and nothing written when ``out`` has neither cell files nor a summary.

    The file's bytes depend only on the entries (zip timestamps are fixed), so an unchanged study
    rewrites an identical file."""
    entries = collect(out)
    if not entries:
        return None
    index = {"schema": SCHEMA, "cells": [{"cell_id": e.cell_id, "kind": e.kind, "meta": e.meta}
                                         for e in entries]}
    arrays = {"index": np.asarray(json.dumps(index, sort_keys=True, allow_nan=False))}
    for i, e in enumerate(entries):
        arrays.update({f"{i}.{k}": getattr(e, k) for k in _ARRAYS})
        if e.feasible is not None:
            arrays[f"{i}.feasible"] = e.feasible
    path = summary_path(out)
    store.atomic_write(path, lambda fh: fh.write(_npz_bytes(arrays)))
    return path


def _npz_bytes(arrays: dict) -> bytes:
    """``np.savez_compressed``'s layout with every member dated 1980-01-01, so that equal arrays
    give equal bytes (git sees no change when nothing changed)."""
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, value in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asanyarray(value), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, member.getvalue())
    return buf.getvalue()
