"""The command line's persistent compilation cache (``ntkbo.cache``)."""

import os
import subprocess
import sys
import textwrap

from ntkbo import cache

# A fresh interpreter (the cache is process-wide JAX configuration): compile a jitted ntkbo run,
# drop every in-memory cache, run again, and count JAX's persistent-cache hits and misses.
PROGRAM = textwrap.dedent("""
    import jax, ntkbo
    from ntkbo import cache
    from jax import monitoring
    events = []
    monitoring.register_event_listener(lambda name, **kw: events.append(name))
    assert cache.enable() == {folder!r}
    algo, problem = ntkbo.algorithms.random_search(), ntkbo.benchmarks.get("branin")
    first = ntkbo.minimize(algo, problem, 8, jax.random.PRNGKey(0), n_init=2).best_y
    hits_before = events.count("/jax/compilation_cache/cache_hits")
    jax.clear_caches()
    second = ntkbo.minimize(algo, problem, 8, jax.random.PRNGKey(0), n_init=2).best_y
    print(hits_before, events.count("/jax/compilation_cache/cache_hits"), float(first) == float(second))
""")


def test_second_run_loads_compiled_programs(tmp_path):
    """Catches a cache that is configured but never read (mutation: ``enable`` not setting
    ``jax_compilation_cache_dir``, or a minimum compile time that excludes the run's programs):
    after ``jax.clear_caches()`` the same run hits the persistent cache, writes files to the
    folder, and gives the same value."""
    folder = str(tmp_path / "jax-cache")
    env = {**os.environ, "NTKBO_CACHE_DIR": folder, "JAX_ENABLE_X64": "0"}
    out = subprocess.run([sys.executable, "-c", PROGRAM.format(folder=folder)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    before, after, same = out.stdout.split()
    assert int(before) == 0 and int(after) > 0 and same == "True"
    assert os.listdir(folder)


def test_folder_rules(monkeypatch, tmp_path):
    """The documented order: argument, then $NTKBO_CACHE_DIR ('off' disables), then
    $XDG_CACHE_HOME/ntkbo/jax."""
    monkeypatch.setenv("NTKBO_CACHE_DIR", "off")
    assert cache.cache_dir() is None and cache.enable() is None
    assert cache.cache_dir(str(tmp_path)) == str(tmp_path)
    monkeypatch.delenv("NTKBO_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_dir() == os.path.join(str(tmp_path), "ntkbo", "jax")
