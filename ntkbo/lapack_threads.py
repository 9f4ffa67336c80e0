"""The threads of the LAPACK library behind jax's CPU linear algebra.

On CPU, jax's Cholesky and triangular solves are custom calls into LAPACK through
``scipy.linalg.cython_lapack``, i.e. into the OpenBLAS bundled with scipy. By default that OpenBLAS
starts one thread per core, next to XLA's own thread pool, which is already running the rest of the
program on every core. Every LAPACK call inside a compiled BO step then wakes threads that compete
with XLA's busy workers, and a BO step makes many small calls (the acquisition optimiser's gradient
steps solve with the Cholesky factor twice per step). Measured on 2 cores (2026-11-23): one ntk_gp
``suggest`` at capacity 512, three seeds vmapped, 2.9 s with OpenBLAS's default threads and 0.4 s
with one; a whole 300-evaluation Ackley-10 run 99 s against 10.6 s for one seed and 426 s against
64 s for three vmapped seeds (the "capacity-512 cliff"); a vmapped posterior-variance gradient step
at capacity 1024, 3.5 s against 0.14 s.

So ntkbo runs its own compiled calls (``minimize``, ask/tell, ``minimize_chunks``) on one LAPACK
thread and gives the library its count back after each (``during_calls``), unless the user chose
otherwise; ``ntkbo.configure_blas_threads()`` sets it for the whole process. Importing ntkbo
changes nothing: the library is shared with the process's own scipy code. The command line
(``ntkbo run|bench|demo|coco``) and ``ntkbo.experiments.run`` make the call; a script that compiles
ntkbo's functions itself (``jax.jit(algo.suggest)``) should make it first. Both follow the
environment:

* ``NTKBO_LAPACK_THREADS=<n>`` sets ``n`` threads; ``NTKBO_LAPACK_THREADS=keep`` leaves the library
  alone;
* otherwise, if ``OPENBLAS_NUM_THREADS`` or ``OMP_NUM_THREADS`` is set, OpenBLAS has already read
  it and ntkbo leaves it alone;
* otherwise one thread.

Only the OpenBLAS that scipy bundles (the one jax calls) is changed, never numpy's own; the
libraries are found and set through ``threadpoolctl``. Where no OpenBLAS is found (scipy built
against MKL or Accelerate) nothing happens.
"""

from __future__ import annotations

import contextlib
import functools
import os
from typing import Iterator

from threadpoolctl import ThreadpoolController

__all__ = ["ENV", "lapack_libraries", "get_lapack_threads", "set_lapack_threads",
           "configure_from_environment", "configure_blas_threads", "during_calls"]

#: The environment variable read by ``configure_from_environment``.
ENV = "NTKBO_LAPACK_THREADS"


def _controllers() -> list:
    """``threadpoolctl``'s controller of each OpenBLAS scipy's LAPACK (hence jax's CPU LAPACK)
    uses: the loaded ones under scipy's install folder (``scipy.libs`` of a wheel); if there are
    none, every loaded OpenBLAS not bundled with numpy."""
    try:
        import scipy
        import scipy.linalg.cython_lapack  # noqa: F401  (loads the library jax will call)
    except ImportError:
        return []
    found = [c for c in ThreadpoolController().lib_controllers if c.internal_api == "openblas"]
    site = os.path.dirname(os.path.dirname(os.path.realpath(scipy.__file__)))
    own = [c for c in found
           if os.path.realpath(c.filepath).startswith(os.path.join(site, "scipy"))]
    return own or [c for c in found
                   if "numpy" not in os.path.basename(os.path.dirname(c.filepath))]


def lapack_libraries() -> list[str]:
    """The paths of the OpenBLAS libraries scipy's LAPACK uses (``_controllers``)."""
    return [c.filepath for c in _controllers()]


def get_lapack_threads() -> int | None:
    """The thread count of the first LAPACK library of ``lapack_libraries`` (None if none)."""
    found = _controllers()
    return int(found[0].get_num_threads()) if found else None


def set_lapack_threads(n: int) -> int | None:
    """Sets every library of ``lapack_libraries`` to ``n`` threads; returns the previous count of
    the first one (None if no library was found)."""
    n = int(n)
    if n < 1:
        raise ValueError(f"the number of LAPACK threads must be >= 1, got {n}")
    found = _controllers()
    before = int(found[0].get_num_threads()) if found else None
    for c in found:
        c.set_num_threads(n)
    return before


def _wanted() -> int | None:
    """The thread count the module docstring's rule asks for (None: leave the library alone)."""
    value = os.environ.get(ENV, "").strip()
    if value.lower() == "keep":
        return None
    if value:
        try:
            return int(value)
        except ValueError:
            raise ValueError(f"{ENV} must be a positive integer or 'keep', got {value!r}") from None
    if os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS"):
        return None
    return 1


def configure_from_environment() -> int | None:
    """Applies the rule of the module docstring; returns the thread count set (None: untouched)."""
    n = _wanted()
    if n is not None:
        set_lapack_threads(n)
    return n


def configure_blas_threads(threads: int | None = None) -> int | None:
    """Sets the threads of the LAPACK library behind jax's CPU Cholesky and triangular solves
    (scipy's OpenBLAS; numpy's own is never touched): ``threads`` of them, or with ``None`` the
    environment's rule (module docstring: ``NTKBO_LAPACK_THREADS``, else leave a user's
    ``OPENBLAS_NUM_THREADS`` / ``OMP_NUM_THREADS`` alone, else one thread). Returns the count set,
    or ``None`` where the library was left as it was (none found, ``keep``, or the user's own
    variable). Call it once, before the first compiled step; importing ntkbo does not."""
    if threads is None:
        return configure_from_environment()
    set_lapack_threads(threads)
    return int(threads)


@functools.lru_cache(maxsize=1)
def _handles() -> tuple:
    """``_controllers()``, looked up once (``during_calls`` runs around every compiled call)."""
    return tuple(_controllers())


@contextlib.contextmanager
def during_calls() -> Iterator[None]:
    """The module docstring's rule (one thread unless the environment says otherwise) for the
    duration of the block, and the libraries' own thread counts back after it: ntkbo's drivers
    wrap their compiled calls in it, so a script that never called ``configure_blas_threads``
    runs them on one LAPACK thread while its own scipy code keeps its threads. The block must
    wait for its results (``jax.block_until_ready``): LAPACK reads the count at each call."""
    n = _wanted()
    handles: tuple = () if n is None else _handles()
    before = [int(c.get_num_threads()) for c in handles]
    for c, old in zip(handles, before):
        if old != n:
            c.set_num_threads(int(n or old))
    try:
        yield
    finally:
        for c, old in zip(handles, before):
            if old != n:
                c.set_num_threads(old)
