"""Lazy imports of the ``tasks`` extra: a missing package is named with the install command."""

from __future__ import annotations

import importlib

INSTALL = "pip install 'ntkbo[tasks]'"


def require(module: str):
    """``importlib.import_module(module)``, or an ``ImportError`` naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(f"this task needs the package providing {module!r}, which is not "
                          f"installed ({err}); install the tasks extra: {INSTALL}") from err
