"""JAX's persistent compilation cache for the command line and the experiment runner.

A first ``ntkbo run`` compiles one program per buffer capacity (``ntkbo.loop``) and spends most of
its time there on small budgets. With the persistent cache, compiled executables are written to a
folder and a second run of the same command (same algorithm, problem, budget, seeds, JAX version
and devices) loads them instead of compiling.

The folder is, in order: the ``path`` argument; ``$NTKBO_CACHE_DIR``; ``$XDG_CACHE_HOME/ntkbo/jax``;
``~/.cache/ntkbo/jax``. ``NTKBO_CACHE_DIR=off`` (or ``ntkbo ... --no-cache``) disables it. JAX keys
each entry by the program, the compile options, the backend and the JAX version, so a stale entry
is never used; deleting the folder is always safe.

``ntkbo run`` also keeps its traced programs in the folder's ``programs`` subfolder
(``ntkbo.programs``): the cache above removes the compilation but not the tracing and lowering.

The library itself never turns the cache on: a user's own JAX program keeps its own settings.
"""

from __future__ import annotations

import os

#: Programs that compile faster than this are not written (JAX's default is 1 s; most of the
#: library's per-capacity programs compile in 0.2-2 s, and together they dominate a short run).
MIN_COMPILE_SECONDS = 0.1


def cache_dir(path: str | None = None) -> str | None:
    """The cache folder to use (module docstring), or ``None`` when disabled."""
    if path is None:
        path = os.environ.get("NTKBO_CACHE_DIR")
    if path is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = os.path.join(base, "ntkbo", "jax")
    if path.strip().lower() in ("", "off", "0", "none", "false"):
        return None
    return path


def enable(path: str | None = None) -> str | None:
    """Turns on JAX's persistent compilation cache in ``cache_dir(path)``; returns the folder, or
    ``None`` if disabled or the folder cannot be created (then nothing changes: a missing cache
    only costs compile time)."""
    import jax

    folder = cache_dir(path)
    if folder is None:
        return None
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None
    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    return folder
