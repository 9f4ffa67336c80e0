"""Test configuration: float64 everywhere so identities can be checked to tight tolerances."""

import os

os.environ.setdefault("JAX_ENABLE_X64", "1")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
