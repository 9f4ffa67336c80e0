"""``ntkbo.kernels.structured``: the per-layer factorisation of the empirical NTK equals the inner
products of the autodiff gradient features ``grad_features`` (an independent computation: one
per-example ``jax.grad`` of the flax module) for every architecture option the factors branch on
(depth, biases on some layers, parameterisation, activation)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbo.kernels import grad_features, mlp
from ntkbo.kernels import structured as S

CASES = [  # (depth, width, activation, W_std, b_std, parameterization)
    (1, 7, "relu", (1.7, 1.0), None, "ntk"),  # NeuralBO's paper network
    (2, 5, "erf", 1.3, 0.4, "ntk"),
    (3, 4, "relu", 1.4, (0.2, None, 0.5, None), "ntk"),  # biases on some layers only
    (2, 6, "erf", 1.2, 0.3, "standard"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"depth{c[0]}-{c[2]}-{c[5]}")
def test_factors_reproduce_the_gradient_feature_gram(case):
    """Catches (mutations, each checked): the bias term ``t_l^2`` dropped from (1) or not squared;
    the inputs not scaled by ``s_l``; the readout layer's factor left out; the standard
    parameterisation treated as ``"ntk"``. Tolerance: float64 rounding of sums of ~100 terms."""
    depth, width, act, w_std, b_std, par = case
    init_fn, apply_fn, _ = mlp(depth, width, act, W_std=w_std, b_std=b_std, parameterization=par)
    # float64 throughout (tests/conftest.py enables x64)
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(len(CASES) + depth), 3)
    _, params = init_fn(k1, (-1, 3))
    x1 = jax.random.normal(k2, (5, 3), jnp.float64)
    x2 = jax.random.normal(k3, (4, 3), jnp.float64)
    g = grad_features(apply_fn)
    g1, g2 = np.asarray(g(x1, params)), np.asarray(g(x2, params))
    f1 = S.mlp_factors(apply_fn.module, params, x1)
    f2 = S.mlp_factors(apply_fn.module, params, x2)
    np.testing.assert_allclose(S.gram(f1, f2), g1 @ g2.T, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(S.diagonal(f1), np.sum(g1 * g1, -1), rtol=1e-10)
    # the forward pass inside mlp_factors is the module's: its readout input times the readout
    # weights is the network's output (no readout bias in cases 1, 3; added back otherwise)
    last = f1[-1]
    w_out = params["params"][f"Dense_{depth}"]
    out = last.a @ w_out["kernel"]
    if "bias" in w_out:
        out = out + (b_std if par == "ntk" else 1.0) * w_out["bias"]
    np.testing.assert_allclose(out, apply_fn(params, x1), rtol=1e-12, atol=1e-12)
    assert S.factor_width(apply_fn.module, 3) == sum(lf.a.shape[1] + lf.delta.shape[1]
                                                     for lf in f1)
