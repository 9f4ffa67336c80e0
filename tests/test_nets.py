"""ntkbo.nets.MLP against a hand-written numpy forward pass and its documented init distribution."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import erf as sp_erf
from scipy.special import ndtr

import ntkbo.kernels as K
from ntkbo.nets import MLP, Dense

# phi written with numpy/scipy, independently of ntkbo's registry.
NUMPY_ACTIVATIONS = {
    "identity": lambda x: x,
    "relu": lambda x: np.maximum(x, 0),
    ("leaky_relu", (("alpha", 0.1),)): lambda x: np.where(x > 0, x, 0.1 * x),
    ("ab_relu", (("a", -0.4), ("b", 1.3))): lambda x: np.where(x > 0, 1.3 * x, -0.4 * x),
    "abs": np.abs,
    "erf": sp_erf,
    ("erf", (("a", 1.5), ("b", 0.7), ("c", 0.2))): lambda x: 1.5 * sp_erf(0.7 * x) + 0.2,
    "sigmoid_like": lambda x: 0.5 * sp_erf(x / 2.4020563531719796) + 0.5,
    "gelu": lambda x: x * ndtr(x),
    "sin": np.sin,
    ("cos", (("a", 1.2), ("b", 0.5), ("c", 0.3))): lambda x: 1.2 * np.cos(0.5 * x + 0.3),
    ("rbf", (("gamma", 0.5),)): lambda x: math.sqrt(2) * np.sin(x + math.pi / 4),
    ("exp", (("a", 0.9), ("b", 0.3))): lambda x: 0.9 * np.exp(0.3 * x),
    ("gaussian", (("a", 1.1), ("b", -0.6))): lambda x: 1.1 * np.exp(-0.6 * x**2),
}


def as_spec(key):
    return key if isinstance(key, str) else (key[0], dict(key[1]))


def test_every_registered_activation_is_tested():
    assert {k if isinstance(k, str) else k[0] for k in NUMPY_ACTIVATIONS} == set(K.ACTIVATIONS)


@pytest.mark.parametrize("key", list(NUMPY_ACTIVATIONS), ids=str)
def test_activation_functions_match_numpy(key):
    x = np.linspace(-4, 4, 41)
    got = K.as_activation(as_spec(key))(jnp.asarray(x))
    # Elementwise float64 special functions: agreement to a few ulps.
    np.testing.assert_allclose(got, NUMPY_ACTIVATIONS[key](x), rtol=1e-13, atol=1e-15)


def numpy_forward(variables, x, depth, phi, W_std, b_std, parameterization):
    """The stax.Dense equations, written out: ntk: z = W_std/sqrt(N) x K + b_std b; standard: x K + b."""
    params = variables["params"]
    h = np.asarray(x, np.float64)
    for layer in range(depth + 1):
        dense = params[f"Dense_{layer}"]
        kernel = np.asarray(dense["kernel"])
        if parameterization == "ntk":
            h_new = W_std[layer] / math.sqrt(h.shape[1]) * h @ kernel
            if b_std[layer] is not None:
                h_new = h_new + b_std[layer] * np.asarray(dense["bias"])
        else:
            h_new = h @ kernel
            if b_std[layer] is not None:
                h_new = h_new + np.asarray(dense["bias"])
        h = h_new if layer == depth else phi(h_new)
    return h


@pytest.mark.parametrize("parameterization", ["ntk", "standard"])
@pytest.mark.parametrize("b_std", [None, 0.3, (0.2, None, 0.5)])
def test_forward_matches_numpy_and_parameter_layout(parameterization, b_std):
    depth, width, d = 2, 6, 3
    W_std = (1.7, 1.1, 0.8)
    key = ("leaky_relu", (("alpha", 0.1),))
    net = MLP(depth, width, as_spec(key), W_std=W_std, b_std=b_std, parameterization=parameterization)
    x = np.random.default_rng(0).normal(size=(5, d))
    variables = net.init(jax.random.PRNGKey(0), x)
    out = net.apply(variables, x)
    assert out.shape == (5, 1) and out.dtype == jnp.float64
    b_stds = b_std if isinstance(b_std, tuple) else (b_std,) * (depth + 1)
    params = variables["params"]
    assert sorted(params) == ["Dense_0", "Dense_1", "Dense_2"]
    for layer, (fan_in, out_dim) in enumerate([(d, width), (width, width), (width, 1)]):
        assert params[f"Dense_{layer}"]["kernel"].shape == (fan_in, out_dim)
        assert params[f"Dense_{layer}"]["kernel"].dtype == jnp.float64
        assert ("bias" in params[f"Dense_{layer}"]) == (b_stds[layer] is not None)
        if b_stds[layer] is not None:
            assert params[f"Dense_{layer}"]["bias"].shape == (out_dim,)
    want = numpy_forward(variables, x, depth, NUMPY_ACTIVATIONS[key], W_std, b_stds, parameterization)
    # Same arithmetic up to summation order in the matrix products.
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("parameterization", ["ntk", "standard"])
def test_init_distribution(parameterization):
    """ntk: kernel, bias ~ N(0, 1); standard: kernel ~ N(0, W_std^2/fan_in), bias ~ N(0, b_std^2).
    Sample moments of n i.i.d. entries: the mean has standard error s/sqrt(n) and the standard
    deviation ~ s/sqrt(2n); 5 standard errors (deterministic seed)."""
    d, width, W_std, b_std = 4, 1024, 1.7, 0.3
    net = MLP(1, width, "relu", W_std=W_std, b_std=b_std, parameterization=parameterization)
    params = net.init(jax.random.PRNGKey(1), jnp.zeros((1, d)))["params"]
    stds = {
        ("Dense_0", "kernel"): W_std / math.sqrt(d),
        ("Dense_0", "bias"): b_std,
        ("Dense_1", "kernel"): W_std / math.sqrt(width),
        ("Dense_1", "bias"): b_std,
    }
    for (layer, name), std in stds.items():
        if parameterization == "ntk":
            std = 1.0
        values = np.asarray(params[layer][name]).ravel()
        n = values.size
        if n < 100:  # the readout bias is a single number: only check it is a plausible draw
            assert np.all(np.abs(values) < 6 * std)
            continue
        assert abs(values.mean()) < 5 * std / math.sqrt(n), (layer, name)
        assert abs(values.std() - std) < 5 * std / math.sqrt(2 * n), (layer, name, values.std(), std)


def test_dense_alone_and_spec_forms_and_transforms():
    x = jnp.asarray(np.random.default_rng(2).normal(size=(4, 3)))
    dense = Dense(5, W_std=2.0, b_std=None)
    v = dense.init(jax.random.PRNGKey(0), x)
    np.testing.assert_allclose(dense.apply(v, x), 2.0 / math.sqrt(3) * x @ v["params"]["kernel"], rtol=1e-13)
    # The three activation spec forms build the same network.
    outs = []
    for spec in ("erf", ("erf", {}), K.make_activation("erf")):
        net = MLP(1, 8, spec)
        outs.append(net.apply(net.init(jax.random.PRNGKey(3), x), x))
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])
    # jit changes nothing but fusion. (vmap over keys, i.e. many seeds at once, is exercised by the
    # Monte Carlo tests in test_kernels_native.py, which check the distribution it produces.)
    net = MLP(1, 8, ("leaky_relu", {"alpha": 0.2}))
    variables = net.init(jax.random.PRNGKey(4), x)
    np.testing.assert_allclose(jax.jit(net.apply)(variables, x), net.apply(variables, x), rtol=1e-13)


def test_invalid_arguments_raise_named_errors():
    x = jnp.zeros((2, 3))
    with pytest.raises(ValueError, match=r"depth:"):
        MLP(0, 4).init(jax.random.PRNGKey(0), x)
    with pytest.raises(ValueError, match=r"width:"):
        MLP(1, 0).init(jax.random.PRNGKey(0), x)
    with pytest.raises(ValueError, match=r"activation: unknown activation 'tanh'; valid names are"):
        MLP(1, 4, "tanh").init(jax.random.PRNGKey(0), x)
    with pytest.raises(ValueError, match=r"parameterization:"):
        MLP(1, 4, parameterization="NTK-ish").init(jax.random.PRNGKey(0), x)
    with pytest.raises(ValueError, match=r"x: expected shape \(n, d\)"):
        MLP(1, 4).init(jax.random.PRNGKey(0), jnp.zeros(3))
