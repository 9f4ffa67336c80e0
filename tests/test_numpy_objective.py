"""A numpy objective: a clear error when it reaches ``minimize`` unwrapped, and, wrapped by
``ntkbo.benchmarks.numpy_problem``, NaN as a failed evaluation exactly as for a JAX objective."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ntkbo

BOUNDS = [[0.0, 0.0], [1.0, 1.0]]


def np_objective(x):
    x = np.asarray(x, dtype=float)
    return float("nan") if x[0] > 0.7 else float(np.sum((x - 0.3) ** 2))


def jax_objective(x):
    return jnp.where(x[0] > 0.7, jnp.nan, jnp.sum((x - 0.3) ** 2))


def test_a_numpy_objective_gets_an_error_naming_the_wrapper():
    # Mutation checked: without loop.check_traceable the user sees jax's
    # TracerArrayConversionError, which names neither the wrapper nor ask/tell.
    problem = ntkbo.benchmarks.Problem(name="mine", fn=np_objective, bounds=jnp.asarray(BOUNDS))
    with pytest.raises(TypeError, match=r"'mine' is not a JAX function.*numpy_problem.*ask_tell"):
        ntkbo.minimize(ntkbo.algorithms.random_search(), problem, 8, jax.random.PRNGKey(0))


def test_nan_is_a_failed_evaluation_on_both_paths():
    # The same keys give the same points on both paths (random search: the points do not depend
    # on the values), so the failures must be exactly the points with x_0 > 0.7, on both, and
    # the best is the best finite value. Mutation checked: numpy_problem without nan_ok aborts
    # the run with TaskError instead.
    algo = ntkbo.algorithms.random_search()
    keys = jax.random.split(jax.random.PRNGKey(1), 2)
    wrapped = ntkbo.benchmarks.numpy_problem(np_objective, BOUNDS, name="mine")
    native = ntkbo.benchmarks.Problem(name="mine", fn=jax_objective, bounds=jnp.asarray(BOUNDS))
    runs = [jax.jit(jax.vmap(lambda k, p=p: ntkbo.minimize(algo, p, 16, k)))(keys)
            for p in (wrapped, native)]
    for r in runs:
        x, failed = np.asarray(r.x), np.asarray(r.failed)
        np.testing.assert_array_equal(failed, x[..., 0] > 0.7)
        assert failed.any() and not failed.all(axis=1).any()
        f = np.where(failed, np.inf, np.sum((x - 0.3) ** 2, axis=-1))
        np.testing.assert_allclose(r.best_y, f.min(axis=1), rtol=1e-12)
    np.testing.assert_array_equal(runs[0].x, runs[1].x)


def test_an_exception_in_the_objective_aborts_with_its_point():
    def broken(x):
        raise RuntimeError("simulator crashed")

    problem = ntkbo.benchmarks.numpy_problem(broken, BOUNDS, name="sim")
    with pytest.raises(Exception, match=r"sim failed at x = \[.*RuntimeError: simulator crashed"):
        ntkbo.minimize(ntkbo.algorithms.random_search(), problem, 4, jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="bounds"):
        ntkbo.benchmarks.numpy_problem(np_objective, [[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match="workers must be"):
        ntkbo.benchmarks.numpy_problem(np_objective, BOUNDS, workers=0)
