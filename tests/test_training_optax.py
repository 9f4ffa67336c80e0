"""``ntkbo.parts.Training(optimizer=...)`` given an ``optax.GradientTransformation``: every
algorithm that trains by gradient steps trains with it, records say what was given, and a study
refuses it (a record cannot tell two transformations apart)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import ntkbo
from ntkbo import algorithms as A
from ntkbo.benchmarks import pde as P
from ntkbo.experiments.spec import AlgorithmSpec, ProblemSpec, Spec
from ntkbo.parts import Training, merge

#: A step size no algorithm defaults to (their Adam defaults are 1e-2 and 1e-3; GD's is computed
#: from the data), so a transformation ignored in favour of a default trains differently.
LR = 3e-3
SMALL_SEARCH = dict(search={"num_candidates": 16, "num_restarts": 2, "num_steps": 2})

#: (registry name, options, the named optimizer that ``tx(LR)`` computes, tx). Small networks and
#: few steps: the tests compare two trainings, not their quality. The Neural Greedy family and
#: STO-BNTS train in ``suggest`` (a fresh network per draw), the others in ``update``.
CASES = [
    ("neural_bo", dict(network={"width": 16}, training={"num_steps": 4}), "adam", optax.adam),
    ("neural_cbo", dict(network={"width": 16}, training={"num_steps": 4}, n_constraints=1),
     "adam", optax.adam),
    ("pinn_bo", dict(pde=P.LAPLACE, network={"width": 16}, training={"num_steps": 4}), "adam",
     optax.adam),
    ("go_ucb", dict(network={"width": 8}, training={"num_steps": 4}, n_explore=4), "adam",
     optax.adam),
    ("simple_smb", dict(network={"width": 16}, training={"num_steps": 4}, num_explore=0,
                        **SMALL_SEARCH), "adam",
     optax.adam),
    # STO-BNTS's "gd" is its own loop, ``flat - lr * g``; optax.sgd adds ``-lr * g``
    ("sto_bnts", dict(network={"width": 16}, training={"num_steps": 4}, **SMALL_SEARCH), "gd",
     optax.sgd),
]


def _updated(name, options):
    """The state after one ``update`` with 6 points of the unit square (d = 2) and, for
    Neural-CBO, one constraint column; with the next ``suggest``'s point for the algorithms
    that train there."""
    algo = A.get(name, **options)
    bounds = jnp.array([[0.0, 0.0], [1.0, 1.0]])
    x = jax.random.uniform(jax.random.PRNGKey(1), (6, 2))
    y = jnp.sin(3.0 * x[:, 0]) + x[:, 1] ** 2
    if algo.n_constraints:
        y = jnp.stack([y, x[:, 0] - 0.5], axis=1)
    state = algo.init(jax.random.PRNGKey(0), bounds, 8)
    state = jax.jit(algo.update)(state, x, y)[0]
    if name in ("simple_smb", "sto_bnts"):
        return jax.jit(algo.suggest)(jax.random.PRNGKey(2), state)[0]
    return state


def _leaves(state):
    return [np.asarray(v) for v in jax.tree_util.tree_leaves(state)
            if hasattr(v, "dtype") and jnp.issubdtype(v.dtype, jnp.floating)]


@pytest.mark.parametrize("name,options,named,tx", CASES, ids=[c[0] for c in CASES])
def test_a_transformation_trains_as_the_named_optimizer_it_computes(name, options, named, tx):
    """``optimizer=optax.adam(lr)`` gives the state of ``optimizer="adam", learning_rate=lr``
    (the named one is ``optax.adam(lr)`` inside) at a step no default has, so the transformation
    is what trains. Mutations caught (checked): ``make_optimizer`` ignoring a transformation
    (``optax.sgd(learning_rate)``); a factory training with its default optimizer and step
    instead of the given transformation (``train_smb`` calling ``train`` with ``"adam"``)."""
    named_state = _updated(name, merge(options, {"training": {"optimizer": named,
                                                              "learning_rate": LR}}))
    tx_state = _updated(name, merge(options, {"training": {"optimizer": tx(LR)}}))
    for a, b in zip(_leaves(named_state), _leaves(tx_state)):
        # the same arithmetic in the same order: equal up to one rounding of a fused multiply-add
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_a_transformation_keeps_its_state_across_rounds():
    """NeuralBO's ``keep_optimizer_state`` carries the given transformation's own state (here
    ``optax.adamw``'s, whose structure differs from Adam's), continued from round to round:
    two rounds equal one ``train`` of ``2 J`` steps only if the moments carry over, which the
    counts in the state show. Mutation caught (checked): ``init`` building Adam's state
    (``make_optimizer("adam", 1.0)``): the tree structures differ."""
    tx = optax.adamw(LR, weight_decay=1e-3)
    algo = A.neural_bo(network={"width": 8}, training={
        "optimizer": tx, "num_steps": 3, "warm_start": True, "keep_optimizer_state": True})
    state = algo.init(jax.random.PRNGKey(0), jnp.array([[0.0, 0.0], [1.0, 1.0]]), 8)
    assert (jax.tree_util.tree_structure(state.opt_state)
            == jax.tree_util.tree_structure(tx.init(state.params0)))
    x = jax.random.uniform(jax.random.PRNGKey(1), (4, 2))
    update = jax.jit(algo.update)
    state = update(state, x[:2], x[:2, 0])[0]
    state = update(state, x[2:], x[2:, 0])[0]
    counts = [np.asarray(v) for v in jax.tree_util.tree_leaves(state.opt_state)
              if np.asarray(v).dtype == np.int32]
    assert counts and all(int(c) == 6 for c in counts)  # 2 rounds x 3 steps


def test_records_and_errors_with_a_transformation():
    """The record has ``learning_rate = None`` (the transformation carries its step) and is not
    reproducible; giving both is refused, naming the field; a preset's learning rate is dropped
    by a transformation that replaces its optimizer; a wrong value names the choices.
    Mutations caught (checked): ``Training.resolved`` without the conflict check (no error);
    ``Training.merged`` keeping the preset's rate (the second build raises)."""
    algo = A.neural_bo(training=Training(optimizer=optax.adam(LR)))
    assert algo.config["training"]["learning_rate"] is None
    assert not algo.config.reproducible and "training" in algo.config.non_reproducible
    with pytest.raises(ValueError, match=r"training\.learning_rate=0\.1 is the step of a named"):
        A.neural_bo(training={"optimizer": optax.adam(LR), "learning_rate": 0.1})
    assert A.presets("neural_bo")["authors"]["training"]["learning_rate"] is not None
    built = A.neural_bo(preset="authors", training={"optimizer": optax.sgd(LR)})
    assert built.config["training"]["learning_rate"] is None
    with pytest.raises(ValueError, match=r"training\.optimizer must be one of .* or an optax"):
        A.neural_bo(training={"optimizer": "lbfgs"})


def beta_schedule(n):
    """A module-level schedule: its qualified name identifies it."""
    return jnp.sqrt(jnp.log(2.0 + n))


def test_a_study_refuses_values_it_cannot_record():
    """A study's cells are named by a digest of their options: an optax transformation and a
    lambda (described by their code only) are refused, naming the option; a module-level
    function is accepted. Mutations caught (checked): ``_unstable`` returning None (no error);
    flagging every callable (the module-level function is refused)."""
    def spec(name, options):
        return Spec(name="t", budget=6, seeds=1, algorithms=(AlgorithmSpec(name, options),),
                    problems=(ProblemSpec("branin"),))

    with pytest.raises(ValueError, match=r"option training\.optimizer is .*no stable description"):
        spec("neural_bo", {"training": {"optimizer": optax.adam(LR)}}).resolve("smoke")
    with pytest.raises(ValueError, match=r"option beta is .*no stable description"):
        spec("sto_bnts", {"beta": lambda n: 1.0}).resolve("smoke")
    cells = spec("sto_bnts", {"beta": beta_schedule}).resolve("smoke")
    assert cells[0].options["beta"].endswith("beta_schedule")
    assert spec("neural_bo", {"training": {"optimizer": "adam"}}).resolve("smoke")


def test_minimize_runs_with_a_transformation():
    """The driver runs an algorithm trained by a transformation (``optax.chain`` with gradient
    clipping), jitted whole; the result holds the budget's points inside the box."""
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(LR))
    algo = A.for_problem("neural_bo", ntkbo.benchmarks.get("branin"),
                         network={"width": 8}, training={"optimizer": tx, "num_steps": 3},
                         search={"num_candidates": 64, "num_perturbations": 8, "num_steps": 2})
    problem = ntkbo.benchmarks.get("branin")
    result = ntkbo.minimize(algo, problem, 6, jax.random.PRNGKey(0))
    x = np.asarray(result.x)
    lo, hi = np.asarray(problem.bounds)
    assert x.shape == (6, 2) and np.all((x >= lo) & (x <= hi)) and np.all(np.isfinite(result.y))
