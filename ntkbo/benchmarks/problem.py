"""The ``Problem`` type: a black-box objective with its box, known optimum and noise level.

A ``Problem`` is an immutable pytree (a ``flax.struct`` dataclass). Its array fields (``bounds``,
``optimum``, ``optimizer``, ``noise_std``) are leaves, so a problem can be passed as an ordinary
argument to ``jax.jit``-ed code; its callable ``fn`` and its ``name`` are static metadata.

Convention: **minimisation**. ``fn`` maps one point ``x`` of shape ``(d,)`` to a scalar; ``optimum``
is the known global minimum of ``fn`` over the box and ``optimizer`` the known minimiser(s).

Optional fields default to ``None`` so that code constructing or consuming a ``Problem`` keeps working
unchanged: ``constraints``, ``K`` black-box constraints ``c_k(x) <= 0`` (Neural-CBO; a point is
feasible iff every ``c_k(x) <= 0``), and PDE operators ``N[f] = g`` for PINN-BO.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Callable, Optional

import jax
import jax.numpy as jnp
from flax import struct

from ntkbo.objective import violation  # noqa: F401  (re-exported; the drivers' own)

if TYPE_CHECKING:  # the ``pde`` field's type (import it from ntkbo.pde)
    from ntkbo.pde import Pde

Array = jax.Array


@struct.dataclass
class Problem:
    """A box-constrained minimisation problem.

    Attributes:
      name: the registry name, e.g. ``"ackley"`` (static).
      fn: pure JAX function, ``x`` of shape ``(d,)`` -> scalar, noise free (static, not a leaf).
      bounds: array ``(2, d)``; row 0 the lower bounds, row 1 the upper bounds.
      optimum: the known global minimum of ``fn`` on ``bounds``, or ``None`` if not known.
      optimizer: known global minimiser(s), array ``(k, d)``, or ``None``. For problems with many
        symmetric minimisers (e.g. a separable function with ``2^d`` of them) a subset is listed;
        each function's docstring says which.
      noise_std: standard deviation of the additive Gaussian observation noise (default 0).
      pde: a ``Pde`` ``N[f] = g`` that ``fn`` obeys (PINN-BO's physics problems), or ``None``
        (static).
      constraints: ``None`` (unconstrained, the default) or a pure JAX function mapping one point
        ``x (d,)`` to the values ``(K,)`` of ``K`` black-box constraints, noise free (static). **Sign
        convention:** ``x`` is feasible iff ``c_k(x) <= 0`` for every ``k`` (a value of exactly 0 is
        feasible); ``optimum`` and ``optimizer`` are then those of the *constrained* problem.
      constraint_noise_std: std of the additive Gaussian noise of the constraint observations, a
        scalar or ``(K,)`` (default 0).

    ``dim`` is ``bounds.shape[-1]``. Use ``problem.replace(noise_std=0.1)`` to change a field.
    """

    name: str = struct.field(pytree_node=False)
    fn: Callable[[Array], Array] = struct.field(pytree_node=False)
    bounds: Array
    optimum: Optional[float] = None
    optimizer: Optional[Array] = None
    noise_std: float = 0.0
    pde: Optional[Pde] = struct.field(pytree_node=False, default=None)
    constraints: Optional[Callable[[Array], Array]] = struct.field(pytree_node=False, default=None)
    constraint_noise_std: float = 0.0

    if TYPE_CHECKING:  # added by flax.struct at run time (``dataclasses.replace``)
        def replace(self, **updates) -> Problem: ...

    @property
    def dim(self) -> int:
        """The input dimension ``d`` (static: read from the shape of ``bounds``)."""
        return self.bounds.shape[-1]

    def fn_batch(self, x: Array) -> Array:
        """Noise-free values ``f(x_i)`` of a batch ``x`` of shape ``(n, d)``; returns ``(n,)``."""
        return _batched(self.fn)(self._check(x))

    def evaluate(self, key: Array, x: Array) -> Array:
        """Noisy observations ``y_i = f(x_i) + noise_std * eps_i``, ``eps_i ~ N(0, 1)`` i.i.d.

        Args:
          key: a ``jax.random`` key; the same key gives the same noise.
          x: batch of points, shape ``(n, d)``.

        Returns:
          ``y`` of shape ``(n,)``, in the dtype of ``f(x)``. With ``noise_std == 0`` this equals
          ``fn_batch(x)`` exactly.
        """
        return _observed(self.fn)(key, self._check(x), jnp.asarray(self.noise_std))

    @property
    def n_constraints(self) -> int:
        """``K``, the number of black-box constraints (0 if unconstrained); static, from shapes."""
        if self.constraints is None:
            return 0
        # through a lambda: eval_shape keeps a weak reference to its function, which a callable
        # NamedTuple (the suites' ``Transformed``) does not allow
        constraints = self.constraints
        shape = jax.eval_shape(lambda x: constraints(x),
                               jax.ShapeDtypeStruct((self.dim,), self.bounds.dtype)).shape
        if len(shape) != 1:
            raise ValueError(f"problem {self.name!r}: constraints must map x (d,) to (K,), "
                             f"got shape {shape}")
        return int(shape[0])

    def constraints_batch(self, x: Array) -> Array:
        """Noise-free constraint values ``c_k(x_i)`` of a batch ``x`` ``(n, d)``: ``(n, K)``
        (``(n, 0)`` for an unconstrained problem). Feasible rows are those with every entry ``<= 0``."""
        x = self._check(x)
        if self.constraints is None:
            return jnp.zeros((x.shape[0], 0), x.dtype)
        return _batched(self.constraints)(x)

    def evaluate_constraints(self, key: Array, x: Array) -> Array:
        """Noisy constraint observations ``c_k(x_i) + constraint_noise_std_k * eps_ik``, ``(n, K)``,
        ``eps ~ N(0, 1)`` i.i.d.; equal to ``constraints_batch(x)`` when the noise is 0."""
        c = self.constraints_batch(x)
        std = jnp.broadcast_to(jnp.asarray(self.constraint_noise_std, c.dtype), c.shape[-1:])
        return c + std * jax.random.normal(key, c.shape, c.dtype)

    def feasible_batch(self, x: Array) -> Array:
        """``(n,)`` bool: ``c_k(x_i) <= 0`` for every ``k`` (all True if unconstrained)."""
        return jnp.all(self.constraints_batch(x) <= 0, axis=-1)

    def _check(self, x: Array) -> Array:
        x = jnp.asarray(x)
        if x.ndim != 2 or x.shape[-1] != self.dim:  # static shapes: checked once, at trace time
            raise ValueError(
                f"x must have shape (n, {self.dim}) for problem {self.name!r}; got {x.shape}"
            )
        return x


# One compiled evaluator per objective function, so that eager calls (outside any jit) compile
# once per input shape instead of dispatching op by op; inside a jit they are simply inlined.


@functools.lru_cache(maxsize=None)
def _batched(fn: Callable) -> Callable:
    return jax.jit(jax.vmap(fn))


@functools.lru_cache(maxsize=None)
def _observed(fn: Callable) -> Callable:
    def observe(key, x, noise_std):
        y = jax.vmap(fn)(x)
        eps = jax.random.normal(key, y.shape, dtype=y.dtype)
        return y + noise_std.astype(y.dtype) * eps

    return jax.jit(observe)


def uniform(key: Array, bounds: Array, n: int) -> Array:
    """``n`` points drawn uniformly from the box ``bounds`` ``(2, d)``; returns ``(n, d)``."""
    bounds = jnp.asarray(bounds)
    lower, upper = bounds[0], bounds[1]
    d = bounds.shape[-1]
    # drawn flat and reshaped: same distribution, and XLA compiles the 1-D threefry several
    # times faster than the 2-D one (measured: 0.5 s vs 2.3 s on CPU, jax 0.10)
    u = jax.random.uniform(key, (n * d,), dtype=bounds.dtype).reshape(n, d)
    return lower + (upper - lower) * u


def relative_noise_std(
    problem: Problem,
    scale: float = 0.1,
    num_points: int = 10_000,
    key: Optional[Array] = None,
) -> float:
    """Noise level proportional to the spread of ``f``: ``scale * std(f(X))``, ``X`` uniform.

    This is the rule of the NeuralBO and PINN-BO code (``Objective.noise_std_estimate``:
    ``0.1 * torch.std`` of ``f`` over 10,000 uniform points, i.e. a noise *variance* of 1% of the
    variance of ``f``). Neural-CBO uses
    ``scale=0.05``. The papers' text says "variance 1% of the function range"; the code's rule is
    the concrete one. The standard deviation is the unbiased one (``ddof=1``), as ``torch.std``.

    Deterministic: ``key`` defaults to ``jax.random.PRNGKey(0)``, so the same problem and box always
    give the same value. Call outside ``jit``; returns a Python float.
    """
    if key is None:
        key = jax.random.PRNGKey(0)
    return float(scale * _spread(problem.fn, key, problem.bounds, int(num_points)))


@functools.partial(jax.jit, static_argnums=(0, 3))
def _spread(fn, key, bounds, num_points):
    """``std(f(X))`` (``ddof=1``) for ``num_points`` uniform points ``X`` of the box."""
    return jnp.std(jax.vmap(fn)(uniform(key, bounds, num_points)), ddof=1)
