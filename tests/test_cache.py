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


# A library user's script, run twice in fresh processes: ntkbo's run goes to the cache by default
# (no ``enable``), the user's own program compiled outside ntkbo does not, and the second process
# reads the run's program instead of compiling it.
SCRIPT = textwrap.dedent("""
    import jax, jax.numpy as jnp, ntkbo
    from jax import monitoring
    events = []
    monitoring.register_event_listener(lambda name, **kw: events.append(name))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)  # would write anything
    algo, problem = ntkbo.algorithms.random_search(), ntkbo.benchmarks.get("branin")
    best = ntkbo.minimize(algo, problem, 8, jax.random.PRNGKey(0), n_init=2).best_y
    mine = jax.jit(lambda x: jnp.cumsum(jnp.sin(x)) @ x)(jnp.ones(7))    # the user's own program
    print(events.count("/jax/compilation_cache/cache_hits"),
          events.count("/jax/compilation_cache/cache_misses"), float(best))
""")


def _run(script, env):
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()


def test_library_runs_are_cached_by_default_and_only_they(tmp_path):
    """Mutations caught: ``minimize`` not entering ``cache.scope`` (the second process misses
    and compiles again); ``scope`` setting JAX's global cache folder instead of the calling
    thread's (the user's own program, compiled outside ntkbo, is written to the folder too)."""
    folder = tmp_path / "cache"
    env = {**os.environ, "NTKBO_CACHE_DIR": str(folder), "JAX_ENABLE_X64": "0",
           "NTKBO_QUIET": "1"}
    hits1, misses1, best1 = _run(SCRIPT, env)
    hits2, misses2, best2 = _run(SCRIPT, env)
    assert (int(hits1), int(hits2)) == (0, int(misses1)) and int(misses1) >= 1
    assert int(misses2) == 0 and best1 == best2
    names = os.listdir(folder)
    assert names and all(n.startswith("jit__minimize") for n in names), names


def test_a_users_own_cache_folder_is_used_as_it_is(tmp_path):
    """A folder the user gave JAX wins over ntkbo's (mutation caught: ``scope`` overriding
    ``jax_compilation_cache_dir`` with ``cache_dir()``)."""
    own, ours = tmp_path / "own", tmp_path / "ours"
    script = ("import jax\njax.config.update('jax_compilation_cache_dir', %r)\n" % str(own)
              + SCRIPT)
    env = {**os.environ, "NTKBO_CACHE_DIR": str(ours), "JAX_ENABLE_X64": "0", "NTKBO_QUIET": "1"}
    _run(script, env)
    assert any(n.startswith("jit__minimize") for n in os.listdir(own))
    assert not ours.exists() or not os.listdir(ours)


def test_scope_is_thread_local_and_restored(monkeypatch, tmp_path):
    """``scope`` sets the folder and minimum compile time for the calling thread inside the block
    only, and does nothing when the cache is off. Mutation caught: a scope that leaves the
    folder set after the block (every later program of the user's would be written)."""
    import jax
    from jax._src import config as jax_config

    monkeypatch.setenv("NTKBO_CACHE_DIR", "off")
    with cache.scope() as folder:
        assert folder is None and jax_config.compilation_cache_dir.value is None
    monkeypatch.setenv("NTKBO_CACHE_DIR", str(tmp_path / "c"))
    with cache.scope() as folder:
        assert folder == str(tmp_path / "c") == jax_config.compilation_cache_dir.value
        assert jax_config.persistent_cache_min_compile_time_secs.value == cache.MIN_COMPILE_SECONDS
    assert jax_config.compilation_cache_dir.value is None
    assert jax.config.jax_compilation_cache_dir is None
