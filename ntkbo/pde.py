"""The ``Pde`` type: a linear differential operator ``N`` with its source term ``g``.

PINN-BO (Phan-Trong et al. 2024; Phan-Trong's thesis, Section 5.1) uses a known equation
``N[f](x) = g(x)`` obeyed by the objective ``f``; both the problems that carry such an equation
(``ntkbo.benchmarks.pde`` builds the operators, ``Problem.pde`` attaches them) and the algorithm
that uses it (``ntkbo.algorithms.pinn_bo``) need the type. It lives here, beside neither, so that
importing the algorithms does not load the problems package.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax

Array = jax.Array

__all__ = ["Pde"]


class Pde(NamedTuple):
    """A known differential equation ``N[f](x) = g(x)`` obeyed by a problem's objective (PINN-BO,
    Phan-Trong's thesis, Section 5.1), with ``N`` linear in ``f`` and ``g`` cheap to evaluate.

    Attributes:
      operator: ``operator(f)`` maps a scalar function ``f: (d,) -> ()`` to the function
        ``x (d,) -> N[f](x)``, of shape ``()`` or ``(r,)`` for a system of ``r`` equations. It is
        built with ``jax.grad`` / ``jax.hessian`` / ``jax.jvp`` (no hand-written derivatives), so it
        applies to the objective, to a neural network and to a kernel ``k(x, .)`` alike.
      rhs: ``g(x)`` for one point ``x (d,)``, same shape as ``N[f](x)``.
      name: a short description of the equation (for reports).

    Module-level functions keep a ``Pde`` hashable and equal across ``get`` calls, so jitted code
    taking a ``Problem`` compiles once. ``ntkbo.benchmarks.pde`` builds the operators.
    """

    operator: Callable[[Callable[[Array], Array]], Callable[[Array], Array]]
    rhs: Callable[[Array], Array]
    name: str = ""

    def residual(self, f: Callable[[Array], Array]) -> Callable[[Array], Array]:
        """``x -> N[f](x) - g(x)``, zero everywhere when ``f`` solves the equation."""
        op = self.operator(f)
        return lambda x: op(x) - self.rhs(x)
