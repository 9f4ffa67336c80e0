"""Import neural-tangents 0.6.5 without TensorFlow (used only by the ``nt`` test lane).

``import neural_tangents`` executes ``from . import experimental``, and
``neural_tangents.experimental`` imports TensorFlow (a ~2.5 GB dependency the stax kernels,
``predict`` and ``empirical`` modules never use). Registering an empty module under that name in
``sys.modules`` first makes the import succeed; the parts ntkbo's tests use (``stax``,
``empirical_ntk_fn``) do not touch ``experimental``. neural-tangents 0.6.5 also needs jax <= 0.5.3
(it imports ``jax.core.Jaxpr``, removed in jax 0.6), so these tests run only in the old-JAX lane:
``/work/venv_nt/bin/python -m pytest -m nt tests/``.

Usage in a test module::

    import nt_shim  # tests/ is on sys.path under pytest (rootdir conftest)
    nt = nt_shim.import_neural_tangents()
"""

from __future__ import annotations

import sys
import types


def import_neural_tangents():
    """``neural_tangents`` with ``neural_tangents.experimental`` stubbed out (see module docstring)."""
    name = "neural_tangents.experimental"
    if name not in sys.modules:
        stub = types.ModuleType(name)
        stub.__doc__ = "Empty stand-in: the real module needs TensorFlow (see tests/nt_shim.py)."
        sys.modules[name] = stub
    import neural_tangents

    return neural_tangents
