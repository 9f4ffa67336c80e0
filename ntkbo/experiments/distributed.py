"""Several processes sharing one study: ``jax.distributed`` set up from flags or the environment.

Start the same command in each of ``N`` processes (one per host, or several on one host)::

    ntkbo bench SPEC --out DIR --coordinator HOST:PORT --num-processes N --process-id I

or set ``NTKBO_COORDINATOR``, ``NTKBO_NUM_PROCESSES``, ``NTKBO_PROCESS_ID`` instead of the flags.
``DIR`` must be on a file system every process sees. Process ``I`` runs the cells
``I, I + N, I + 2N, ...`` of the study's cell list sorted by ``cell_id`` (``runner.assigned``) on its own
local devices (``jax.local_devices()``); the processes never exchange arrays, so no cross-process
collective backend is needed, and a process that dies loses only its cell in flight (re-running
it, or the whole study, finishes the rest). ``initialize`` must run before JAX computes anything.
"""

from __future__ import annotations


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
