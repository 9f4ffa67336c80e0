"""Exported programs: a run's jitted programs traced and lowered once, stored, and loaded by later
processes.

JAX's persistent compilation cache (``ntkbo.cache``) removes the backend compilation from a second
identical ``ntkbo run``, but not the Python tracing and the lowering to StableHLO, which JAX redoes
in every process before it can look the compiled program up: 2-3 s of a second 30-evaluation run
(``docs/speed.md``). A ``ProgramStore`` keeps each program as a ``jax.export.Exported`` (the
serialised StableHLO module) under a key, and a later process with the same key deserialises it and
only lowers the small call around it; with the persistent cache on, the compilation is then a
cache read too.

The key of a program is the SHA-256 of

- the caller's ``fingerprint``: everything that determines what the traced function computes and
  is not an argument (for ``ntkbo run``: the algorithm's resolved options, the problem's name and
  options, ``ntkbo.cli``'s documented settings);
- the program's ``name`` (its static arguments: capacity, rounds, ...);
- the arguments' tree structure, shapes, dtypes and weak types;
- ``source_digest()``: the SHA-256 of every ``.py`` file of the installed ntkbo package, so an
  edited library never loads a program traced from its old source;
- the environment: Python, jax, jaxlib, numpy, flax, optax, scipy versions, the backend and device
  kind, and the JAX configuration that changes tracing (x64, PRNG implementation, matmul
  precision, ...).

Anything not in the key must not change the traced program; a program that closes over state the
fingerprint does not describe (a user's function, an option given as a Python callable) must not
use a store (``ntkbo.cli`` passes none then). A program that cannot be exported (a host callback,
an argument or result type ``jax.export`` cannot serialise) runs as a plain ``jax.jit`` call, with
one warning per program name.

The loaded program is the same StableHLO module that ``jax.jit`` compiles in the exporting
process, so runs are bit-identical with and without a store (``tests/test_programs.py``).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import pickle
import platform
import warnings
from typing import Any, Callable

import jax

from ntkbo import files

#: JAX configuration options that change what tracing produces.
_TRACING_CONFIG = ("jax_enable_x64", "jax_default_prng_impl", "jax_threefry_partitionable",
                   "jax_default_matmul_precision", "jax_numpy_rank_promotion",
                   "jax_numpy_dtype_promotion", "jax_enable_checks")
_PACKAGES = ("jax", "jaxlib", "numpy", "scipy", "flax", "optax")


@functools.lru_cache(maxsize=1)
def source_digest() -> str:
    """SHA-256 over the relative paths and contents of every ``.py`` file of the ntkbo package
    (sorted by path): the library's code as this process imported it."""
    root = os.path.dirname(os.path.abspath(__file__))
    digest = hashlib.sha256()
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        files += [os.path.join(folder, n) for n in names if n.endswith(".py")]
    for path in sorted(files):
        digest.update(os.path.relpath(path, root).encode() + b"\0")
        with open(path, "rb") as fh:
            digest.update(fh.read() + b"\0")
    return digest.hexdigest()


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def environment() -> dict:
    """What besides the fingerprint and the arguments decides the traced program (module
    docstring): versions, backend, device kind and tracing configuration."""
    device = jax.devices()[0]
    config = {}
    for option in _TRACING_CONFIG:
        try:
            config[option] = str(getattr(jax.config, option))
        except AttributeError:  # an option this JAX version does not have
            config[option] = None
    return {"python": platform.python_version(),
            "packages": {name: _version(name) for name in _PACKAGES},
            "platform": device.platform, "device_kind": device.device_kind,
            "devices": jax.device_count(), "config": config, "source": source_digest()}


def _leaf_type(x) -> str:
    """Shape, dtype and weak type of an argument leaf, as tracing sees them."""
    aval = jax.api_util.shaped_abstractify(x)
    weak = getattr(aval, "weak_type", False)  # a ShapedArray's (AbstractValue does not type it)
    return f"{aval.str_short(short_dtypes=False)}{'~weak' if weak else ''}"


class ProgramStore:
    """Exported programs in ``folder``, keyed by ``fingerprint`` and each call's program name and
    argument types (module docstring).

    ``store(name, fn, *args)`` returns ``fn(*args)``, where ``fn`` is a pure JAX function (jitted
    or not) of array pytrees; ``name`` must identify everything ``fn`` closes over beyond the
    fingerprint (its static arguments). The first call with a key exports and writes the program;
    later calls, in this process or another, load it. ``loaded`` and ``exported`` count the keys
    read from and written to disk, ``fallbacks`` the programs that ran as plain ``jax.jit``."""

    def __init__(self, folder: str, fingerprint: str):
        self.folder = folder
        self._base = hashlib.sha256(json.dumps(
            {"fingerprint": fingerprint, "environment": environment()}, sort_keys=True,
            default=repr).encode()).hexdigest()
        self._programs: dict[str, tuple[Callable, Any] | None] = {}
        self._warned: set[str] = set()
        self.loaded = self.exported = self.fallbacks = 0

    def key(self, name: str, args: tuple) -> str:
        """The program's key: the store's base key, ``name`` and the arguments' types."""
        leaves, tree = jax.tree_util.tree_flatten(args)
        text = json.dumps([self._base, name, str(tree), [_leaf_type(x) for x in leaves]])
        return hashlib.sha256(text.encode()).hexdigest()

    def __call__(self, name: str, fn: Callable, *args):
        leaves, in_tree = jax.tree_util.tree_flatten(args)
        key = self.key(name, args)
        if key not in self._programs:
            self._programs[key] = self._load(key) or self._export(name, key, fn, in_tree, leaves)
        program = self._programs[key]
        if program is None:
            return fn(*args)
        call, out_tree = program
        return jax.tree_util.tree_unflatten(out_tree, call(*leaves))

    def _paths(self, key: str) -> tuple[str, str]:
        return (os.path.join(self.folder, f"{key}.stablehlo"),
                os.path.join(self.folder, f"{key}.tree"))

    def _load(self, key: str):
        module, tree = self._paths(key)
        try:
            with open(module, "rb") as fh:
                exported = jax.export.deserialize(bytearray(fh.read()))
            with open(tree, "rb") as fh:
                out_tree = pickle.load(fh)
        except FileNotFoundError:
            return None
        except Exception as err:  # noqa: BLE001 - a damaged or foreign entry: export it again
            warnings.warn(f"ntkbo.programs: ignoring the unreadable entry {module} ({err!r})",
                          stacklevel=3)
            return None
        self.loaded += 1
        return jax.jit(exported.call), out_tree

    def _export(self, name: str, key: str, fn: Callable, in_tree, leaves):
        box = {}

        def flat(*flat_args):
            outs, box["tree"] = jax.tree_util.tree_flatten(
                fn(*jax.tree_util.tree_unflatten(in_tree, flat_args)))
            return outs

        try:
            exported = jax.export.export(jax.jit(flat))(*leaves)
            module = exported.serialize()
            tree = pickle.dumps(box["tree"])
        except Exception as err:  # noqa: BLE001 - not exportable: run it as plain jit
            self.fallbacks += 1
            if name not in self._warned:
                self._warned.add(name)
                warnings.warn(f"ntkbo.programs: program {name!r} is not exportable and is traced "
                              f"in every process ({type(err).__name__}: {err})", stacklevel=3)
            return None
        os.makedirs(self.folder, exist_ok=True)
        for path, data in zip(self._paths(key), (module, tree)):
            _write_atomically(path, data)
        self.exported += 1
        return jax.jit(exported.call), box["tree"]


def _write_atomically(path: str, data: bytes | bytearray) -> None:
    """Writes ``data`` to ``path`` whole or not at all (``ntkbo.files.atomic_write``), so a
    concurrent reader never sees a partial entry."""
    files.atomic_write(path, data)
