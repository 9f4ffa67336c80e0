"""Test configuration: float64 everywhere so identities can be checked to tight tolerances."""

import os

os.environ.setdefault("JAX_ENABLE_X64", "1")
# One OpenBLAS thread: JAX's CPU Cholesky and triangular solves call LAPACK, whose threads fight
# XLA's own on small matrices (a 256x256 Cholesky measured 238 ms with default threads, 0.8 ms
# with one; benchmarks/README.md).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
