"""Finite-width NTK and gradient features: the two implementations agree with each other, with the
gradient features, with closed forms, and converge to the analytic NTK at rate width^-1/2."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

import ntkbo.kernels as K


@pytest.fixture(scope="module")
def network():
    """A depth-2 erf network with biases. Its parameters are any values of the right shapes (the
    identities tested hold for every parameter value), drawn with numpy: a jax.random init would
    cost an XLA compile per parameter on the CI machine."""
    init_fn, apply_fn, _ = K.mlp(2, 6, "erf", W_std=1.5, b_std=0.2)
    x1 = jnp.asarray(np.random.default_rng(0).normal(size=(5, 3)))
    x2 = jnp.asarray(np.random.default_rng(1).normal(size=(4, 3)))
    shapes = jax.eval_shape(lambda k: init_fn(k, x1.shape)[1], jax.random.PRNGKey(0))
    rng = np.random.default_rng(7)
    params = jax.tree_util.tree_map(lambda s: jnp.asarray(rng.normal(size=s.shape)), shapes)
    return apply_fn, params, x1, x2


def test_implementations_and_grad_features_agree(network):
    apply_fn, params, x1, x2 = network
    G1 = K.grad_features(apply_fn)(x1, params)
    G2 = K.grad_features(apply_fn)(x2, params)
    p = ravel_pytree(params)[0].size
    assert G1.shape == (5, p)
    want = np.asarray(G1 @ G2.T)
    # Same products summed in different orders: float64 rounding only.
    for implementation, batch_size in [("jacobian", None), ("ntvp", None), ("ntvp", 3)]:
        fn = K.empirical_ntk(apply_fn, implementation, batch_size)
        np.testing.assert_allclose(fn(x1, x2, params), want, rtol=1e-12, atol=1e-14)
        if batch_size is None:
            np.testing.assert_allclose(fn(x1, None, params), G1 @ G1.T, rtol=1e-12, atol=1e-14)
    # Under an outer jit and vmap (over a batch of input sets).
    entk = K.empirical_ntk(apply_fn)
    batched = jax.jit(jax.vmap(entk, in_axes=(0, 0, None)))(jnp.stack([x1, x1]), jnp.stack([x2, x2]), params)
    np.testing.assert_allclose(batched, np.stack([want, want]), rtol=1e-12, atol=1e-14)


def test_grad_features_flattening_order_is_ravel_pytree(network):
    """G @ ravel(delta) is the directional derivative of f along the perturbation delta (a jvp), and
    each row is ravel_pytree of that point's gradient."""
    apply_fn, params, x1, _ = network
    G = K.grad_features(apply_fn)(x1, params)
    flat, unravel = ravel_pytree(params)
    delta = unravel(jnp.asarray(np.random.default_rng(2).normal(size=flat.shape)))
    _, tangent = jax.jvp(lambda p: apply_fn(p, x1)[:, 0], (params,), (delta,))
    np.testing.assert_allclose(G @ ravel_pytree(delta)[0], tangent, rtol=1e-12, atol=1e-13)
    row = ravel_pytree(jax.grad(lambda p: apply_fn(p, x1[2:3])[0, 0])(params))[0]
    np.testing.assert_allclose(G[2], row, rtol=1e-13, atol=1e-15)


def test_closed_form_for_a_hand_written_model():
    """f(x) = w . phi(x) + c with phi(x) = (x, x^2): the gradient features are (x, x^2, 1), so the NTK
    is x x'^T + x^2 x'^2^T + 1, whatever the parameter values; also checks plain (non-flax)
    apply_fns with (n,) outputs."""

    def apply_fn(params, x):
        return jnp.concatenate([x, x**2], axis=1) @ params["w"] + params["c"]

    params = {"w": jnp.arange(6.0), "c": jnp.asarray(0.5)}
    x1 = jnp.asarray(np.random.default_rng(3).normal(size=(4, 3)))
    x2 = jnp.asarray(np.random.default_rng(4).normal(size=(2, 3)))
    want = x1 @ x2.T + (x1**2) @ (x2**2).T + 1.0
    for implementation in K.empirical.IMPLEMENTATIONS:
        np.testing.assert_allclose(K.empirical_ntk(apply_fn, implementation)(x1, x2, params), want,
                                   rtol=1e-13)
    # ravel_pytree order: keys sorted, so "c" (1 entry) comes before "w" (6 entries).
    G = K.grad_features(apply_fn)(x1, params)
    np.testing.assert_allclose(G, np.concatenate([np.ones((4, 1)), x1, x1**2], axis=1), rtol=1e-14)


def test_errors_name_the_argument(network):
    apply_fn, params, x1, x2 = network
    with pytest.raises(ValueError, match=r"implementation: expected one of jacobian, ntvp, got 'structured'"):
        K.empirical_ntk(apply_fn, "structured")
    with pytest.raises(ValueError, match=r"batch_size:"):
        K.empirical_ntk(apply_fn, "ntvp", batch_size=0)
    with pytest.raises(ValueError, match=r"x2: feature dimension 2 does not match x1's 3"):
        K.empirical_ntk(apply_fn)(x1, x2[:, :2], params)
    with pytest.raises(ValueError, match=r"x1: expected shape \(n, d\)"):
        K.empirical_ntk(apply_fn)(x1[0], None, params)
    two_outputs = lambda p, x: jnp.concatenate([apply_fn(p, x)] * 2, axis=1)
    with pytest.raises(ValueError, match=r"apply_fn: .*scalar-output"):
        K.grad_features(two_outputs)(x1, params)


def test_empirical_ntk_converges_to_the_analytic_ntk():
    """Relative Frobenius error ||Theta_m - Theta||_F / ||Theta||_F of the depth-1 network's
    empirical NTK at initialisation: Theta_m is an average of m i.i.d. per-unit terms (plus the
    readout-bias term), so the error is O(m^-1/2) (Jacot et al. 2018, Theorem 1; Lee et al. 2019).
    Mean over 8 seeds at widths 256 ... 8192 and a least-squares slope in log-log; the window
    [-0.7, -0.3] around -0.5 allows for seed noise over a 32x range of widths.

    Widths are nested: the width-m network is the first m hidden units of one width-8192 draw
    (exactly a width-m draw, since NTK-parameterised entries are N(0, 1) whatever the width), which
    needs one random initialisation per seed instead of one per width."""
    widths = [256, 512, 1024, 2048, 4096, 8192]
    seeds, depth = 8, 1
    x = jnp.asarray(np.random.default_rng(5).normal(size=(4, 2)))
    W_std, b_std = 1.4, 0.1
    init_big, _, kernel_fn = K.mlp(depth, widths[-1], "relu", W_std=W_std, b_std=b_std)
    target = np.asarray(kernel_fn(x, None, "ntk"))
    big = jax.jit(jax.vmap(lambda k: init_big(k, x.shape)[1]))(jax.random.split(jax.random.PRNGKey(6), seeds))

    def first_units(variables, m):
        p = variables["params"]
        return {"params": {  # leading axis: seeds
            "Dense_0": {"kernel": p["Dense_0"]["kernel"][:, :, :m], "bias": p["Dense_0"]["bias"][:, :m]},
            "Dense_1": {"kernel": p["Dense_1"]["kernel"][:, :m], "bias": p["Dense_1"]["bias"]},
        }}

    errors = []
    for m in widths:
        _, apply_fn, _ = K.mlp(depth, m, "relu", W_std=W_std, b_std=b_std)
        entk = K.empirical_ntk(apply_fn)
        sub = first_units(big, m)
        thetas = jax.jit(jax.vmap(lambda p: entk(x, None, p)))(sub)
        rel = np.linalg.norm(np.asarray(thetas) - target, axis=(1, 2)) / np.linalg.norm(target)
        errors.append(rel.mean())
    slope = np.polyfit(np.log(widths), np.log(errors), 1)[0]
    assert -0.7 <= slope <= -0.3, (slope, errors)
    assert errors[-1] < 0.05, errors  # ~ 1/sqrt(8192) times an O(1) constant
