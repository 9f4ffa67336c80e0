"""ntkbo against neural-tangents 0.6.5 (old-JAX lane only: ``python -m pytest -m nt tests/``).

* Native NNGP/NTK == ``stax`` kernels for depths 1-4, every activation, both parameterisations,
  with and without biases, on inputs with x = x', x = -x', a zero row and norms 1e-3 and 1e3.
* ntkbo's empirical NTK of the flax network == nt's ``empirical_ntk_fn`` (both implementations).
* The flax network == stax's ``apply_fn`` under the parameter mapping, both directions.

neural-tangents is imported through ``nt_shim`` (stubs ``neural_tangents.experimental``, which needs
TensorFlow) inside a fixture, so this module is collected, and deselected, in the main lane too.
"""

from __future__ import annotations

import itertools

import jax
import numpy as np
import pytest

import ntkbo.kernels as K
from ntkbo.kernels.nt import flax_to_stax_params, mlp_stax, stax_to_flax_params

pytestmark = pytest.mark.nt

ACTIVATIONS = [
    "identity",
    "relu",
    ("leaky_relu", {"alpha": 0.1}),
    ("ab_relu", {"a": -0.4, "b": 1.3}),
    "abs",
    "erf",
    ("erf", {"a": 1.5, "b": 0.7, "c": 0.2}),
    "sigmoid_like",
    "gelu",
    "sin",
    ("cos", {"a": 1.2, "b": 0.5, "c": 0.3}),
    ("rbf", {"gamma": 0.5}),
    ("exp", {"a": 0.9, "b": 0.3}),
    ("gaussian", {"a": 1.1, "b": -0.6}),
]
W_STD, WIDTH = 1.3, 7


@pytest.fixture(scope="module")
def nt():
    import nt_shim

    return nt_shim.import_neural_tangents()


def hard_inputs(activation):
    """x1 (8, 3) and x2 (7, 3): shared rows (x = x'), negated rows (x = -x'), norms 1e-3 and 1e3,
    and a zero row. For exp the 1e3 rows get norm ~3 instead: exp(b x) overflows there in both
    libraries (inf == inf would compare nothing)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 3))
    big = 3.0 if isinstance(activation, tuple) and activation[0] == "exp" else 1e3
    x1 = np.concatenate([x, -x[:1], x[1:2], 1e-3 * x[2:3], big * x[3:4]])
    x2 = np.concatenate([x1[:2], -x1[2:4], big * x[:1], 1e-3 * x[1:2], np.zeros((1, 3))])
    return x1, x2


@pytest.mark.parametrize("b_std", [None, 0.3])
@pytest.mark.parametrize("parameterization", ["ntk", "standard"])
@pytest.mark.parametrize("activation", ACTIVATIONS, ids=str)
def test_native_kernels_equal_stax(nt, activation, parameterization, b_std):
    """The op-by-op native recursion (``jit=False``) performs nt's operations in nt's order, so it
    agrees to rounding: rtol 1e-6 with no absolute slack, even at the x = -x' entries that are
    exact cancellations."""
    x1, x2 = hard_inputs(activation)
    for depth in (1, 2, 3, 4):
        spec = K.mlp_spec(depth, WIDTH, activation, W_std=W_STD, b_std=b_std,
                          parameterization=parameterization)
        native = K.kernel_fn_from_spec(spec, jit=False)
        _, _, stax_kernel_fn = mlp_stax(depth, WIDTH, activation, W_std=W_STD, b_std=b_std,
                                        parameterization=parameterization)
        pairs = [(x1, x2)] + ([(x1, None)] if depth == 2 else [])
        for a, b in pairs:
            got = native(a, b, ("nngp", "ntk"))
            want = stax_kernel_fn(a, b, ("nngp", "ntk"))
            for name in ("nngp", "ntk"):
                g, w = np.asarray(getattr(got, name)), np.asarray(getattr(want, name))
                assert np.all(np.isfinite(w)), (name, depth)
                np.testing.assert_allclose(g, w, rtol=1e-6, atol=0,
                                           err_msg=f"{name} depth={depth} x2={b is not None}")


@pytest.mark.parametrize("activation", ACTIVATIONS, ids=str)
def test_compiled_native_kernels_equal_stax(nt, activation):
    """The default (jit-compiled) kernel_fn: XLA fusion changes rounding, which matters only at
    exact cancellations (e.g. the ReLU family at x = -x', true value 0, where sqrt of a rounded
    q11 q22 - q12^2 ~ eps q^2 gives ~1e-8 q). So rtol 1e-6 plus 1e-7 of each entry's natural scale
    sqrt(K_ii K_jj) (a bound on |K_ij| for these PSD kernels)."""
    x1, x2 = hard_inputs(activation)
    x = np.concatenate([x1, x2])
    for parameterization, b_std in (("ntk", 0.3), ("standard", None)):
        _, _, native = K.mlp(3, WIDTH, activation, W_std=W_STD, b_std=b_std,
                             parameterization=parameterization)
        _, _, stax_kernel_fn = mlp_stax(3, WIDTH, activation, W_std=W_STD, b_std=b_std,
                                        parameterization=parameterization)
        got, want = native(x, None, ("nngp", "ntk")), stax_kernel_fn(x, None, ("nngp", "ntk"))
        for name in ("nngp", "ntk"):
            g, w = np.asarray(getattr(got, name)), np.asarray(getattr(want, name))
            scale = np.sqrt(np.outer(np.diag(w), np.diag(w)))
            np.testing.assert_array_less(np.abs(g - w), 1e-6 * np.abs(w) + 1e-7 * scale + 1e-300,
                                         err_msg=f"{name} {parameterization}")


def test_backend_nt_and_as_kernel_accept_stax(nt):
    x1, x2 = hard_inputs("relu")
    init_fn, apply_fn, kernel_fn = K.mlp(2, WIDTH, "gelu", W_std=W_STD, b_std=0.1, backend="nt")
    _, _, native = K.mlp(2, WIDTH, "gelu", W_std=W_STD, b_std=0.1)
    np.testing.assert_allclose(K.as_kernel(kernel_fn, "ntk")(x1, x2), native(x1, x2, "ntk"), rtol=1e-6)
    np.testing.assert_allclose(K.as_kernel(kernel_fn, "nngp")(x1), native(x1, None, "nngp"), rtol=1e-6)
    # Any stax architecture works through as_kernel, e.g. one ntkbo cannot build natively.
    _, _, conv_kernel_fn = nt.stax.serial(nt.stax.Conv(4, (2,)), nt.stax.Relu(), nt.stax.Flatten(),
                                          nt.stax.Dense(1))
    images = np.random.default_rng(1).normal(size=(3, 5, 2))
    k = K.as_kernel(conv_kernel_fn)(images)
    assert k.shape == (3, 3) and np.allclose(k, k.T)


@pytest.mark.parametrize("parameterization", ["ntk", "standard"])
def test_flax_network_equals_stax_apply_fn(nt, parameterization):
    x1, _ = hard_inputs("erf")
    for activation, depth, b_std in itertools.product(ACTIVATIONS, (1, 3), (None, 0.3)):
        if isinstance(activation, tuple) and activation[0] == "exp":
            continue  # exp of the 1e3 row overflows; covered below with unit-scale inputs
        init_fn, apply_fn, _ = K.mlp(depth, WIDTH, activation, W_std=W_STD, b_std=b_std,
                                     parameterization=parameterization)
        stax_init, stax_apply, _ = mlp_stax(depth, WIDTH, activation, W_std=W_STD, b_std=b_std,
                                            parameterization=parameterization)
        _, variables = init_fn(jax.random.PRNGKey(depth), x1.shape)
        # Same products, summed in possibly different orders: rounding only.
        np.testing.assert_allclose(apply_fn(variables, x1),
                                   stax_apply(flax_to_stax_params(variables, depth), x1),
                                   rtol=1e-10, atol=1e-12, err_msg=str((activation, depth, b_std)))
        _, stax_params = stax_init(jax.random.PRNGKey(depth + 10), x1.shape)
        np.testing.assert_allclose(apply_fn(stax_to_flax_params(stax_params, depth), x1),
                                   stax_apply(stax_params, x1),
                                   rtol=1e-10, atol=1e-12, err_msg=str((activation, depth, b_std)))
    x = np.random.default_rng(2).normal(size=(4, 3))
    _, apply_fn, _ = K.mlp(2, WIDTH, ("exp", {"a": 0.9, "b": 0.3}), b_std=0.3,
                           parameterization=parameterization)
    stax_init, stax_apply, _ = mlp_stax(2, WIDTH, ("exp", {"a": 0.9, "b": 0.3}), b_std=0.3,
                                        parameterization=parameterization)
    _, stax_params = stax_init(jax.random.PRNGKey(0), x.shape)
    np.testing.assert_allclose(apply_fn(stax_to_flax_params(stax_params, 2), x),
                               stax_apply(stax_params, x), rtol=1e-10)


@pytest.mark.parametrize("parameterization", ["ntk", "standard"])
def test_empirical_ntk_equals_nt_empirical_ntk_fn(nt, parameterization):
    x = np.random.default_rng(3).normal(size=(5, 3))
    x1, x2 = x, np.concatenate([x[:2], -x[2:3], 1e-3 * x[3:4]])
    init_fn, apply_fn, _ = K.mlp(2, 16, "gelu", W_std=W_STD, b_std=0.2, parameterization=parameterization)
    _, variables = init_fn(jax.random.PRNGKey(0), x1.shape)
    ours = {impl: K.empirical_ntk(apply_fn, impl)(x1, x2, variables) for impl in ("jacobian", "ntvp")}
    for implementation in (nt.NtkImplementation.JACOBIAN_CONTRACTION,
                           nt.NtkImplementation.NTK_VECTOR_PRODUCTS):
        theirs = nt.empirical_ntk_fn(apply_fn, vmap_axes=0, implementation=implementation)(x1, x2, variables)
        for impl, got in ours.items():
            # Same derivatives contracted in different orders: float64 rounding.
            np.testing.assert_allclose(got, theirs, rtol=1e-10, atol=1e-12,
                                       err_msg=f"{impl} vs {implementation}")
    G1 = K.grad_features(apply_fn)(x1, variables)
    G2 = K.grad_features(apply_fn)(x2, variables)
    np.testing.assert_allclose(G1 @ G2.T, ours["jacobian"], rtol=1e-12, atol=1e-13)
