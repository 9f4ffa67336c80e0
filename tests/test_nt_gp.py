"""ntkbo.gp against neural-tangents' ``predict`` (old-JAX lane only: ``pytest -m nt``).

* ``gp.fit``/``predict`` == ``predict.gp_inference(..., get="ntkgp", diag_reg_absolute_scale=True)``:
  the posterior NeuralBO's uncertainty and the NTK-GP baselines use.
* ``gp.gd_ensemble``/``gd_ensemble_predict`` == ``predict.gradient_descent_mse_ensemble`` at finite
  times and at t = inf, ``get="ntk"`` and ``get="nngp"``, mean and covariance, with padding.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from ntkbo import data as D
from ntkbo import gp

pytestmark = pytest.mark.nt


@pytest.fixture(scope="module")
def nt():
    import nt_shim

    return nt_shim.import_neural_tangents()


@pytest.fixture(scope="module")
def setup(nt):
    stax = nt.stax
    _, _, kernel_fn = stax.serial(stax.Dense(64, W_std=1.4, b_std=0.2), stax.Erf(),
                                  stax.Dense(64, W_std=1.2, b_std=0.1), stax.Relu(),
                                  stax.Dense(1, W_std=1.0, b_std=0.05))
    rng = np.random.default_rng(3)
    x = rng.normal(size=(10, 3))
    y = np.sin(x[:, :1]) + 0.1 * rng.normal(size=(10, 1))
    xs = rng.normal(size=(6, 3))
    data = D.append(D.empty(16, 3, jnp.float64), jnp.asarray(x), jnp.asarray(y[:, 0]))
    nngp = lambda a, b: kernel_fn(a, b, "nngp")  # noqa: E731
    ntk = lambda a, b: kernel_fn(a, b, "ntk")  # noqa: E731
    return kernel_fn, x, y, xs, data, nngp, ntk


def test_gp_posterior_equals_nt_gp_inference(nt, setup):
    kernel_fn, x, y, xs, data, nngp, ntk = setup
    lam = 0.05
    k_dd = kernel_fn(x, None, ("nngp", "ntk"))
    k_td = kernel_fn(xs, x, ("nngp", "ntk"))
    nngp_tt = kernel_fn(xs, None, "nngp")
    ntk_tt = kernel_fn(xs, None, "ntk")
    predict_fn = nt.predict.gp_inference(k_dd, y, diag_reg=lam, diag_reg_absolute_scale=True)
    ref = predict_fn(get="ntkgp", k_test_train=k_td, k_test_test=ntk_tt)
    post = gp.fit(ntk, data, lam, jitter=0.0)
    mu, cov = gp.predict(ntk, post, jnp.asarray(xs), full_cov=True)
    # Both solve the same 10x10 system in float64 (Cholesky vs nt's cho_solve): ~1e-12 apart.
    np.testing.assert_allclose(mu, np.asarray(ref.mean)[:, 0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(cov, ref.covariance, rtol=1e-9, atol=1e-12)
    ref_nngp = predict_fn(get="nngp", k_test_train=k_td, k_test_test=nngp_tt)
    post_b = gp.fit(nngp, data, lam, jitter=0.0)
    mu_b, cov_b = gp.predict(nngp, post_b, jnp.asarray(xs), full_cov=True)
    np.testing.assert_allclose(mu_b, np.asarray(ref_nngp.mean)[:, 0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(cov_b, ref_nngp.covariance, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("get", ["ntk", "nngp"])
def test_gd_ensemble_equals_nt(nt, setup, get):
    kernel_fn, x, y, xs, data, nngp, ntk = setup
    lam = 1e-3
    predict_fn = nt.predict.gradient_descent_mse_ensemble(
        kernel_fn, x, y, learning_rate=1.0, diag_reg=lam, diag_reg_absolute_scale=True)
    post = gp.gd_ensemble(nngp, ntk, data, lam=lam, get=get)
    for t in (0.3, 5.0, 80.0, None):
        ref = predict_fn(t=t, x_test=xs, get=get, compute_cov=True)
        mu, cov = gp.gd_ensemble_predict(nngp, ntk, post, jnp.asarray(xs),
                                         jnp.inf if t is None else t, get=get)
        # Eigendecomposition (both) vs nt's Cholesky at t = None; the train kernel's condition
        # number is ~1e5 here, so agreement to ~1e-9 relative is what float64 allows.
        np.testing.assert_allclose(mu, np.asarray(ref.mean)[:, 0], rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(cov, ref.covariance, rtol=1e-7, atol=1e-9)
