"""theory_checks.memory: the chunked maps give the unchunked values, every check's ``gpu`` scale
fits 64 GB by its estimate, and the estimates bound XLA's measured peaks.

* ``chunked_map`` against ``jax.vmap`` on a function shaped like the checks' (keyed draws, a matrix
  product, a zero-size leaf like NeuralBO's state), with a remainder chunk;
* the reference stages whose per-item function was restructured for chunking (the nested-width
  networks of ``ntk_convergence`` and ``gd_ensemble``, the Gram rows of ``pinn_information_gain``,
  the networks of ``nngp_convergence``)
  and one check end to end (``sto_posterior``'s Linear members), chunked against unchunked, at
  sizes smaller than smoke (depth 2, so the parameters dominate the memory);
* ``memory(SCALES["gpu"])`` of every check below its process's share of 64 GB (8 processes at
  gpu scale), and above it without chunking where chunking is what makes it fit;
* the estimate of every stage those runs compiled against ``compiled.memory_analysis()`` (XLA's
  buffer assignment), with ``tests/conftest.py``'s setting for fast tests, most XLA optimisations
  off: fewer fusions, so more temporaries than the optimised program a gpu run compiles, and a
  bound on it holds for that too (compiled optimised by hand at smoke scale: measured / estimate
  0.53-0.94 on the parameter-dominated stages, README). The ``minimize`` runs of
  ``neuralbo_identities`` and ``regret_scaling`` are compiled by hand only (a compile each costs
  more than this file): measured / estimate 0.60-0.87 (README).
"""

from __future__ import annotations


import jax
import jax.numpy as jnp
import numpy as np

import theory_checks
from theory_checks import gd_ensemble, ntk_convergence, pinn_information_gain
from theory_checks import memory as M

KEY = jax.random.PRNGKey(0)
# Chunked and unchunked programs batch the same float64 operations differently (a batched matrix
# product over a chunk vs over all items may order its sums differently): per operation a relative
# rounding of ~1e-16, carried through a few hundred operations (training steps, Cholesky solves).
RTOL = 1e-10

# Item counts a multiple of the chunk (2): one copy of the per-item program (a remainder chunk is a
# second copy, twice the compile time; it is tested in test_chunked_map_equals_vmap).
NTK_TINY = dict(configs=[["relu", 2]], widths=[16, 64], seeds=4, mean_seeds=[2, 4],
                train_steps=2)
GD_TINY = dict(depth=2, widths=[16, 64], members=4, lr_members=2, times=[2.0, "inf"])
NNGP_TINY = dict(widths=[8, 64], networks=[8, 8])
PINN_TINY = dict(width=16, depth=2, num_points=5, num_residuals=(3, 6), num_test=8)


def _frozen(mod, overrides, chunk):
    """The smoke settings with ``overrides`` and ``chunk``, twice: what ``theory_checks.memo``
    caches the reference side on (it freezes them itself)."""
    s = dict(mod.SCALES["smoke"], **overrides, chunk=chunk)
    return s, s


def _measured_within(stages, start):
    """Each stage compiled since ``MEASURED[start]``: XLA's peak at most the estimate (the
    estimate is an upper bound) and, where the parameters dominate (every stage here but the
    analytic kernel's rows), at least a third of it (a bound that is not vacuous). Returns the
    ``(label, measured, estimate)`` checked."""
    peaks = {}
    for label, measured in M.MEASURED[start:]:
        assert measured is not None, "memory_analysis is available on CPU"
        peaks[label] = max(peaks.get(label, 0), measured)  # a stage may be several programs
    assert peaks
    for label, measured in peaks.items():
        est = M.find(stages, label).peak
        assert measured <= est, (label, measured, est)
        if not label.startswith("analytic"):
            assert est <= 3 * measured, (label, measured, est)
    return peaks


def test_chunked_map_equals_vmap():
    """Mutations caught: dropping the remainder chunk (7 items, chunk 3: a shape error), a wrong
    reshape of the outputs (values out of order)."""
    def fn(k):
        a = jax.random.normal(k, (4, 3))
        return {"v": a @ a.T, "empty": jnp.zeros((0,)), "s": jnp.sum(a)}

    keys = jax.random.split(KEY, 7)
    want = jax.vmap(fn)(keys)
    for chunk in (3, 7):
        got = M.chunked_map(fn, keys, chunk, "test")
        np.testing.assert_allclose(got["v"], want["v"], rtol=1e-14)  # the same per-item program
        np.testing.assert_allclose(got["s"], want["s"], rtol=1e-14)
        assert got["empty"].shape == (7, 0)
    assert M.chunk_for(10, per_item=3, fixed=4, budget=20) == 5
    assert M.chunk_for(10, per_item=100, budget=20) == 1  # one item at least
    assert M.chunk_for(10, per_item=1, budget=100) == 10  # never more than the items


def test_gpu_scale_fits_64gb(monkeypatch):
    """Every check's gpu-scale estimate is below its share of 64 GB as the gpu run gives it
    (``python -m theory_checks --scale gpu``: ``timing.GPU_JOBS`` processes, each ``BUDGET /
    GPU_JOBS``); without chunking the networks and members would need more (the former gpu
    sizes, before the chunking: 1-9 TB; these: 11-580 GiB). Mutation caught: ``chunk_for``
    returning ``num`` (no chunking)."""
    from theory_checks import timing

    monkeypatch.setattr(M, "BUDGET", M.BUDGET // timing.GPU_JOBS)
    for name in theory_checks.CHECKS:
        mod = theory_checks.get(name)
        stages = mod.memory(dict(mod.SCALES["gpu"]))
        assert stages and max(st.peak for st in stages) <= M.BUDGET, M.describe(name, stages)
        assert all(1 <= st.chunk <= st.num for st in stages)
        unchunked = max(st.peak for st in mod.memory(dict(mod.SCALES["gpu"], chunk=10**9)))
        if name in ("ntk_convergence", "gd_ensemble", "nngp_convergence", "pinn_gp_sample"):
            assert unchunked > M.BUDGET, (name, unchunked)


def test_ntk_convergence_networks_chunked():
    s1, f1 = _frozen(ntk_convergence, NTK_TINY, None)
    _, f2 = _frozen(ntk_convergence, NTK_TINY, 2)
    whole = ntk_convergence._networks(KEY, f1, "relu", 2)
    start = len(M.MEASURED)
    chunked = ntk_convergence._networks(KEY, f2, "relu", 2)
    for a, b in zip(whole, chunked):
        np.testing.assert_allclose(b, a, rtol=RTOL)
    _measured_within(ntk_convergence.memory(dict(s1, chunk=2)), start)
    # The nested networks are those nets.draw gives (the library's init_fn vmapped over the keys).
    k_p = ntk_convergence._inputs(KEY, s1)[2]
    big = theory_checks.nets.draw(k_p, 2, 64, s1["d"], "relu", s1["W_std"], s1["b_std"], 4)
    from ntkbo.kernels import empirical_ntk, mlp
    apply_fn = mlp(2, 16, "relu", W_std=s1["W_std"], b_std=s1["b_std"])[1]
    x = ntk_convergence._inputs(KEY, s1)[0]
    t0 = jax.vmap(lambda p: empirical_ntk(apply_fn)(x, None, p))(
        theory_checks.nets.first_units(big, 2, 16))
    np.testing.assert_allclose(chunked[0][0], t0, rtol=RTOL)


def test_gd_ensemble_networks_chunked():
    s1, f1 = _frozen(gd_ensemble, GD_TINY, None)
    _, f2 = _frozen(gd_ensemble, GD_TINY, 2)
    whole = gd_ensemble._networks(KEY, f1)
    start = len(M.MEASURED)
    chunked = gd_ensemble._networks(KEY, f2)
    assert whole[1] == chunked[1] and whole[3] == chunked[3]  # the same step counts
    np.testing.assert_allclose(chunked[0], whole[0], rtol=RTOL)
    np.testing.assert_allclose(np.stack(chunked[5]), np.stack(whole[5]), rtol=RTOL)
    np.testing.assert_allclose(np.stack(chunked[6]), np.stack(whole[6]), rtol=RTOL)
    _measured_within(gd_ensemble.memory(dict(s1, chunk=2)), start)


def test_pinn_gram_rows_chunked():
    """The empirical-NTK operator Gram blocks, all rows at once and two at a time."""
    s = dict(pinn_information_gain.SCALES["smoke"], **PINN_TINY, chunk=2)
    from ntkbo.kernels import grad_features, mlp
    PB = pinn_information_gain.PB
    init_fn, apply_fn, _ = mlp(2, 16, "erf", W_std=1.5, b_std=0.1)
    params = init_fn(KEY, (-1, 2))[1]
    g = grad_features(apply_fn)
    emp_k = lambda a, b: g(a, params) @ g(b, params).T  # noqa: E731
    ks = PB.pinn_kernels(emp_k, pinn_information_gain.P.LAPLACE)
    x = jax.random.uniform(KEY, (5, 2))
    z = jax.random.uniform(jax.random.PRNGKey(1), (6, 2))
    whole = pinn_information_gain._blocks(*ks, x, z, 6, "empirical-NTK Gram rows")
    start = len(M.MEASURED)
    chunked = pinn_information_gain._blocks(*ks, x, z, 2, "empirical-NTK Gram rows")
    for a, b in zip(whole, chunked):
        np.testing.assert_allclose(b, a, rtol=RTOL, atol=1e-12 * float(jnp.max(jnp.abs(a))))
    _measured_within(pinn_information_gain.memory(s), start)


def test_sto_posterior_linear_chunked():
    """End to end: the Linear rows of ``sto_posterior`` with members drawn 7 at a time equal the
    unchunked rows (the member draws differ only in their batching)."""
    over = dict(nonlinear=False, smb=False, depth=2, linear_widths=[64], linear_members=40)
    whole = theory_checks.run_check("sto_posterior", KEY, "smoke", **over)
    start = len(M.MEASURED)
    chunked = theory_checks.run_check("sto_posterior", KEY, "smoke", chunk=7, **over)
    assert [r.quantity for r in chunked.rows] == [r.quantity for r in whole.rows]
    np.testing.assert_allclose([r.measured for r in chunked.rows],
                               [r.measured for r in whole.rows], rtol=1e-8)
    mod = theory_checks.get("sto_posterior")
    _measured_within(mod.memory(dict(mod.SCALES["smoke"], chunk=7, **over)), start)


def test_nngp_convergence_outputs_chunked():
    """The networks' outputs drawn 4 at a time equal those drawn all at once (one vmap)."""
    from theory_checks import nngp_convergence as N

    s1, f1 = _frozen(N, NNGP_TINY, 8)
    _, f2 = _frozen(N, NNGP_TINY, 4)
    whole = N._outputs(KEY, f1, "erf", 2)
    start = len(M.MEASURED)
    chunked = N._outputs(KEY, f2, "erf", 2)
    np.testing.assert_allclose(chunked, whole, rtol=RTOL)
    _measured_within(N.memory(dict(s1, chunk=4)), start)
