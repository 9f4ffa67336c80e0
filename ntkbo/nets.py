"""The networks layer: the flax.linen MLP that ``ntkbo.kernels`` gives the infinite-width limit of.

``MLP`` and ``Dense`` are defined in ``ntkbo.kernels.network``, next to the kernels they match
(``ntkbo.kernels.mlp``'s ``init_fn`` and ``apply_fn`` are this network), so that the kernels
package never imports a module above it; this module is their public name.
"""

from ntkbo.kernels.network import MLP, Dense, _default_float  # noqa: F401  (re-exported)

__all__ = ["Dense", "MLP"]
