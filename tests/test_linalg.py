"""ntkbo.linalg: jax's own results and derivatives, one matrix per LAPACK call on CPU, no hang.

The batching rule is what these tests are for: a vmapped Cholesky or triangular solve on CPU
must lower to LAPACK calls with ``num_batch_dims = "0"`` (a batched call can deadlock XLA:CPU's
intra-op pool with jaxlib 0.10). Mutation checked: making the CPU branch of
``ntkbo.linalg._on_cpu_one_at_a_time`` the batched kernel fails ``test_vmapped_calls_are_unbatched``
and makes ``test_vmapped_ntk_gp_at_capacity_512_finishes`` time out.
"""

import ast
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbo import linalg

ROOT = pathlib.Path(__file__).resolve().parents[1]
LAPACK_CALL = re.compile(r'custom_call @(lapack_\w+)\(.*?num_batch_dims = "(\d+)"')


def _spd(rng, n, batch=()):
    x = rng.standard_normal((*batch, n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


GPU_SOLVER_CALL = re.compile(r'custom_call @(cu\w+)\(.*?num_batch_dims = "(\d+)"')


def _lowered(fn, *args, platform="cpu"):
    # Lowered for the named platform whatever the backend here: the CPU rule is checked on a GPU
    # machine too, and the GPU branch on CPU (lowering needs no device).
    return jax.jit(fn).trace(*args).lower(lowering_platforms=(platform,)).as_text()


def _lapack_calls(fn, *args):
    return LAPACK_CALL.findall(_lowered(fn, *args))


def test_values_equal_jax_bit_for_bit():
    # The same LAPACK routine on the same matrix: equality is exact, batched or not.
    rng = np.random.default_rng(0)
    a, batch = _spd(rng, 6), _spd(rng, 6, (4,))
    b = rng.standard_normal((4, 6, 3))
    np.testing.assert_array_equal(linalg.cholesky(a), jnp.linalg.cholesky(a))
    np.testing.assert_array_equal(jax.vmap(linalg.cholesky)(batch), jnp.linalg.cholesky(batch))
    chol = np.linalg.cholesky(batch)
    for lower, factor in ((True, chol), (False, np.swapaxes(chol, -1, -2))):
        for trans in (0, 1):
            want = jax.scipy.linalg.solve_triangular(factor, b, lower=lower, trans=trans)
            got = jax.vmap(lambda f, r: linalg.solve_triangular(f, r, lower=lower, trans=trans))
            np.testing.assert_array_equal(got(factor, b), want)
            shared = jax.vmap(lambda r: linalg.solve_triangular(factor[0], r, lower=lower,
                                                                trans=trans))(b)
            np.testing.assert_array_equal(
                shared, jax.scipy.linalg.solve_triangular(factor[0], b, lower=lower, trans=trans))
    w, v = jax.vmap(linalg.eigh)(batch)
    w0, v0 = jnp.linalg.eigh(batch)
    np.testing.assert_array_equal(w, w0)
    np.testing.assert_array_equal(v, v0)
    np.testing.assert_array_equal(jax.vmap(linalg.eigvalsh)(batch), jnp.linalg.eigvalsh(batch))
    # cho_solve and logdet_spd against numpy (independent LAPACK paths): rounding only.
    np.testing.assert_allclose(linalg.cho_solve(chol[0], b[0]), np.linalg.solve(batch[0], b[0]),
                               rtol=1e-10)
    np.testing.assert_allclose(linalg.logdet_spd(batch), np.linalg.slogdet(batch)[1], rtol=1e-12)


def test_gradients_equal_jax_autodiff():
    # The custom VJPs against JAX's own rules for cholesky_p and triangular_solve_p, in float64:
    # two derivations of one formula agree to rounding (1e-10 relative). Mutations checked: the
    # halved diagonal of phi left whole, and A_bar not symmetrised, each fail here.
    rng = np.random.default_rng(1)
    a = _spd(rng, 5, (3,))
    b = rng.standard_normal((3, 5, 2))

    def chol_loss(fn):
        return lambda a: jnp.sum(jnp.sin(fn(a)) * jnp.arange(25.0).reshape(5, 5))

    want = jax.vmap(jax.grad(chol_loss(jnp.linalg.cholesky)))(a)
    np.testing.assert_allclose(jax.vmap(jax.grad(chol_loss(linalg.cholesky)))(a), want,
                               rtol=1e-10, atol=1e-12)
    chol = np.linalg.cholesky(a)
    for lower, factor in ((True, chol), (False, np.swapaxes(chol, -1, -2))):
        for trans in (0, 1):
            def loss(solve):
                return lambda f, r: jnp.sum(jnp.cos(solve(f, r, lower=lower, trans=trans)))
            want = jax.vmap(jax.grad(loss(jax.scipy.linalg.solve_triangular), (0, 1)))(factor, b)
            got = jax.vmap(jax.grad(loss(linalg.solve_triangular), (0, 1)))(factor, b)
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_vmapped_calls_are_unbatched():
    # On CPU every LAPACK call of a vmapped (and doubly vmapped, and differentiated) program
    # factorises one matrix: num_batch_dims is "0". jax's own function gives "2" here (so the
    # pattern does see batched calls).
    rng = np.random.default_rng(2)
    a = _spd(rng, 4, (2, 3))
    b = rng.standard_normal((2, 3, 4, 2))
    assert {n for _, n in _lapack_calls(jax.vmap(jax.vmap(jnp.linalg.cholesky)), a)} == {"2"}

    def loss(a, b):
        chol = linalg.cholesky(a)
        x = linalg.solve_triangular(chol, b, lower=True)
        return jnp.sum(x**2)

    programs = [(jax.vmap(jax.vmap(linalg.cholesky)), a), (jax.vmap(jax.vmap(linalg.eigh)), a),
                (jax.vmap(jax.vmap(jax.grad(loss, (0, 1)))), a, b),
                (jax.grad(lambda a, b: jnp.sum(jax.vmap(jax.vmap(loss))(a, b))), a, b)]
    for fn, *args in programs:
        calls = _lapack_calls(fn, *args)
        assert calls and all(n == "0" for _, n in calls), calls


def test_gpu_keeps_the_batched_kernels():
    # Lowered for CUDA, the rule leaves vmapped factorisations to cuSOLVER's batched kernels, as
    # jax's own functions do: num_batch_dims "2" for a doubly vmapped call. Mutation checked:
    # sending the CUDA branch of linalg._on_cpu_one_at_a_time through lax.map as on CPU leaves no
    # batched call (the calls sit in a loop with num_batch_dims "0").
    rng = np.random.default_rng(3)
    a = _spd(rng, 4, (2, 3))
    for fn in (linalg.cholesky, linalg.eigh):
        calls = GPU_SOLVER_CALL.findall(_lowered(jax.vmap(jax.vmap(fn)), a, platform="cuda"))
        assert calls and all(n == "2" for _, n in calls), calls


def test_library_calls_no_jax_linalg_directly():
    # Every factorisation in ntkbo goes through ntkbo.linalg, so its batching rule covers every
    # algorithm. Mutation checked: a jnp.linalg.cholesky call put back into ntkbo/gp.py fails.
    banned = re.compile(r"(jnp|jax\.numpy|numpy)\.linalg\.(cholesky|eigh|eigvalsh|slogdet|det|inv|"
                        r"solve|qr|svd|lstsq|pinv)\b|jax\.scipy\.linalg|lax\.linalg|"
                        r"from jax\.scipy\.linalg import")
    offenders = []
    for path in sorted((ROOT / "ntkbo").rglob("*.py")):
        if path.name == "linalg.py":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Attribute, ast.ImportFrom)):
                text = ast.unparse(node)
                if banned.search(text) and not text.startswith("np."):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {text}")
    assert not offenders, offenders


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="a must have shape"):
        linalg.cholesky(jnp.ones((3, 2)))
    with pytest.raises(ValueError, match="trans must be"):
        linalg.solve_triangular(jnp.eye(2), jnp.ones(2), trans="C")
    with pytest.raises(ValueError, match="b must have shape"):
        linalg.solve_triangular(jnp.eye(2), jnp.ones((3, 1)))


def test_vmapped_ntk_gp_at_capacity_512_finishes():
    # The case that hung with jaxlib 0.10 (three vmapped NTK-GP-EI runs on Ackley-10 asleep in
    # futex waits once the buffer reached 512 rows), scaled down as far as it still takes the
    # batched path: two seeds, a capacity-512 buffer from the start, two BO steps. Measured on
    # the 2-core CI machine with jnp.linalg in ntkbo.gp: asleep at 100 s; with ntkbo.linalg: 12 s.
    # A subprocess, because a deadlocked XLA program cannot be interrupted from Python.
    script = textwrap.dedent("""
        import jax, ntkbo
        algo = ntkbo.algorithms.ntk_gp(acquisition="ei")
        problem = ntkbo.benchmarks.get("ackley", dim=10)
        run = jax.jit(jax.vmap(lambda k: ntkbo.minimize(algo, problem, 22, k, n_init=20,
                                                        min_capacity=512).best_f))
        print(run(jax.random.split(jax.random.PRNGKey(0), 2)))
    """)
    env = dict(os.environ, JAX_ENABLE_X64="0")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=240, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
