"""Native NNGP/NTK kernels against independent computations (main lane, current JAX, float64).

References, none of which reuses ntkbo's closed forms:
* the layer recursion driven by activation expectations from 2-D Gauss-Hermite quadrature (smooth
  activations) or from the arc-cosine formulas written with ``arccos`` (piecewise-linear ones);
* hand-derived closed forms (identity networks; the depth-1 ReLU NTK of the NeuralBO paper);
* Monte Carlo over random finite networks: for one hidden layer the NNGP and NTK are *exact*
  expectations at any width, so only sampling error enters;
* structural properties: symmetry, PSD, jit/vmap/grad invariance, float32 without NaNs.
"""

from __future__ import annotations

import functools
import json
import math
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import erf as sp_erf
from scipy.special import ndtr

import ntkbo.kernels as K

# ----------------------------------------------------------------------------------------------
# Independent reference: activation expectations and the layer recursion.

_Z, _WZ = hermegauss(300)  # probabilists' Gauss-Hermite: weight exp(-z^2/2)
_WZ = _WZ / math.sqrt(2 * math.pi)

_SIGMOID_B = 1 / 2.4020563531719796

# name -> (params, phi, phi') written with numpy/scipy, independently of ntkbo.
SMOOTH = {
    "erf": ({"a": 1.0, "b": 1.0, "c": 0.0},
            lambda x, a, b, c: a * sp_erf(b * x) + c,
            lambda x, a, b, c: a * b * 2 / math.sqrt(math.pi) * np.exp(-(b * x) ** 2)),
    "erf_abc": ({"a": 1.5, "b": 0.7, "c": 0.2}, None, None),  # same functions as "erf"
    "sigmoid_like": ({},
                     lambda x: 0.5 * sp_erf(x * _SIGMOID_B) + 0.5,
                     lambda x: 0.5 * _SIGMOID_B * 2 / math.sqrt(math.pi) * np.exp(-(x * _SIGMOID_B) ** 2)),
    "gelu": ({},
             lambda x: x * ndtr(x),
             lambda x: ndtr(x) + x * np.exp(-x**2 / 2) / math.sqrt(2 * math.pi)),
    "sin": ({"a": 1.0, "b": 1.0, "c": 0.0},
            lambda x, a, b, c: a * np.sin(b * x + c),
            lambda x, a, b, c: a * b * np.cos(b * x + c)),
    "cos": ({"a": 1.2, "b": 0.5, "c": 0.3},
            lambda x, a, b, c: a * np.cos(b * x + c),
            lambda x, a, b, c: -a * b * np.sin(b * x + c)),
    "rbf": ({"gamma": 0.5},
            lambda x, gamma: math.sqrt(2) * np.sin(math.sqrt(2 * gamma) * x + math.pi / 4),
            lambda x, gamma: (math.sqrt(2) * math.sqrt(2 * gamma)
                              * np.cos(math.sqrt(2 * gamma) * x + math.pi / 4))),
    "exp": ({"a": 0.9, "b": 0.3},
            lambda x, a, b: a * np.exp(b * x),
            lambda x, a, b: a * b * np.exp(b * x)),
    "gaussian": ({"a": 1.1, "b": -0.6},
                 lambda x, a, b: a * np.exp(b * x**2),
                 lambda x, a, b: 2 * a * b * x * np.exp(b * x**2)),
}
SMOOTH["erf_abc"] = (SMOOTH["erf_abc"][0], SMOOTH["erf"][1], SMOOTH["erf"][2])

# name -> (a, b) with phi = a min(x, 0) + b max(x, 0)
PIECEWISE = {"relu": (0.0, 1.0), "leaky_relu": (0.1, 1.0), "ab_relu": (-0.4, 1.3), "abs": (-1.0, 1.0)}


def ntkbo_activation(name):
    """The ntkbo spec of a reference activation name."""
    if name in SMOOTH:
        params = SMOOTH[name][0]
        base = "erf" if name == "erf_abc" else name
        return (base, params) if params else base
    if name == "leaky_relu":
        return ("leaky_relu", {"alpha": 0.1})
    if name == "ab_relu":
        return ("ab_relu", {"a": -0.4, "b": 1.3})
    return name


def gauss_expectation(f, g, q11, q12, q22):
    """E[f(u) g(v)], (u, v) ~ N(0, [[q11, q12], [q12, q22]]) by 80x80-point Gauss-Hermite."""
    s1 = math.sqrt(q11)
    c = q12 / s1
    r = math.sqrt(max(q22 - c * c, 0.0))
    u = s1 * _Z[:, None]
    v = c * _Z[:, None] + r * _Z[None, :]
    return float(np.sum(_WZ[:, None] * _WZ[None, :] * f(u) * g(v)))


def arccos_expectations(a, b, q11, q12, q22):
    """Cho and Saul (2009) arc-cosine forms for phi = a min(x,0) + b max(x,0), derived by hand:
    E[phi phi] = (a^2+b^2) J(theta) - 2ab J(pi - theta), J the ReLU kernel;
    E[phi' phi'] = (a^2+b^2)(pi - theta)/(2 pi) + 2ab theta/(2 pi)."""
    s = math.sqrt(q11 * q22)
    theta = math.acos(min(1.0, max(-1.0, q12 / s)))
    j_same = s / (2 * math.pi) * (math.sin(theta) + (math.pi - theta) * math.cos(theta))
    j_flip = s / (2 * math.pi) * (math.sin(theta) - theta * math.cos(theta))
    t = (a**2 + b**2) * j_same - 2 * a * b * j_flip
    tdot = (a**2 + b**2) * (math.pi - theta) / (2 * math.pi) + 2 * a * b * theta / (2 * math.pi)
    return t, tdot


def expectations(name, q11, q12, q22):
    if name == "identity":
        return q12, 1.0
    if name in PIECEWISE:
        return arccos_expectations(*PIECEWISE[name], q11, q12, q22)
    params, f, df = SMOOTH[name]
    fp = lambda x: f(x, **params)
    dfp = lambda x: df(x, **params)
    return gauss_expectation(fp, fp, q11, q12, q22), gauss_expectation(dfp, dfp, q11, q12, q22)


def reference_kernels(x1, x2, depth, name, W_std, b_std, parameterization, width):
    """The nt-convention recursion on the full (n1+n2) covariance matrix, expectations pairwise."""
    x = np.concatenate([x1, x2])
    n1, d = x1.shape
    q = x @ x.T / d
    theta = np.zeros_like(q)
    fan_in = d
    for layer in range(depth + 1):
        bias_var = 0.0 if b_std is None else b_std**2
        if parameterization == "ntk":
            q = W_std**2 * q + bias_var
            theta = q + W_std**2 * theta
        else:
            theta = fan_in * q + W_std**2 * theta + (0.0 if b_std is None else 1.0)
            q = W_std**2 * q + bias_var
        if layer == depth:
            break
        new_q, dot = np.empty_like(q), np.empty_like(q)
        for i in range(len(x)):
            for j in range(i, len(x)):
                t, td = expectations(name, q[i, i], q[i, j], q[j, j])
                new_q[i, j] = new_q[j, i] = t
                dot[i, j] = dot[j, i] = td
        q, theta = new_q, theta * dot
        fan_in = width
    return q[:n1, n1:], theta[:n1, n1:]


REFERENCE_NAMES = ["identity", *PIECEWISE, *SMOOTH]
REF_DEPTH, REF_WIDTH, REF_W_STD, REF_B_STD = 2, 7, 1.2, 0.3


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(0)
    return rng.normal(size=(3, 3)), rng.normal(size=(2, 3))


def jit_all(kernel_fns):
    """One compiled function evaluating several kernel_fns (the public ones, inlined under jit):
    compiling once instead of once per activation keeps the suite fast on a 2-core machine."""
    return jax.jit(lambda x1, x2: [kfn(x1, x2, ("nngp", "ntk")) for kfn in kernel_fns])


@pytest.fixture(scope="module")
def native_reference_values(inputs):
    fns = [K.mlp(REF_DEPTH, REF_WIDTH, ntkbo_activation(n), W_std=REF_W_STD, b_std=REF_B_STD)[2]
           for n in REFERENCE_NAMES]
    return dict(zip(REFERENCE_NAMES, jit_all(fns)(*inputs)))


@pytest.mark.parametrize("name", REFERENCE_NAMES)
def test_recursion_matches_quadrature_and_arccos_references(name, inputs, native_reference_values):
    """Depth 2, NTK parameterisation with biases: two activation layers and three Dense layers.
    (Depth 1 and the standard parameterisation: closed forms and Monte Carlo below; every depth
    1-4 x parameterisation x bias combination: the neural-tangents lane.)"""
    got = native_reference_values[name]
    want_nngp, want_ntk = reference_kernels(*inputs, REF_DEPTH, name, REF_W_STD, REF_B_STD, "ntk", REF_WIDTH)
    # Smooth activations: 300-point Gauss-Hermite resolves these integrands to ~1e-12 at the
    # variances here; piecewise-linear: arccos near rho = 1 on the diagonal loses ~1e-8 in theta,
    # i.e. <= 1e-8 relative in Tdot. 1e-7 covers both after two layers.
    np.testing.assert_allclose(got.nngp, want_nngp, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(got.ntk, want_ntk, rtol=1e-7, atol=1e-12)


# ----------------------------------------------------------------------------------------------
# Closed forms by hand.


def test_identity_network_closed_form(inputs):
    x1, x2 = inputs
    s = x1 @ x2.T / 3
    W, b = 1.3, 0.4
    for depth in (1, 2, 3):
        # No bias: every Dense multiplies the covariance by W^2; each of the depth+1 layers adds one
        # copy of the output NNGP to the NTK.
        k = K.mlp(depth, 5, "identity", W_std=W)[2](x1, x2, ("nngp", "ntk"))
        nngp = W ** (2 * (depth + 1)) * s
        np.testing.assert_allclose(k.nngp, nngp, rtol=1e-13)
        np.testing.assert_allclose(k.ntk, (depth + 1) * nngp, rtol=1e-13)
    # One hidden layer with biases: nngp = W^2 (W^2 s + b^2) + b^2, ntk = nngp + W^2 (W^2 s + b^2).
    k = K.mlp(1, 5, "identity", W_std=W, b_std=b)[2](x1, x2, ("nngp", "ntk"))
    hidden = W**2 * s + b**2
    np.testing.assert_allclose(k.nngp, W**2 * hidden + b**2, rtol=1e-13)
    np.testing.assert_allclose(k.ntk, W**2 * hidden + b**2 + W**2 * hidden, rtol=1e-13)


def test_relu_depth1_equals_neuralbo_paper_formula(inputs):
    """NeuralBO's paper (Phan-Trong et al. 2023): with W_std = (sqrt(d), 1) and no bias, the NTK is
    (x.x') (pi - theta)/(2 pi) + |x||x'| (sin theta + (pi - theta) cos theta)/(2 pi)."""
    x1, x2 = inputs
    d = x1.shape[1]
    k = K.mlp(1, 500, "relu", W_std=(math.sqrt(d), 1.0))[2](x1, x2, ("nngp", "ntk"))
    dot = x1 @ x2.T
    norms = np.linalg.norm(x1, axis=1)[:, None] * np.linalg.norm(x2, axis=1)[None, :]
    theta = np.arccos(np.clip(dot / norms, -1, 1))
    arc = norms * (np.sin(theta) + (np.pi - theta) * np.cos(theta)) / (2 * np.pi)
    np.testing.assert_allclose(k.nngp, arc, rtol=1e-12)
    np.testing.assert_allclose(k.ntk, dot * (np.pi - theta) / (2 * np.pi) + arc, rtol=1e-12)


def test_relu_depth1_standard_parameterization_by_hand(inputs):
    """Standard parameterisation, no bias: grad wrt W1 ~ N(0, W^2/d) gives x.x' Tdot W^2, grad wrt the
    readout gives width * E[relu relu]; so ntk = width * T + W^2 (x.x') Tdot and nngp = W^2 T, with
    T, Tdot the arc-cosine expectations at the first-layer covariance W^2 x.x'/d."""
    x1, x2 = inputs
    W, width, d = 1.4, 64, 3
    k = K.mlp(1, width, "relu", W_std=W, parameterization="standard")[2](x1, x2, ("nngp", "ntk"))
    q12 = W**2 * x1 @ x2.T / d
    q11 = W**2 * np.sum(x1**2, 1)[:, None] / d
    q22 = W**2 * np.sum(x2**2, 1)[None, :] / d
    s = np.sqrt(q11 * q22)
    theta = np.arccos(np.clip(q12 / s, -1, 1))
    t = s * (np.sin(theta) + (np.pi - theta) * np.cos(theta)) / (2 * np.pi)
    tdot = (np.pi - theta) / (2 * np.pi)
    np.testing.assert_allclose(k.nngp, W**2 * t, rtol=1e-12)
    np.testing.assert_allclose(k.ntk, width * t + W**2 * (x1 @ x2.T) * tdot, rtol=1e-12)


# ----------------------------------------------------------------------------------------------
# Monte Carlo over finite networks.

MC_CASES = [(n, "ntk") for n in REFERENCE_NAMES if n != "erf_abc"] + [("relu", "standard")]
MC_DRAWS, MC_WIDTH, MC_W_STD, MC_B_STD = 4000, 16, 1.3, 0.4


@functools.lru_cache(maxsize=None)
def mc_params(parameterization):
    """MC_DRAWS independent initialisations from ntkbo's init_fn (leaves with a leading draw axis).
    The parameters do not depend on the activation, so one compiled init serves every activation."""
    init_fn, _, _ = K.mlp(1, MC_WIDTH, "relu", W_std=MC_W_STD, b_std=MC_B_STD,
                          parameterization=parameterization)
    keys = jax.random.split(jax.random.PRNGKey(2), MC_DRAWS)
    return jax.jit(jax.vmap(lambda key: init_fn(key, (4, 3))[1]))(keys)


@pytest.mark.parametrize("name,parameterization", MC_CASES)
def test_depth1_kernels_are_expectations_over_random_networks(name, parameterization):
    """For one hidden layer, E_theta[f(x) f(x')] = NNGP and E_theta[g(x) . g(x')] = NTK exactly at
    any width (the readout averages i.i.d. hidden units), so the Monte Carlo mean over S networks
    must lie within a few standard errors. 5 standard errors (estimated from the same samples) per
    entry: with fixed seeds the test is deterministic, and a correct kernel would fail it with
    probability ~1e-6 per entry."""
    _, apply_fn, kernel_fn = K.mlp(1, MC_WIDTH, ntkbo_activation(name), W_std=MC_W_STD,
                                   b_std=MC_B_STD, parameterization=parameterization)
    x = np.random.default_rng(1).normal(size=(4, 3))
    g = K.grad_features(apply_fn)

    def moments(params):
        f = apply_fn(params, x)[:, 0]
        feats = g(x, params)
        return f[:, None] * f[None, :], feats @ feats.T

    ff, tt = jax.jit(jax.vmap(moments))(mc_params(parameterization))
    k = kernel_fn(x, None, ("nngp", "ntk"))
    for samples, target in ((ff, k.nngp), (tt, k.ntk)):
        samples = np.asarray(samples)
        mean = samples.mean(0)
        se = samples.std(0, ddof=1) / math.sqrt(MC_DRAWS)
        assert np.all(np.abs(mean - np.asarray(target)) <= 5 * se + 1e-12), (mean, target, se)


# ----------------------------------------------------------------------------------------------
# Structure, transformations, dtypes.

ALL_SPECS = [ntkbo_activation(n) for n in REFERENCE_NAMES]
HARD_DEPTH, HARD_WIDTH, HARD_W_STD, HARD_B_STD = 2, 8, 1.1, 0.2


def _hard_inputs(spec=None):
    """Rows with x = x', x = -x', a zero row and norms 1e-3 and 1e3 (the last two rows are dropped
    for exp: exp(b x) of a 1e3-norm row overflows by construction, which is not a kernel property)."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3, 3))
    x = np.concatenate([x, -x[:1], x[1:2], 1e-3 * x[2:3], 1e3 * x[:1], np.zeros((1, 3))])
    return x[:-2] if isinstance(spec, tuple) and spec[0] == "exp" else x


def _hard_kernel_fns(parameterization):
    return [K.mlp(HARD_DEPTH, HARD_WIDTH, spec, W_std=HARD_W_STD, b_std=HARD_B_STD,
                  parameterization=parameterization)[2] for spec in ALL_SPECS]


@pytest.fixture(scope="module")
def hard_kernels():
    """{(str(spec), parameterization): AnalyticKernel} on the hard inputs, float64."""
    out = {}
    for parameterization in ("ntk", "standard"):
        fns = _hard_kernel_fns(parameterization)
        computed = jax.jit(lambda xs: [f(x, None, ("nngp", "ntk")) for f, x in zip(fns, xs)])(
            [_hard_inputs(spec) for spec in ALL_SPECS])
        out.update({(str(spec), parameterization): k for spec, k in zip(ALL_SPECS, computed)})
    return out


@pytest.mark.parametrize("parameterization", ["ntk", "standard"])
@pytest.mark.parametrize("activation", ALL_SPECS, ids=str)
def test_symmetric_and_positive_semidefinite(activation, parameterization, hard_kernels):
    for k in hard_kernels[(str(activation), parameterization)]:
        k = np.asarray(k)
        assert np.all(np.isfinite(k))
        # Exact symmetry up to the rounding of x x^T in the input layer.
        np.testing.assert_allclose(k, k.T, rtol=1e-13, atol=0)
        # Scaled by the largest entry: the 1e3 rows make entries ~1e6 larger than the others, and
        # eigenvalues are only resolved to ~1e-13 of the largest.
        eig = np.linalg.eigvalsh((k + k.T) / 2 / np.abs(k).max())
        assert eig.min() >= -1e-12, eig.min()


def test_x2_none_equals_x1_and_get_forms():
    x = _hard_inputs()
    _, _, kernel_fn = K.mlp(2, 8, "erf", W_std=1.5, b_std=0.1)
    both = kernel_fn(x, None, ("ntk", "nngp"))
    assert type(both).__name__ == "AnalyticKernel" and both._fields == ("ntk", "nngp")
    # Separate programs: XLA may fuse and reorder them differently (on an H200 the float64 NNGP
    # alone differed from the pair's by 6.5e-13 relative), so equal to a few hundred ulps, far
    # below the NTK's and NNGP's relative gap here (0.36 or more at every entry: a swapped form).
    np.testing.assert_allclose(kernel_fn(x, None, "ntk"), both.ntk, rtol=1e-11, atol=0)
    np.testing.assert_allclose(kernel_fn(x, get="nngp"), both.nngp, rtol=1e-11, atol=0)
    # Passing x2 = x1 explicitly computes cov2 separately from cov1 (as neural-tangents does), so
    # rounding differs; erf's (1 + 2q)^2 - 4 q^2 at the 1e3-norm row (q ~ 1e6) amplifies it ~q-fold.
    np.testing.assert_allclose(kernel_fn(x, x, "ntk"), both.ntk, rtol=1e-9)
    np.testing.assert_allclose(K.as_kernel(kernel_fn, "nngp")(x, x), both.nngp, rtol=1e-9)
    np.testing.assert_allclose(K.as_kernel(kernel_fn)(x), both.ntk, rtol=1e-14)


def test_jit_vmap_and_finite_gradients():
    _, _, kernel_fn = K.mlp(2, 8, "relu", W_std=1.4, b_std=0.1)
    k = K.as_kernel(kernel_fn, "ntk")
    xs = jax.random.normal(jax.random.PRNGKey(0), (5, 4, 3))
    ys = jax.random.normal(jax.random.PRNGKey(1), (5, 2, 3))
    loop = np.stack([k(xb, yb) for xb, yb in zip(xs, ys)])
    # jit/vmap change only XLA fusion, i.e. rounding (the op-by-op path, jit=False, is compared
    # with neural-tangents in the nt lane). Distinct random
    # points have no cancelling entries (unlike x = x', where the ReLU angle is sqrt of a rounded
    # ~0 and agreement is only ~1e-8), so 1e-12 relative.
    np.testing.assert_allclose(jax.jit(k)(xs[0], ys[0]), loop[0], rtol=1e-12)
    np.testing.assert_allclose(jax.vmap(k)(xs, ys), loop, rtol=1e-12)
    # The gradient of a GP acquisition differentiates k(x, X) at training points x = X_i, where the
    # ReLU kernel has a kink: it must be finite, and agree with finite differences away from it.
    X = xs[0]
    grad = jax.grad(lambda z: jnp.sum(k(z[None], X)))(X[1])
    assert np.all(np.isfinite(grad))
    z, dz = X[1] + 0.3, jnp.array([1e-6, 0.0, 0.0])
    fd = (jnp.sum(k((z + dz)[None], X)) - jnp.sum(k((z - dz)[None], X))) / 2e-6
    # central difference in float64 with step 1e-6: truncation ~1e-12, rounding ~1e-10.
    np.testing.assert_allclose(jax.grad(lambda z: jnp.sum(k(z[None], X)))(z)[0], fd, rtol=1e-6)


def test_float32_without_nans_and_close_to_float64(hard_kernels):
    """Every activation with x64 disabled, in a fresh interpreter (x64 is process-global and
    conftest enables it), on the hard inputs: float32 results, no NaN/inf, close to float64; and
    a float32 network, its parameters and empirical NTK."""
    script = textwrap.dedent(
        f"""
        import json, sys
        import jax
        import numpy as np
        import ntkbo.nets  # the import order nets -> kernels must work too
        import ntkbo.kernels as K
        specs, xs = json.loads(sys.stdin.read())
        specs = [tuple(s) if isinstance(s, list) else s for s in specs]
        fns = [K.mlp({HARD_DEPTH}, {HARD_WIDTH}, s, W_std={HARD_W_STD}, b_std={HARD_B_STD})[2] for s in specs]
        xs = [np.asarray(x, np.float32) for x in xs]
        ks = jax.jit(lambda xs: [f(x, None, ("nngp", "ntk")) for f, x in zip(fns, xs)])(xs)
        assert all(k.ntk.dtype == np.float32 and k.nngp.dtype == np.float32 for k in ks)
        # The finite network and its empirical NTK are float32 and finite too.
        init_fn, apply_fn, _ = K.mlp(2, 16, "erf", b_std=0.1)
        _, params = init_fn(jax.random.PRNGKey(0), xs[0].shape)
        leaves = jax.tree_util.tree_leaves(params) + [
            apply_fn(params, xs[0]), K.empirical_ntk(apply_fn)(xs[0], None, params)]
        assert all(v.dtype == np.float32 and np.all(np.isfinite(v)) for v in leaves)
        print(json.dumps([[np.asarray(v, np.float64).tolist() for v in k] for k in ks]))
        """
    )
    env = {**os.environ, "JAX_ENABLE_X64": "0"}
    payload = json.dumps([ALL_SPECS, [_hard_inputs(spec).tolist() for spec in ALL_SPECS]])
    proc = subprocess.run([sys.executable, "-c", script], input=payload, capture_output=True,
                          text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    for spec, got32 in zip(ALL_SPECS, result):
        k64 = hard_kernels[(str(spec), "ntk")]
        for got, want in zip(got32, k64):
            got, want = np.asarray(got), np.asarray(want)
            assert np.all(np.isfinite(got)), spec
            # Closeness on the unit-scale rows (the first five): float32 rounding (6e-8) of the
            # clipped q11 q22 - q12^2 enters through a square root at x = +-x', i.e. ~sqrt(6e-8)
            # ~ 3e-4 of the kernel's scale. On the 1e-3/1e3 rows only finiteness is asked: e.g.
            # erf's (1 + 2q)^2 - 4q^2 with q ~ 1e6 cancels to a relative error ~ q * 6e-8.
            unit = slice(0, 5)
            np.testing.assert_allclose(got[unit, unit], want[unit, unit], rtol=1e-3,
                                       atol=1e-3 * np.abs(want[unit, unit]).max(), err_msg=str(spec))


# ----------------------------------------------------------------------------------------------
# Errors.


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"activation": "swish"}, r"activation: unknown activation 'swish'; valid names are identity, relu"),
        ({"activation": ("leaky_relu", {})}, r"requires parameter 'alpha'"),
        ({"activation": ("erf", {"scale": 2.0})},
         r"unknown parameter\(s\) \['scale'\]; its parameters are: a, b, c"),
        ({"activation": 3}, r"activation: expected a name"),
        ({"depth": 0}, r"depth: .* >= 1, got 0"),
        ({"width": 0}, r"width: .* >= 1, got 0"),
        ({"depth": 1.5}, r"depth:"),
        ({"parameterization": "mup"}, r"parameterization: expected one of ntk, standard, got 'mup'"),
        ({"W_std": (1.0, 2.0, 3.0)}, r"W_std: expected one value per Dense layer \(depth \+ 1 = 2\), got 3"),
        ({"W_std": -1.0}, r"W_std: must be finite and >= 0"),
        ({"b_std": (None, float("nan"))}, r"b_std: must be finite"),
        ({"backend": "torch"}, r"backend: expected one of native, nt"),
    ],
)
def test_invalid_arguments_raise_named_errors(kwargs, match):
    args = {"depth": 1, "width": 4, **kwargs}
    with pytest.raises(ValueError, match=match):
        K.mlp(**args)


def test_invalid_inputs_and_get_raise_named_errors():
    _, _, kernel_fn = K.mlp(1, 4)
    with pytest.raises(ValueError, match=r"x1: expected shape \(n1, d\), got \(3,\)"):
        kernel_fn(np.ones(3))
    with pytest.raises(ValueError, match=r"x2: feature dimension 2 does not match x1's 3"):
        kernel_fn(np.ones((2, 3)), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"x2: expected shape \(n2, d\)"):
        kernel_fn(np.ones((2, 3)), np.ones((2, 3, 1)))
    with pytest.raises(ValueError, match=r"get: expected 'nngp', 'ntk'"):
        kernel_fn(np.ones((2, 3)), None, "cov1")
    with pytest.raises(ValueError, match=r"get: expected 'ntk' or 'nngp'"):
        K.as_kernel(kernel_fn, get=("ntk",))


def test_nt_backend_import_error_explains_the_jax_constraint(monkeypatch):
    monkeypatch.setitem(sys.modules, "neural_tangents", None)  # makes `import neural_tangents` fail
    assert not K.nt.is_available()
    with pytest.raises(ImportError, match=r"jax<=0\.5\.3") as info:
        K.mlp(1, 4, backend="nt")
    assert "neural_tangents.experimental" in str(info.value)
