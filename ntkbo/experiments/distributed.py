"""Several processes sharing one study: ``jax.distributed`` set up from flags or the environment.

Start the same command in each of ``N`` processes (one per host, or several on one host)::

    ntkbo bench SPEC --out DIR --coordinator HOST:PORT --num-processes N --process-id I

or set ``NTKBO_COORDINATOR``, ``NTKBO_NUM_PROCESSES``, ``NTKBO_PROCESS_ID`` instead of the flags.
``DIR`` must be on a file system every process sees. Process ``I`` runs the cells
``I, I + N, I + 2N, ...`` of the study's cell list sorted by ``cell_id`` (``runner.assigned``) on its own
local devices (``jax.local_devices()``); the processes never exchange arrays, so no cross-process
collective backend is needed, and a process that dies loses only its cell in flight (re-running
it, or the whole study, finishes the rest). ``initialize`` must run before JAX computes anything.

The study folder has one writer (``ntkbo.files.lock_folder``): process 0 takes its lock for the
group before any process reads the folder, and releases it once every process has finished
(``Group``); if process 0 cannot take it (another run holds the folder) every process of the group
stops with its message.
"""

from __future__ import annotations

import itertools
import json
import warnings

#: How long processes other than 0 wait for process 0 to take the lock and check the folder, and
#: how long process 0 waits for the others to finish their cells, in milliseconds.
START_TIMEOUT_MS = 6 * 3600 * 1000
FINISH_TIMEOUT_MS = 7 * 24 * 3600 * 1000

_RUNS = itertools.count()  # study runs of this process (every process of a group makes the same)


def initialize(coordinator: str | None, num_processes: int | None,
               process_id: int | None) -> None:
    """``jax.distributed.initialize(coordinator, num_processes, process_id)`` after checking the
    arguments (``ValueError`` naming the one that is missing or out of range)."""
    import jax

    if not coordinator or ":" not in coordinator:
        raise ValueError(f"--coordinator must be HOST:PORT, got {coordinator!r}")
    if not isinstance(num_processes, int) or num_processes < 1:
        raise ValueError(f"--num-processes must be an int >= 1, got {num_processes!r}")
    if not isinstance(process_id, int) or not 0 <= process_id < num_processes:
        raise ValueError(f"--process-id must be an int in [0, {num_processes}), got "
                         f"{process_id!r}")
    jax.distributed.initialize(coordinator_address=coordinator, num_processes=num_processes,
                               process_id=process_id)


def _client():
    """The ``jax.distributed`` client of this process (its key-value store and barriers), or
    ``None`` where ``jax.distributed`` is not initialised. JAX keeps it in a private module
    (``jax._src.distributed.global_state``); if a JAX version moves it, ``None``."""
    try:
        from jax._src import distributed as jax_distributed
    except ImportError:
        return None
    return getattr(getattr(jax_distributed, "global_state", None), "client", None)


class Group:
    """The processes of one study run, as far as the folder's lock needs them: process 0 tells the
    others whether it took the lock and checked the folder (``tell_started``), they wait for that
    (``wait_started``), and every process waits for all at the end (``wait_finished``), so that
    process 0 releases the lock last. ``coordinated`` is False (and each method does nothing) for
    a single process, or where the processes were split by hand (``process_id`` and
    ``num_processes`` given to ``runner.run`` without ``jax.distributed``): then process 0 holds
    the lock only while it runs, and the others take none."""

    def __init__(self, client, process_id: int, run: int):
        self.client, self.process_id, self.run = client, process_id, run

    @classmethod
    def of(cls, process_id: int, num_processes: int) -> "Group":
        """The group of this process, ``process_id`` of ``num_processes``: coordinated through the
        ``jax.distributed`` client when the split is ``jax.distributed``'s own."""
        import jax

        run = next(_RUNS)
        if num_processes == 1:
            return cls(None, process_id, run)
        client = _client()
        if client is None or (jax.process_count(), jax.process_index()) != (num_processes,
                                                                              process_id):
            if jax.process_count() > 1:
                warnings.warn("the study's processes cannot wait for each other (no "
                              "jax.distributed client with this split): process 0 holds the "
                              "folder's lock only while it runs", UserWarning, stacklevel=3)
            return cls(None, process_id, run)
        return cls(client, process_id, run)

    @property
    def coordinated(self) -> bool:
        """Whether the processes wait for each other."""
        return self.client is not None

    def _key(self, what: str) -> str:
        return f"ntkbo/study-run/{self.run}/{what}"

    def tell_started(self, error: BaseException | None) -> None:
        """Process 0: tells the others it took the lock and checked the folder, or why not."""
        if self.client is None:
            return
        value = {"ok": True} if error is None else {
            "ok": False, "type": type(error).__name__, "message": str(error),
            "path": getattr(error, "path", None), "holder": getattr(error, "holder", None)}
        self.client.key_value_set(self._key("started"), json.dumps(value))

    def wait_started(self, out: str) -> None:
        """Processes other than 0: waits for process 0's ``tell_started``; raises its error
        (``ntkbo.files.FolderLocked`` if another run holds ``out``, else ``ValueError``) with a
        message saying that process 0 stopped the group."""
        if self.client is None:
            return
        try:
            value = json.loads(self.client.blocking_key_value_get(self._key("started"),
                                                                  START_TIMEOUT_MS))
        except Exception as err:  # noqa: BLE001 - the client raises its own runtime errors
            raise ValueError(f"{out}: process {self.process_id} did not hear from process 0 of "
                             f"its group, which takes the folder's lock ({err})") from None
        if value.get("ok"):
            return
        message = (f"process 0 of this group stopped before running any cell: "
                   f"{value.get('message')}")
        if value.get("type") == "FolderLocked":
            from ntkbo.files import FolderLocked

            raise FolderLocked(message, value.get("path") or out, value.get("holder") or {})
        raise ValueError(message)

    def wait_finished(self) -> bool:
        """Every process: waits until all of the group got here (a process that died makes the
        wait fail); returns whether they all did. Never raises: it runs after errors too."""
        if self.client is None:
            return True
        try:
            self.client.wait_at_barrier(self._key("finished"), FINISH_TIMEOUT_MS)
        except Exception as err:  # noqa: BLE001 - the client raises its own runtime errors
            warnings.warn(f"process {self.process_id}: not every process of the study's group "
                          f"finished ({err})", UserWarning, stacklevel=2)
            return False
        return True
