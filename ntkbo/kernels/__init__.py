"""Exact infinite-width NNGP/NTK kernels, the finite-width (empirical) NTK, and the nt adapter.

* :func:`mlp` -> ``(init_fn, apply_fn, kernel_fn)`` with neural-tangents' conventions: the flax
  network ``ntkbo.nets.MLP`` and its closed-form infinite-width kernels (``native``);
  :func:`network_mlp` the same for an ``ntkbo.parts.Network``, the network part of the algorithms.
* :func:`as_kernel` -> ``k(x1, x2) -> (n1, n2)``, the kernel convention of ``ntkbo.gp`` and the
  algorithms, from an ntkbo or a ``neural_tangents.stax`` ``kernel_fn``.
* :func:`empirical_ntk`, :func:`grad_features`: finite-width NTK ``g(x1) . g(x2)`` and the gradient
  features ``g(x; theta)`` NeuralBO / NeuralUCB / NeuralTS use.
* :mod:`ntkbo.kernels.stationary`: the ARD RBF and Matern-5/2 kernels of the standard GP baseline.
* :mod:`ntkbo.kernels.nt`: neural-tangents interop (``mlp(..., backend="nt")``, parameter mapping).

Activations (``activation=``): a name in :data:`ACTIVATIONS`, a ``(name, params)`` pair such as
``("leaky_relu", {"alpha": 0.1})``, or :func:`make_activation` ``(name, **params)``.
"""

from ntkbo.kernels import nt, stationary
from ntkbo.kernels.activations import ACTIVATIONS, Activation, as_activation, make_activation
from ntkbo.kernels.architecture import PARAMETERIZATIONS, MLPSpec, mlp_spec
from ntkbo.kernels.base import KernelFn, as_kernel
from ntkbo.kernels.empirical import empirical_ntk, grad_features
from ntkbo.kernels.mlp import mlp, network_mlp
from ntkbo.kernels.native import kernel_fn_from_spec

__all__ = [
    "ACTIVATIONS",
    "Activation",
    "KernelFn",
    "MLPSpec",
    "PARAMETERIZATIONS",
    "as_activation",
    "as_kernel",
    "empirical_ntk",
    "grad_features",
    "kernel_fn_from_spec",
    "make_activation",
    "mlp",
    "mlp_spec",
    "network_mlp",
    "nt",
    "stationary",
]
