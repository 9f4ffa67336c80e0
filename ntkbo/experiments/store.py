"""Cell files: one ``.npz`` per finished (algorithm, problem, dim) cell, atomic and checksummed.

An experiment's output folder ``DIR`` holds::

    DIR/spec.json            the resolved spec and scale the run was started with (``write_spec``)
    DIR/cells/<cell_id>.npz  one file per finished cell (``write_cell`` / ``read_cell``)
    DIR/log.jsonl            one JSON line per event: a cell started / finished (``append_log``)
    DIR/ntkbo.lock           while a run writes the folder: its one-writer lock (``ntkbo.files``)

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
``checksum``   () str       ``ntkbo.files.arrays_sha256`` of the other members (from 2026-11-29)
=============  ===========  ================================================================

``meta`` keys: ``schema`` (1), ``cell_id``, ``digest``, ``algorithm`` {``label``, ``name``,
``options``: the fully resolved factory options (signature defaults merged with the given ones)},
``problem`` {``label``, ``name``, ``dim``, ``noise_std``, ``optimum`` (or null), ``bounds`` (2, d),
``n_constraints``, ``options``}, ``budget``, ``n_init``, ``q``, ``dtype``, ``seed_offset``,
``definition`` (the cell's resolved definition, ``spec.Cell.definition()``, whose SHA-256 is
``digest``; a user's problem's ``spec.fingerprint`` in its ``problem``), ``block`` (seeds
vmapped at once per device, null: all; ``runner.run_cell``), ``versions`` {``ntkbo``, ``jax``,
``jaxlib``, ``flax``, ``optax``, ``numpy``, ``python``}, ``device_kind``, ``n_devices``,
``n_processes``, ``command``, ``git_revision`` (or null), ``started``, ``finished`` (ISO 8601 UTC).
"""

from __future__ import annotations

import json
import os
import time
import zipfile
import zlib
from typing import Any, NamedTuple

import numpy as np

from ntkbo import files

#: The version of the cell-file layout; ``read_cell`` refuses other versions.
SCHEMA = 1
#: The arrays of a cell file (``meta`` aside), in order.
ARRAYS = ("x", "y", "f", "c", "c_obs", "feasible", "metric", "keys", "seeds", "wall_time")
#: The member of a cell file holding ``files.arrays_sha256`` of every other member.
CHECKSUM = "checksum"
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


def atomic_write(path: str, write) -> str:
    """``ntkbo.files.atomic_write``: ``write`` (bytes, or a function of a binary file object)
    lands in ``path`` whole or not at all."""
    return files.atomic_write(path, write)


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
    Temporary files left by a killed writer are hidden and ignored by ``list_cells``. The file
    carries ``checksum``, ``files.arrays_sha256`` of ``meta`` and every array, which
    ``read_cell`` verifies.

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
    if CHECKSUM in arrays:
        raise ValueError(f"arrays: {CHECKSUM!r} is the cell file's own member; rename that array")
    members: dict[str, Any] = dict(
        arrays, meta=np.asarray(json.dumps(meta, sort_keys=True, allow_nan=False)))
    members[CHECKSUM] = np.asarray(files.arrays_sha256(members))
    path = cell_path(out, cell_id)
    atomic_write(path, lambda fh: np.savez(fh, **members))
    return path


#: What to do with a damaged cell file.
_RERUN = ("delete it and run the study again (the runner recomputes the cells that have no file; "
          "the others are kept)")

#: What numpy and zipfile raise for a truncated or damaged ``.npz`` (``RuntimeError``: a flipped flag
#: bit that marks a member encrypted or of an unknown compression).
_READ_ERRORS = (OSError, EOFError, ValueError, KeyError, RuntimeError, zipfile.BadZipFile,
                zipfile.LargeZipFile, zlib.error)


def _load_members(path: str, names=None) -> dict:
    """The members of the ``.npz`` file ``path`` (``names``: only those), read in full (so the
    zip's CRC-32 of each is checked); ``ValueError`` naming the file if it is not a readable
    ``.npz`` (truncated, damaged, or not one at all)."""
    try:
        z = np.load(path, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError("it holds a single array, not a set of named arrays")
        with z:
            return {k: z[k] for k in (z.files if names is None else names)}
    except FileNotFoundError:
        raise
    except _READ_ERRORS as err:
        raise ValueError(f"{path}: not a readable cell file (truncated or damaged: "
                         f"{type(err).__name__}: {err}); {_RERUN}") from None


def _json_object(path: str, text, what: str, fix: str) -> dict:
    """``text`` parsed as a JSON object, or ``ValueError`` naming ``path``, ``what`` it holds and
    the ``fix``."""
    try:
        value = json.loads(text)
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: {what} is not valid JSON ({err}); {fix}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: {what} is a {type(value).__name__}, not a JSON object; {fix}")
    return value


def _parse_meta(path: str, text) -> dict:
    return _json_object(path, str(text), "the cell file's meta", _RERUN)


def read_cell(path: str) -> CellRecord:
    """Reads a cell file written by ``write_cell``; ``ValueError`` naming the file if it is not
    schema 1, is not a readable ``.npz`` (truncated or damaged), or its ``checksum`` does not
    match its contents. A cell file written before cells carried a checksum (no ``checksum``
    member) is read without one: the zip's CRC-32 of every member, checked on reading, still
    refuses a flipped bit."""
    data = _load_members(path)
    if "meta" not in data:
        raise ValueError(f"{path}: not a cell file (no meta)")
    stored = data.pop(CHECKSUM, None)
    if stored is not None and str(stored) != files.arrays_sha256(data):
        raise ValueError(f"{path}: the cell file is damaged: its checksum {str(stored)[:20]}... "
                         f"does not match its contents; {_RERUN}")
    meta = _parse_meta(path, data.pop("meta"))
    if meta.get("schema") != SCHEMA:
        raise ValueError(f"{path}: cell schema {meta.get('schema')!r}, this ntkbo reads {SCHEMA}")
    missing = [k for k in ARRAYS if k not in data]
    if missing:
        raise ValueError(f"{path}: cell file is missing {', '.join(missing)}")
    return CellRecord(**{k: data[k] for k in ARRAYS}, meta=meta, path=path)


def read_meta(path: str) -> dict:
    """Only the ``meta`` of a cell file (cheap: the arrays are not read, nor the checksum
    verified; ``read_cell`` does); ``ValueError`` naming the file if it cannot be read."""
    return _parse_meta(path, _load_members(path, ("meta",))["meta"])


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
    """The ``out/spec.json`` of a previous run, or ``None``; ``ValueError`` naming the file if it is
    not a JSON object (a damaged file: delete it and run the same spec again, which rewrites it;
    the cell files are checked against the spec by their own ``digest``)."""
    path = os.path.join(out, SPEC)
    if not os.path.exists(path):
        return None
    fix = ("delete it and run the same spec again to rewrite it (the cell files are checked "
           "against the spec by their own ``digest``)")
    with open(path, "rb") as fh:
        return _json_object(path, fh.read(), "the study's spec record", fix)


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
