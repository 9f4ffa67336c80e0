"""A line on the terminal while a long first call compiles.

The first call of a driver with new settings traces, lowers and compiles its program before it
runs; on a CPU that takes seconds to a minute, and without a word it looks like a hang. ``notice``
wraps such a call: if the call has built a program (JAX finished tracing one in this thread) and
is still running after ``AFTER`` seconds, one line goes to standard error, and a second one with
the time taken when it returns. A call that only runs programs already compiled, or that returns
sooner, prints nothing.

``NTKBO_QUIET=1`` in the environment, or ``quiet()``, silences it (the command line does, since
its progress bar already says that it is compiling).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import Iterator

#: Seconds a call that builds a program runs before the line is printed.
AFTER = 2.0
_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
_local = threading.local()
_listening = False
_lock = threading.Lock()
_quiet = False


def quiet(on: bool = True) -> None:
    """Silences (``on``) or restores the notices for this process."""
    global _quiet
    _quiet = bool(on)


def _enabled() -> bool:
    return not _quiet and os.environ.get("NTKBO_QUIET", "").strip().lower() not in (
        "1", "true", "yes", "on")


def _on_duration(event: str, duration_secs: float, **kwargs: str | int) -> None:
    del duration_secs, kwargs
    watch = getattr(_local, "watch", None)
    if watch is not None and event == _TRACE_EVENT:
        watch.set()


def _listen() -> None:
    """Registers the trace listener once per process (JAX's monitoring has no removal)."""
    global _listening
    with _lock:
        if not _listening:
            import jax

            jax.monitoring.register_event_duration_secs_listener(_on_duration)
            _listening = True


@contextlib.contextmanager
def notice(what: str, *, after: float | None = None) -> Iterator[None]:
    """Prints ``ntkbo: compiling <what> ...`` to standard error if the block builds a program
    and runs longer than ``after`` seconds (default ``AFTER``), and the time taken at its end."""
    if not _enabled() or getattr(_local, "watch", None) is not None:  # nested: the outer speaks
        yield
        return
    _listen()
    traced, done = threading.Event(), threading.Event()
    printed = threading.Event()
    start = time.perf_counter()

    def speak():
        if not done.wait(AFTER if after is None else after) and traced.is_set():
            from ntkbo import cache

            folder = cache.active_dir()
            where = (f"; later processes read it from the cache in {folder}" if folder else "")
            sys.stderr.write(f"ntkbo: compiling {what} (the first call with these settings"
                             f"{where}) ...\n")
            sys.stderr.flush()
            printed.set()

    _local.watch = traced
    timer = threading.Thread(target=speak, daemon=True)
    timer.start()
    try:
        yield
    finally:
        _local.watch = None
        done.set()
        timer.join()
        if printed.is_set():
            sys.stderr.write(f"ntkbo: compiled and ran {what} in "
                             f"{time.perf_counter() - start:.1f} s\n")
            sys.stderr.flush()
