"""Running a spec: each cell is one compiled, vmapped ``ntkbo.minimize`` over its seeds, sharded.

``run(spec, out, scale)`` resolves the spec's cells, checks them against what ``out`` already holds
(``check_compatible``), and runs every cell of this process that has no cell file yet, writing one
``store`` file per finished cell. A run killed mid-way loses at most its cell in flight; running it
again finishes the rest. It holds ``out``'s one-writer lock (``ntkbo.files.lock_folder``) from
before it reads the folder until it is done; a second run of the folder stops with its holder named.

Execution of a cell (``run_cell``): the ``S`` seeds' keys ``PRNGKey(seed_offset + i)``
(``paired_keys``, the same for every algorithm: a paired design) are laid out along the
``"seeds"`` axis of a ``jax.sharding.Mesh`` over the local devices
(``NamedSharding(mesh, PartitionSpec("seeds"))``) and ``jit(shard_map(vmap(minimize)))`` runs
them: each device runs the plain vmapped program on its share, with no communication.
(``shard_map`` rather than jit's automatic partitioning, which leaves some batched ops unsplit and
all-gathers every seed onto every device for them; see ``program``.)
A device takes ``block`` seeds per call of the compiled program (``block=None``: all its seeds in
one call); the host calls it until every seed has run; the keys are padded to a multiple of
``n_devices * block`` and the padding is dropped. ``default_block`` picks 1 on CPU devices, where
vmapped seeds gain nothing; the block used is in each cell's meta.

Values on any number of devices, for a fixed block: ``vmap`` adds a batch axis that no operation
reduces over, and a device runs the same per-device program whatever the number of devices, so
each seed gets the same arithmetic up to XLA's compilation: random search is byte-identical on 4
devices and on 1, the NTK-GP differs in the last bits (a 4-partition compile), and a block of 1
differs from larger blocks in the last bits (docs/decisions.md, 2026-11-23, has the measurements).
Compare runs made with the same compile flags (``jax_enable_x64``,
``jax_disable_most_optimizations``, ``XLA_FLAGS``) and block.

Several processes (``jax.distributed.initialize``, see ``distributed``): process ``p`` of ``P``
takes cells ``p, p + P, p + 2P, ...`` of the sorted cell list and runs them on its own local
devices; no process communicates with another during a run (a shared file system holds the cell
files).
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import time
from typing import Callable, Sequence

import numpy as np

from ntkbo import files
from ntkbo.experiments import distributed, store, summary
from ntkbo.experiments.spec import Cell, Spec, load
from ntkbo.lapack_threads import configure_blas_threads
from ntkbo.provenance import git_revision, versions  # noqa: F401  (re-exported)

#: The ``Result`` fields a cell file keeps (``store`` module docstring), in order.
FIELDS = ("x", "y", "f", "c", "c_obs", "feasible", "metric")
AXIS = "seeds"


def paired_keys(count: int, offset: int = 0):
    """``(count, 2)`` uint32 keys: row ``i`` is ``jax.random.PRNGKey(offset + i)``. Every algorithm
    on a problem gets the same keys, hence the same initial design and noise (a paired design)."""
    import jax
    import jax.numpy as jnp

    return jax.vmap(jax.random.PRNGKey)(offset + jnp.arange(count))


def seed_mesh(devices: Sequence | None = None):
    """A one-axis ``Mesh`` (axis ``"seeds"``) over ``devices`` (default: this process's devices,
    ``jax.local_devices()``)."""
    import jax
    from jax.sharding import Mesh

    devices = jax.local_devices() if devices is None else list(devices)
    return Mesh(np.asarray(devices), (AXIS,))


_PROGRAMS: dict = {}  # (``cell.digest``, device ids) -> (algo, problem, fn); see ``program``


def program(cell: Cell, mesh):
    """``(algo, problem, fn)`` of a cell: ``fn(problem, keys)`` runs ``minimize`` for every key of
    ``keys`` ``(m, 2)``, split along ``mesh``'s seed axis (``m`` a multiple of the mesh size; each
    device vmaps over its ``m / n`` keys), the problem replicated; it returns the ``FIELDS`` of
    ``Result`` with a leading seed axis. Cached per (``cell.digest``, devices), so a cell run twice in
    one process compiles once (per distinct ``m``); ``run`` drops the entry once the cell is
    written (``release_programs``)."""
    key = (cell.digest, tuple(int(d.id) for d in mesh.devices.flat))
    if key not in _PROGRAMS:
        if len(_PROGRAMS) >= 64:
            _PROGRAMS.pop(next(iter(_PROGRAMS)))
        _PROGRAMS[key] = _build_program(cell, mesh)
    return _PROGRAMS[key]


def release_programs(cell: Cell, mesh) -> None:
    """Drops ``cell``'s entry of ``program``'s cache and every compiled program JAX holds in
    memory (``jax.clear_caches()``; the persistent compilation cache on disk is untouched).

    Why: XLA:CPU keeps each executable's machine code in its own memory mappings, about 1,000 per
    compiled GP cell (measured with ``/proc/self/maps``: 652 at start, 14,425 after 14 NTK-GP-EI
    cells of the dev suite, 626 after each cell with this release), and a cell's programs are not
    reused by the next cell (another ``digest``). Linux allows 65,530 mappings per process by default
    (``vm.max_map_count``), so a long study used to die after some 60 cells: LLVM reported
    "Cannot allocate memory" and the process segfaulted (a 42-cell GP tuning run, 2026-11-24).
    Recompiling what a later cell shares costs little; with the persistent cache on it is a read.
    """
    import jax

    _PROGRAMS.pop((cell.digest, tuple(int(d.id) for d in mesh.devices.flat)), None)
    jax.clear_caches()


def _build_program(cell: Cell, mesh):
    import jax
    from jax.sharding import PartitionSpec

    from ntkbo import cache
    from ntkbo.loop import minimize

    algo, problem = cell.build()

    def one(problem, key):
        r = minimize(algo, problem, cell.budget, key, n_init=cell.n_init)
        return tuple(getattr(r, k) for k in FIELDS)

    # shard_map, not jit's automatic partitioning: the partitioner does not split some batched ops
    # along the seed axis (the sort of ``lax.top_k`` in the acquisition optimiser), and gathers all
    # seeds onto every device for them (an all-gather per round). With shard_map each device runs
    # the plain vmapped program on its own seeds and no device ever talks to another.
    # ``check_vma=False``: the loop's scan carries start as unsharded constants and become
    # per-seed values, which the varying-axis check rejects.
    fn = jax.shard_map(jax.vmap(one, in_axes=(None, 0)), mesh=mesh,
                       in_specs=(PartitionSpec(), PartitionSpec(AXIS)),
                       out_specs=PartitionSpec(AXIS), check_vma=False)
    return algo, problem, cache.cached(jax.jit(fn))  # compiled with the persistent cache


#: Share of a device's memory that one call's seeds may fill, by ``seed_bytes``'s estimate.
MEMORY_SHARE = 0.5
#: A seed's peak memory as a multiple of its final state and trajectory (``seed_bytes``): room for
#: the temporaries of the factorisations and of the acquisition search.
TEMPORARIES = 4


def run_bytes(algo, problem, budget: int, n_init: int | None = None) -> int:
    """Estimated peak device memory of one seed of ``minimize(algo, problem, budget, key,
    n_init=n_init)``, in bytes: ``TEMPORARIES`` times the bytes of its whole ``Result`` (the
    algorithm's final state, whose buffers and factors have the capacity the budget needs, and
    the trajectories), from ``jax.eval_shape`` (traced, not run)."""
    import jax

    from ntkbo.loop import minimize

    out = jax.eval_shape(lambda k: minimize(algo, problem, budget, k, n_init=n_init),
                         jax.random.PRNGKey(0))
    return TEMPORARIES * sum(int(leaf.size) * leaf.dtype.itemsize
                             for leaf in jax.tree_util.tree_leaves(out))


def seed_bytes(cell: Cell) -> int:
    """``run_bytes`` of one seed of ``cell``."""
    algo, problem = cell.build()
    return run_bytes(algo, problem, cell.budget, cell.n_init)


def device_memory(device) -> int | None:
    """``device``'s memory limit in bytes (``memory_stats()["bytes_limit"]``), ``None`` where the
    backend does not report it."""
    try:
        stats = device.memory_stats()
    except Exception:  # noqa: BLE001 (backends without memory statistics raise)
        return None
    limit = (stats or {}).get("bytes_limit")
    return int(limit) if limit else None


def default_block(mesh, seed_bytes: int | None = None) -> int | None:
    """Seeds per device and call: ``1`` on CPU devices; elsewhere as many as fit in
    ``MEMORY_SHARE`` of the device's memory at ``seed_bytes`` each (at least 1), or ``None`` (all
    of a device's seeds at once) where the memory or ``seed_bytes`` is unknown.

    One seed per call on CPU because vmapped seeds gain nothing on a few cores and one program
    per seed keeps a cell's values independent of how many seeds share a call; on accelerators a
    batch of seeds fills the device. The measurements behind both are in ``docs/decisions.md``
    (2026-11-27, "seeds per device call") and ``docs/speed.md``."""
    device = mesh.devices.flat[0]
    if device.platform == "cpu":
        return 1
    limit = device_memory(device)
    if seed_bytes is None or limit is None:
        return None
    return max(1, int(MEMORY_SHARE * limit) // int(seed_bytes))


def cell_block(cell: Cell, mesh) -> int | None:
    """``default_block`` for ``cell`` on ``mesh``, with ``seed_bytes(cell)`` where the devices are
    not CPUs (on CPU the block is 1 whatever the cell, so nothing is traced)."""
    if mesh.devices.flat[0].platform == "cpu":
        return 1
    return default_block(mesh, seed_bytes(cell))


def run_cell(cell: Cell, mesh=None, block: int | None | str = "auto",
             on_seeds: Callable | None = None) -> dict:
    """Runs ``cell``'s seeds as one compiled, vmapped program sharded over ``mesh``.

    Returns the arrays of a cell file (``store.ARRAYS``): ``x`` ``(S, B, d)``, ``y``, ``f``,
    ``metric`` ``(S, B)``, ``c``, ``c_obs`` ``(S, B, K)``, ``feasible`` ``(S, B)``,
    ``keys`` ``(S, 2)``, ``seeds`` ``(S,)``, ``wall_time`` ``(S,)`` (the cell's wall time,
    compilation included, divided evenly over its seeds), with ``S = cell.seeds``. ``block``: seeds
    vmapped at once per device (``"auto"``: ``cell_block(cell, mesh)``); the compiled program runs
    ``block`` seeds per device and is called ``ceil(S / (n_devices * block))`` times. For a fixed
    ``block`` the values agree on any number of devices (module docstring: byte for byte for
    random search; to the last bits, amplified on rugged problems, for the NTK-GP).
    ``on_seeds(done, S)`` is called after each call (progress).
    """
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec

    mesh = seed_mesh() if mesh is None else mesh
    block = cell_block(cell, mesh) if block == "auto" else block
    if block is not None and (not isinstance(block, int) or block < 1):
        raise ValueError(f"block must be None, 'auto' or an int >= 1, got {block!r}")
    n = mesh.devices.size
    s = cell.seeds
    # One call of the compiled program runs ``block`` seeds per device (all of them: block None);
    # the host loops over calls, so the program a device runs does not depend on the device count.
    per_call = n * (block if block is not None else -(-s // n))
    padded = -(-s // per_call) * per_call  # padding: the next keys, dropped below
    t0 = time.perf_counter()
    _, problem, fn = program(cell, mesh)
    keys = paired_keys(padded, cell.seed_offset)
    sharding = NamedSharding(mesh, PartitionSpec(AXIS))
    parts = []
    for i in range(0, padded, per_call):
        parts.append(jax.device_get(fn(problem, jax.device_put(keys[i:i + per_call], sharding))))
        if on_seeds is not None:
            on_seeds(min(i + per_call, s), s)
    out = [np.concatenate([p[j] for p in parts]) for j in range(len(FIELDS))]
    wall = time.perf_counter() - t0
    arrays = {k: np.asarray(v)[:s] for k, v in zip(FIELDS, out)}
    arrays["feasible"] = arrays["feasible"].astype(bool)
    arrays["keys"] = np.asarray(jax.random.key_data(keys) if jnp.issubdtype(
        keys.dtype, jax.dtypes.prng_key) else keys, dtype=np.uint32)[:s]
    arrays["seeds"] = np.arange(s, dtype=np.int64)
    arrays["wall_time"] = np.full(s, wall / s)
    return arrays


# ---------------------------------------------------------------------------------------------
# provenance


# ``versions`` and ``git_revision`` live in the bottom module ``ntkbo.provenance`` (imported
# above), which the ask/tell layer uses too; they stay importable from here.


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def cell_meta(cell: Cell, problem, q: int, mesh, started: str, finished: str,
              extra: dict) -> dict:
    """The ``meta`` of a cell file (``store`` module docstring)."""
    import jax

    from ntkbo.experiments.spec import jsonable

    optimum = None if problem.optimum is None else float(problem.optimum)
    return {
        "algorithm": {"label": cell.algorithm.id, "name": cell.algorithm.name,
                      "options": dict(cell.options)},
        "problem": {"label": cell.problem.id, "name": problem.name, "dim": int(problem.dim),
                    "noise_std": jsonable(np.asarray(problem.noise_std).tolist()),
                    "optimum": optimum, "bounds": np.asarray(problem.bounds).tolist(),
                    "n_constraints": int(problem.n_constraints),
                    "options": jsonable(dict(cell.problem.options))},
        "budget": cell.budget, "n_init": cell.n_init, "q": q, "dtype": cell.dtype,
        "seed_offset": cell.seed_offset, "definition": cell.definition(),
        "device_kind": mesh.devices.flat[0].device_kind, "n_devices": int(mesh.devices.size),
        "n_processes": jax.process_count(), "started": started, "finished": finished, **extra,
    }


# ---------------------------------------------------------------------------------------------
# resuming and refusing changed specs


def _first_difference(a, b, path="") -> str | None:
    """The dotted path of the first field where two JSON values differ, or ``None``."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}{k}"
            d = _first_difference(a[k], b[k], f"{path}{k}.")
            if d:
                return d
        return None
    return None if a == b else path.rstrip(".") or "(value)"


def resolved_record(spec: Spec, scale: str, cells: list[Cell]) -> dict:
    """What ``out/spec.json`` holds: ``Spec.to_dict()`` (``name``, ``reference``, ...) plus
    ``scale``, ``scale_caps`` and ``cells`` (cell id -> ``definition`` and ``digest``)."""
    return dict(spec.to_dict(), scale=scale, scale_caps=spec.scale(scale).to_dict(),
                cells={c.cell_id: {"digest": c.digest, "definition": c.definition()}
                       for c in cells})


def _caps(recorded):
    """A stored ``scale_caps`` record as ``Scale.to_dict`` writes it now: records written from
    2026-11-23 (``Scale.exclude`` added) until ``to_dict`` omitted an empty list hold
    ``"exclude": []``, the same caps as a record without the field."""
    if isinstance(recorded, dict) and recorded.get("exclude") == []:
        recorded = {k: v for k, v in recorded.items() if k != "exclude"}
    return recorded


#: A user's problem's fingerprint fields (``spec.fingerprint``), in the words of a refusal.
_FINGERPRINT_WORDS = {
    "code": "code (the hash of its function's bytecode, constants and the values it closes over)",
    "version": "version", "bounds": "bounds", "dim": "dimension", "noise_std": "noise_std",
    "optimum": "optimum", "n_constraints": "number of constraints",
    "constraint_noise_std": "constraint noise", "name": "name", "source": "source",
}


def _short(v) -> str:
    text = json.dumps(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _changed_problem(where: str, stored: dict, cell: Cell) -> str | None:
    """The refusal of a cell whose user's problem changed (``None`` if ``cell``'s problem is not a
    user's, or its entry is unchanged): names the problem and each changed fingerprint field with
    its stored and its new value."""
    if cell.fingerprint is None:
        return None
    old = (stored.get("problem") or {}) if isinstance(stored, dict) else {}
    old_fp = old.get("fingerprint")
    new_fp = dict(cell.fingerprint)
    new = cell.definition()["problem"]
    if not isinstance(old_fp, dict):
        changes = ["the stored cell ran a registered problem under this label"]
    else:
        keys = set(old_fp) | set(new_fp)
        changes = []
        for k in [k for k in _FINGERPRINT_WORDS if k in keys] + sorted(keys - set(
                _FINGERPRINT_WORDS)):
            if old_fp.get(k) == new_fp.get(k):
                continue
            what = _FINGERPRINT_WORDS.get(k, k)
            if k == "code":
                a, b = (f"{v[:12]}..." if isinstance(v, str) else "none"
                        for v in (old_fp.get(k), new_fp.get(k)))
                changes.append(f"its {what} changed ({a} -> {b})")
            else:
                changes.append(f"its {what} changed from {_short(old_fp.get(k))} to "
                               f"{_short(new_fp.get(k))}")
        for k in ("name", "options"):
            if k in old and old.get(k) != new.get(k):
                changes.append(f"its entry's {k} changed from {_short(old.get(k))} to "
                               f"{_short(new.get(k))}")
    if not changes:
        return None
    return (f"{where}: problem {cell.problem.id!r} ({cell.fingerprint.get('source')}) is not the "
            f"problem this study ran: {'; '.join(changes)}. Run the changed problem into another "
            "--out, or restore it as it was (a problem given a version, ProblemSpec(version=...) "
            "or version = \"...\" in TOML, is recognised by that version instead of its code)")


def _refusal(where: str, cid: str, stored: dict, cell: Cell) -> str:
    """The message refusing a stored cell whose definition ``stored`` differs from ``cell``'s."""
    # a user's problem that changed first: what the algorithm resolves from it (the duplicate
    # guard of a noisy problem, ...) changes with it and is not the cause
    changed = _changed_problem(where, stored, cell)
    if changed is not None:
        return changed
    field = _first_difference(stored, cell.definition())
    return (f"{where}: cell {cid!r} differs from the stored one in field {field!r}; the spec "
            "changed, use another --out")


def check_compatible(out: str, spec: Spec, scale: str, cells: list[Cell]) -> None:
    """``ValueError`` if ``out`` holds results of a different experiment: another scale, a cell
    whose ``digest`` differs (the message names the cell and its first differing field; for a
    user's problem, the problem and each changed field of its fingerprint), or a cell file of a
    cell this spec does not have. New cells (added algorithms or problems) are allowed."""
    by_id = {c.cell_id: c for c in cells}
    old = store.read_spec(out)
    if old is not None:
        if old.get("scale") != scale or _caps(old.get("scale_caps")) != spec.scale(scale).to_dict():
            raise ValueError(f"{out} holds a run at scale {old.get('scale')!r} "
                             f"({old.get('scale_caps')}); this run asks for scale {scale!r} "
                             f"({spec.scale(scale).to_dict()}); use another --out")
        for cid, rec in old.get("cells", {}).items():
            cell = by_id.get(cid)
            if cell is not None and rec["digest"] != cell.digest:
                raise ValueError(_refusal(out, cid, rec["definition"], cell))
    for path in store.list_cells(out):
        meta = store.read_meta(path)
        cid = meta.get("cell_id")
        cell = by_id.get(cid) if isinstance(cid, str) else None
        if cell is None:
            raise ValueError(_missing_cell(path, cid, meta, scale, cells))
        if meta.get("digest") != cell.digest:
            raise ValueError(_refusal(path, str(cid), meta.get("definition", {}), cell))


def _missing_cell(path: str, cid, meta: dict, scale: str, cells: list[Cell]) -> str:
    """The refusal of a stored cell this spec does not have; where a user's problem of the same
    label now has another dimension, it names the problem and the change."""
    stored = meta.get("definition", {}).get("problem", {}) if isinstance(meta, dict) else {}
    for c in cells:
        if (c.fingerprint is not None and c.problem.id == stored.get("label")
                and c.algorithm.id == meta.get("definition", {}).get("algorithm", {}).get("label")
                and c.dim != stored.get("dim")):
            changed = _changed_problem(path, meta["definition"], c)
            if changed is not None:
                return changed
    return (f"{path}: cell {cid!r} is not in this spec at scale {scale!r}; the spec changed, use "
            "another --out")


def assigned(cells: list[Cell], process_id: int, num_processes: int) -> list[Cell]:
    """Round-robin share of process ``process_id``: cells ``process_id::num_processes`` of the
    list sorted by ``cell_id``."""
    return sorted(cells, key=lambda c: c.cell_id)[process_id::num_processes]


def run(spec, out: str, scale: str = "full", *, devices: Sequence | None = None,
        process_id: int | None = None, num_processes: int | None = None,
        progress: bool | Callable = False, command: str | None = None,
        block: int | None | str = "auto", only: Sequence[str] | None = None,
        release: bool = True) -> list[str]:
    """Runs the cells of ``spec`` at ``scale`` that ``out`` does not hold yet.

    Args:
      spec: a ``Spec``, a TOML path or a dict in the TOML layout (``ntkbo.experiments.spec``).
      out: the output folder: ``spec.json``, ``cells/<cell_id>.npz``, ``log.jsonl`` (``store``).
      scale: ``"smoke"``, ``"cpu"``, ``"full"`` or a scale the spec defines.
      devices: the devices to shard seeds over (default: ``jax.local_devices()``).
      process_id, num_processes: this process's share of the cells (default: ``jax.process_index()``
        and ``jax.process_count()``, i.e. after ``jax.distributed.initialize``, its rank and size).
      progress: ``True`` for a tqdm bar over this process's cells (on stderr), or a callable
        ``progress(cell, path)`` called after each cell.
      command: recorded in each cell's meta (default: ``sys.argv`` joined by spaces).
      block: seeds vmapped at once on a device (``run_cell``; recorded in the meta as ``block``).
      only: algorithm labels; if given, only their cells run (the folder is still checked against
        the whole spec, so a later run of the rest adds to the same study).
      release: after each cell this call ran, drop its compiled program and JAX's in-memory
        compilation caches (``release_programs``), so a study of any number of cells fits in one
        process. ``False`` keeps them (every jitted function of the process stays compiled).

    Then writes ``out/summary.npz`` (``summary.write_summary``: every cell file of ``out`` and the
    earlier summary's entries without one).

    Returns:
      The paths of the cell files of this process's share (finished now or before).

    Raises ``ntkbo.files.FolderLocked`` (naming the holder's process and host) if another process
    holds ``out``'s lock; then nothing is read or written. Under ``jax.distributed`` process 0
    takes the lock for the group (``distributed.Group``) and the others wait for it.
    """
    import jax

    # a study is a program's entry point: it sets the LAPACK threads as the environment says
    # (one by default, ntkbo.lapack_threads), the call importing ntkbo does not make
    configure_blas_threads()
    spec = load(spec)
    cells = spec.resolve(scale)
    pid = jax.process_index() if process_id is None else process_id
    nproc = jax.process_count() if num_processes is None else num_processes
    if not (isinstance(nproc, int) and nproc >= 1 and isinstance(pid, int) and 0 <= pid < nproc):
        raise ValueError(f"process_id must be in [0, num_processes={nproc}), got {pid!r}")
    if only is not None:
        labels = {a.id for a in spec.algorithms}
        unknown = sorted(set(only) - labels)
        if unknown:
            raise ValueError(f"only: unknown algorithm label(s) {', '.join(unknown)}; the spec's "
                             f"labels: {', '.join(sorted(labels))}")
    os.makedirs(out, exist_ok=True)
    command = command if command is not None else " ".join(sys.argv)
    group = distributed.Group.of(pid, nproc)
    lock, finished = None, False
    try:
        # One writer per folder: process 0 takes the lock (for its group, which waits for it)
        # before it reads what the folder holds, and keeps it until every process is done.
        if pid == 0:
            try:
                lock = files.lock_folder(out, command)
                files.remove_temporaries(out)
                files.remove_temporaries(store.cells_dir(out))
                check_compatible(out, spec, scale, cells)
                store.write_spec(out, resolved_record(spec, scale, cells))
            except BaseException as err:
                group.tell_started(err)
                raise
            group.tell_started(None)
        else:
            group.wait_started(out)
            check_compatible(out, spec, scale, cells)
        paths = _run_cells(spec, out, scale, cells, pid, nproc, devices, progress, command,
                           block, only, release)
        finished = True
    finally:
        try:
            # every process, also after an error: process 0 holds the lock until all are done
            group.wait_finished()
            if finished and (pid == 0 or not group.coordinated):
                # the last to finish sees every cell file (in a group: process 0, after all)
                summary.write_summary(out)
        finally:
            if lock is not None:
                lock.release()
    return paths


def _run_cells(spec, out, scale, cells, pid, nproc, devices, progress, command, block, only,
               release) -> list[str]:
    """``run``'s loop over this process's cells that have no file yet."""
    from ntkbo import loop

    mesh = seed_mesh(devices)
    mine = assigned([c for c in cells if only is None or c.algorithm.id in only], pid, nproc)
    extra = {"versions": versions(), "command": command, "git_revision": git_revision()}
    bar = None
    if progress is True:
        from tqdm import tqdm

        bar = tqdm(total=len(mine), desc=f"{spec.name} [{scale}]", unit="cell", file=sys.stderr)
    paths = []
    for cell in mine:
        path = store.cell_path(out, cell.cell_id)
        if bar is not None:
            bar.set_postfix_str(cell.cell_id)
        if not os.path.exists(path):
            store.append_log(out, "start", cell_id=cell.cell_id, process=pid)
            started = _now()
            seeds_done = None
            if bar is not None:
                seeds_done = lambda done, total, cid=cell.cell_id, bar=bar: bar.set_postfix_str(
                    f"{cid}: {done}/{total} seeds")
            b = cell_block(cell, mesh) if block == "auto" else block
            arrays = run_cell(cell, mesh, b, on_seeds=seeds_done)
            algo, problem = cell.build()
            meta = cell_meta(cell, problem, loop.batch_size(algo, problem), mesh, started,
                             _now(), dict(extra, block=b))
            store.write_cell(out, cell, arrays, meta)
            store.append_log(out, "finish", cell_id=cell.cell_id, process=pid,
                             wall_time=float(arrays["wall_time"].sum()))
            if release:
                release_programs(cell, mesh)
        paths.append(path)
        if bar is not None:
            bar.update(1)
        elif callable(progress):
            progress(cell, path)
    if bar is not None:
        bar.close()
    return paths
