"""Cell files: one ``.npz`` per finished (algorithm, problem, dim) cell, written atomically.

An experiment's output folder ``DIR`` holds::

    DIR/spec.json            the resolved spec and scale the run was started with (``write_spec``)
    DIR/cells/<cell_id>.npz  one file per finished cell (``write_cell`` / ``read_cell``)
    DIR/log.jsonl            one JSON line per event: a cell started / finished (``append_log``)

Cell files are written atomically (``write_cell``): no reader sees one in part, even after a crash.

Schema 1 (``S`` seeds, ``B`` budget, ``d`` dimension, ``K`` constraints, ``K = 0`` unconstrained):

=============  ===========  ================================================================
name           shape/dtype  meaning
=============  ===========  ================================================================
``x``          (S, B, d)    evaluated points, in order (initial design first)
``y``          (S, B)       observations (with noise)
``f``          (S, B)       noise-free objective values at ``x``
``c``          (S, B, K)    noise-free constraint values (``c_k <= 0`` feasible)
``c_obs``      (S, B, K)    observed constraint values (what the algorithm was told)
``feasible``   (S, B) bool  noise-free feasibility of ``x``
``metric``     (S, B)       ``Result.metric``: best regret (+ violation) so far; NaN if the
                            optimum is unknown
``keys``       (S, 2)       uint32 key data of each seed's ``jax.random`` key
``seeds``      (S,) int     seed indices (key ``i`` is ``PRNGKey(seed_offset + seeds[i])``)
``wall_time``  (S,) float   seconds per seed: the seeds of a cell run as one vmapped program, so
                            this is the cell's wall time (compilation included) divided evenly
                            over its seeds
``meta``       () str       JSON, below
=============  ===========  ================================================================

``meta`` keys: ``schema`` (1), ``cell_id``, ``digest``, ``algorithm`` {``label``, ``name``,
``options``: the fully resolved factory options (signature defaults merged with the given ones)},
``problem`` {``label``, ``name``, ``dim``, ``noise_std``, ``optimum`` (or null), ``bounds`` (2, d),
``n_constraints``, ``options``}, ``budget``, ``n_init``, ``q``, ``dtype``, ``seed_offset``,
``definition`` (the cell's resolved definition, ``spec.Cell.definition()``, whose SHA-256 is
``digest``), ``block`` (seeds vmapped at once per device, null: all; ``runner.run_cell``),
``versions`` {``ntkbo``, ``jax``, ``jaxlib``, ``flax``, ``optax``, ``numpy``, ``python``},
``device_kind``, ``n_devices``, ``n_processes``, ``command``, ``git_revision`` (or null),
``started``, ``finished`` (ISO 8601 UTC).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from typing import Any, NamedTuple

import numpy as np

#: The version of the cell-file layout; ``read_cell`` refuses other versions.
SCHEMA = 1
#: The arrays of a cell file (``meta`` aside), in order.
ARRAYS = ("x", "y", "f", "c", "c_obs", "feasible", "metric", "keys", "seeds", "wall_time")
CELLS = "cells"
SPEC = "spec.json"
LOG = "log.jsonl"


class CellRecord(NamedTuple):
    """A cell file read back: numpy arrays with the shapes of the module docstring, ``meta`` the
    parsed JSON dict, ``path`` the file it came from."""

    x: np.ndarray
    y: np.ndarray
    f: np.ndarray
    c: np.ndarray
    c_obs: np.ndarray
    feasible: np.ndarray
    metric: np.ndarray
    keys: np.ndarray
    seeds: np.ndarray
    wall_time: np.ndarray
    meta: dict
    path: str


def cells_dir(out: str) -> str:
    """``out/cells``."""
    return os.path.join(out, CELLS)


def cell_path(out: str, cell_id: str) -> str:
    """``out/cells/<cell_id>.npz``."""
    return os.path.join(cells_dir(out), f"{cell_id}.npz")


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str, write) -> None:
    """Calls ``write(fh)`` on a binary temporary file next to ``path``, fsyncs it, renames it over
    ``path`` (``os.replace``) and fsyncs the folder. On any error the temporary file is removed."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(folder)


def _check_arrays(arrays: dict) -> dict:
    missing = [k for k in ARRAYS if k not in arrays]
    if missing:
        raise ValueError(f"arrays is missing {', '.join(missing)} (a cell file needs {ARRAYS})")
    a = {k: np.asarray(v) for k, v in arrays.items()}
    s, b = a["y"].shape if a["y"].ndim == 2 else (None, None)
    if s is None:
        raise ValueError(f"arrays['y'] must have shape (S, B), got {a['y'].shape}")
    expect = {"x": (s, b), "f": (s, b), "c": (s, b), "c_obs": (s, b), "feasible": (s, b),
              "metric": (s, b), "keys": (s,), "seeds": (s,), "wall_time": (s,)}
    for k, lead in expect.items():
        if a[k].shape[:len(lead)] != lead:
            raise ValueError(f"arrays[{k!r}] has shape {a[k].shape}; expected leading axes {lead} "
                             "(S seeds, B evaluations)")
    if a["feasible"].dtype != bool:
        raise ValueError(f"arrays['feasible'] must be bool, got {a['feasible'].dtype}")
    if a["keys"].shape != (s, 2) or a["keys"].dtype != np.uint32:
        raise ValueError(f"arrays['keys'] must be uint32 (S, 2) key data, got {a['keys'].dtype} "
                         f"{a['keys'].shape}")
    return a


def write_cell(out: str, cell, arrays: dict, meta: dict) -> str:
    """Writes ``out/cells/<cell_id>.npz`` atomically; returns its path.

    The file is written to a temporary file in ``out/cells``, flushed, ``fsync``-ed and renamed over
    its final name with ``os.replace`` (atomic on POSIX), and the folder is ``fsync``-ed after.
    Temporary files left by a killed writer end in ``.tmp`` and are ignored by ``list_cells``.

    Args:
      out: the experiment folder.
      cell: a ``spec.Cell`` (its ``cell_id`` and ``digest`` are written into ``meta``) or a cell id.
      arrays: the arrays ``ARRAYS`` with the shapes of the module docstring (extra arrays are kept).
      meta: JSON-able dict (module docstring); ``schema``, ``cell_id`` and ``digest`` are set here.
    """
    cell_id = cell if isinstance(cell, str) else cell.cell_id
    meta = dict(meta, schema=SCHEMA, cell_id=cell_id)
    if not isinstance(cell, str):
        meta["digest"] = cell.digest
    arrays = _check_arrays(arrays)
    text = json.dumps(meta, sort_keys=True, allow_nan=False)
    path = cell_path(out, cell_id)
    atomic_write(path, lambda fh: np.savez(fh, meta=np.asarray(text), **arrays))
    return path


def read_cell(path: str) -> CellRecord:
    """Reads a cell file written by ``write_cell``; ``ValueError`` if it is not schema 1."""
    with np.load(path, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    if "meta" not in data:
        raise ValueError(f"{path}: not a cell file (no meta)")
    meta = json.loads(str(data.pop("meta")))
    if meta.get("schema") != SCHEMA:
        raise ValueError(f"{path}: cell schema {meta.get('schema')!r}, this ntkbo reads {SCHEMA}")
    missing = [k for k in ARRAYS if k not in data]
    if missing:
        raise ValueError(f"{path}: cell file is missing {', '.join(missing)}")
    return CellRecord(**{k: data[k] for k in ARRAYS}, meta=meta, path=path)


def read_meta(path: str) -> dict:
    """Only the ``meta`` of a cell file (cheap: the arrays are not decompressed)."""
    with np.load(path, allow_pickle=False) as z:
        return json.loads(str(z["meta"]))


def list_cells(out: str) -> list[str]:
    """The paths of the finished cell files in ``out/cells``, sorted by name (temporary files of
    an interrupted write are skipped)."""
    folder = cells_dir(out)
    if not os.path.isdir(folder):
        return []
    return sorted(os.path.join(folder, n) for n in os.listdir(folder)
                  if n.endswith(".npz") and not n.startswith("."))


def write_spec(out: str, resolved: dict) -> str:
    """Writes ``out/spec.json`` (the resolved spec and scale, JSON-able) atomically."""
    path = os.path.join(out, SPEC)
    text = json.dumps(resolved, indent=1, sort_keys=True, allow_nan=False).encode()
    atomic_write(path, lambda fh: fh.write(text))
    return path


def read_spec(out: str) -> dict | None:
    """The ``out/spec.json`` of a previous run, or ``None``."""
    path = os.path.join(out, SPEC)
    if not os.path.exists(path):
        return None
    with open(path) as fh:
        return json.load(fh)


def append_log(out: str, event: str, **fields: Any) -> None:
    """Appends ``{"event": event, "time": ..., "pid": ..., **fields}`` to ``out/log.jsonl`` (one
    ``write`` of one line in append mode, then ``fsync``)."""
    os.makedirs(out, exist_ok=True)
    line = json.dumps({"event": event, "time": time.time(), "pid": os.getpid(), **fields})
    with open(os.path.join(out, LOG), "a") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_log(out: str) -> list[dict]:
    """The events of ``out/log.jsonl`` (``[]`` if there is none); a torn last line is skipped."""
    path = os.path.join(out, LOG)
    if not os.path.exists(path):
        return []
    events = []
    with open(path) as fh:
        for line in fh:
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return events
