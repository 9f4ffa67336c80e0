"""JAX's persistent compilation cache for ntkbo's programs: compiled once per machine, not per script.

ntkbo's drivers (``minimize``, ``maximize``, ``minimize_chunks``, ``ntkbo.ask_tell``,
``ntkbo.space`` and the study runner) compile their programs with JAX's persistent compilation
cache on: the executables are written to a folder, and a later process that builds the same
program (same algorithm and options, problem, budget, JAX version and devices) reads them instead
of compiling. A first ``minimize`` compiles for seconds; the same script run again compiles nothing.

The folder is, in order: the ``path`` argument of ``enable``; ``$NTKBO_CACHE_DIR``;
``$XDG_CACHE_HOME/ntkbo/jax``; ``~/.cache/ntkbo/jax``. ``NTKBO_CACHE_DIR=off`` (or ``ntkbo ...
--no-cache``) turns it off. JAX keys each entry by the program, the compile options, the backend
and the JAX version, so a stale entry is never used; deleting the folder is always safe. It grows
by about a megabyte per distinct program and is never pruned (JAX's own size limit needs a file lock
on every write).

The cache covers ntkbo's calls only (``scope``): a user's own ``jax.jit`` programs keep the user's
settings, and a cache folder the user configured for JAX (``jax_compilation_cache_dir``) is used
as it is. The command line (``ntkbo run``, ``bench``, ``coco``, ``demo``) turns it on for the whole
process (``enable``) and also keeps its traced programs (``ntkbo.programs``).
"""

from __future__ import annotations

import contextlib
import functools
import os
from typing import Callable, Iterator

#: Programs that compile faster than this are not written (JAX's default is 1 s; most of the
#: library's per-capacity programs compile in 0.2-2 s, and together they dominate a short run).
MIN_COMPILE_SECONDS = 0.1
_OFF = ("", "off", "0", "none", "false", "no")


def cache_dir(path: str | None = None) -> str | None:
    """The cache folder to use (module docstring), or ``None`` when disabled."""
    if path is None:
        path = os.environ.get("NTKBO_CACHE_DIR")
    if path is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = os.path.join(base, "ntkbo", "jax")
    if path.strip().lower() in _OFF:
        return None
    return path


def _usable(folder: str | None) -> str | None:
    """``folder`` once it exists, or ``None`` if it is ``None`` or cannot be created (a missing
    cache only costs compile time)."""
    if folder is None:
        return None
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None
    return folder


def enable(path: str | None = None) -> str | None:
    """Turns on JAX's persistent compilation cache in ``cache_dir(path)`` for every program of the
    process; returns the folder, or ``None`` if disabled or the folder cannot be created (then
    nothing changes)."""
    import jax

    folder = _usable(cache_dir(path))
    if folder is None:
        return None
    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    _reset()  # JAX opens its cache folder once per process: a scope before may have opened another
    return folder


def _states():
    """JAX's configuration states of the cache folder and the minimum compile time, which set a
    value for the current thread as context managers (``None`` on a JAX without them)."""
    try:
        from jax._src import config as jax_config
        states = (jax_config.compilation_cache_dir,
                  jax_config.persistent_cache_min_compile_time_secs)
    except (ImportError, AttributeError):
        return None
    return states if all(callable(s) for s in states) else None


def active_dir() -> str | None:
    """The folder ntkbo's calls compile into now: the user's own ``jax_compilation_cache_dir`` if
    set, else ``cache_dir()`` (``None``: no cache)."""
    return _configured() or cache_dir()


def _configured() -> str | None:
    """The cache folder JAX has been given for the whole process (``None``: none)."""
    import jax

    return getattr(jax.config, "jax_compilation_cache_dir", None)


@contextlib.contextmanager
def scope() -> Iterator[str | None]:
    """Compiles what runs inside with the persistent cache in ``cache_dir()`` (for the current
    thread only), unless JAX already has a cache folder (the user's, or ``enable``'s), which is
    then used, or the cache is off. Yields the folder in use (``None``: none)."""
    own = _configured()
    if own:
        yield own
        return
    folder = _usable(cache_dir())
    states = _states()
    if folder is None or states is None:
        yield None
        return
    folder_state, seconds_state = states
    try:
        with folder_state(folder), seconds_state(MIN_COMPILE_SECONDS):
            yield folder
    finally:
        # JAX opens its cache once and then writes every program of the process to it, whatever
        # the folder setting says: forget it, so the user's own programs stay uncached.
        _reset()


def _reset() -> None:
    """Makes JAX open its cache folder anew at the next compilation (its ``reset_cache``)."""
    try:
        from jax.experimental.compilation_cache import compilation_cache
        compilation_cache.reset_cache()
    except (ImportError, AttributeError):
        pass


def cached(fn: Callable) -> Callable:
    """``fn`` with every call run in ``scope()``."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        with scope():
            return fn(*args, **kwargs)

    return call


#: How many compiled programs of each kind a driver keeps in memory (``Kept``): ``minimize``'s
#: runs, ``ntkbo.ask_tell``'s jitted ``suggest``/``update`` pairs.
KEEP_PROGRAMS = 8


class Kept:
    """At most ``KEEP_PROGRAMS`` jitted functions, by key, least recently used first out.

    XLA:CPU keeps each compiled executable's machine code in its own memory mappings (about 900 per
    ``minimize`` of a GP on a new problem), and ``jax.jit`` keeps every executable it compiled for
    the life of the function. A process that runs one problem after another would so grow until
    Linux refuses a mapping (``vm.max_map_count``, 65,530 by default) and the compiler fails with
    "Cannot allocate memory". ``get`` builds the function of a new key with ``make()``; when more
    than ``KEEP_PROGRAMS`` are kept, the least recently used is released (``release(value)``, by
    default its ``clear_cache()``, which frees its executables and their mappings) and dropped.
    Using a released key again compiles anew, a read of the persistent cache (``scope``)."""

    def __init__(self, release: Callable | None = None):
        import collections

        self._items: collections.OrderedDict = collections.OrderedDict()
        self._release = release or (lambda fn: fn.clear_cache())

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key, make: Callable):
        """The function kept under ``key`` (built by ``make()`` if absent), now the most recent."""
        value = self._items.pop(key, None)
        if value is None:
            value = make()
        self._items[key] = value
        while len(self._items) > max(1, int(KEEP_PROGRAMS)):
            _, old = self._items.popitem(last=False)
            self._release(old)
        return value

    def clear(self) -> None:
        """Releases every function kept."""
        while self._items:
            self._release(self._items.popitem(last=False)[1])
