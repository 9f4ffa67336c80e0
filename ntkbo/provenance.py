"""What produced a result: package versions and the git commit of the ntkbo source tree.

A bottom module (standard library only), so that every layer that records provenance (the
ask/tell saves, the study runner, the command line) reads it from one place without importing a
layer above its own.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys

__all__ = ["git_revision", "versions"]


def versions() -> dict:
    """Versions of ntkbo, jax, jaxlib, flax, optax, numpy and Python."""
    out = {}
    for name in ("ntkbo", "jax", "jaxlib", "flax", "optax", "numpy"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            mod = sys.modules.get(name)
            out[name] = getattr(mod, "__version__", None)
    out["python"] = platform.python_version()
    return out


def git_revision() -> str | None:
    """The commit of the ntkbo source tree (``git rev-parse HEAD``), or ``None``."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return rev.stdout.strip() or None if rev.returncode == 0 else None
