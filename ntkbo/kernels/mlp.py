"""``mlp``: the ``(init_fn, apply_fn, kernel_fn)`` triple of a fully-connected network.

The triple has neural-tangents' calling conventions (Novak et al. 2020)::

    init_fn(key, input_shape) -> (output_shape, params)     input_shape (n, d) -> output (n, 1)
    apply_fn(params, x)       -> (n, 1)                      the finite flax network ntkbo.nets.MLP
    kernel_fn(x1, x2=None, get=("nngp", "ntk"))              its exact infinite-width kernels

``kernel_fn`` is the infinite-width limit of ``apply_fn``'s network: the NNGP is the covariance of
``apply_fn(params, x)`` over ``init_fn``'s random ``params`` as ``width -> inf`` (Lee et al. 2018),
the NTK the limit of ``empirical_ntk(apply_fn)`` (Jacot et al. 2018), both computed in closed form
by ``ntkbo.kernels.native``, equal to neural-tangents' ``stax`` kernels to rounding.
"""

from __future__ import annotations

from typing import Sequence, cast

import jax
import jax.numpy as jnp

from ntkbo.kernels import network as nets
from ntkbo.kernels.activations import ActivationSpec
from ntkbo.kernels.architecture import FloatOrSeq, OptFloatOrSeq, mlp_spec
from ntkbo.kernels.native import kernel_fn_from_spec
from ntkbo.parts import Network

BACKENDS: tuple[str, ...] = ("native", "nt")


def mlp(
    depth: int,
    width: int,
    activation: ActivationSpec = "relu",
    W_std: FloatOrSeq = 1.0,
    b_std: OptFloatOrSeq = None,
    parameterization: str = "ntk",
    backend: str = "native",
):
    """``(init_fn, apply_fn, kernel_fn)`` for ``depth`` x ``(Dense(width), activation)`` + ``Dense(1)``.

    ``depth = 1`` is neural-tangents' ``stax.serial(Dense(width, W_std, b_std), act,
    Dense(1, W_std, b_std))``. Conventions are nt's: input covariance ``x . x' / d``; Dense weights
    ``W_std / sqrt(fan_in)`` (``"ntk"``) or ``N(0, W_std^2 / fan_in)`` (``"standard"``); biases
    ``b_std`` (``None``: no bias). Formulas: ``ntkbo.kernels.native`` and
    ``ntkbo.kernels.activations``.

    Args:
      depth: number of hidden layers, ``>= 1``.
      width: hidden width of the finite network, ``>= 1``. The ``"ntk"`` kernels do not depend on it;
        the ``"standard"`` NTK does (its gradient with respect to ``W`` scales with the fan-in).
      activation: ``"relu"``, ``("leaky_relu", {"alpha": 0.1})``, or an ``Activation``; names in
        ``ntkbo.kernels.ACTIVATIONS``.
      W_std: weight scale, one float or ``depth + 1`` floats (readout last).
      b_std: bias scale, ``None``, one float, or ``depth + 1`` entries (``None`` entries: no bias).
      parameterization: ``"ntk"`` or ``"standard"``.
      backend: ``"native"`` (the flax network and ntkbo's closed forms) or ``"nt"`` (the same
        architecture built with ``neural_tangents.stax``; needs neural-tangents, i.e. jax <= 0.5.3).

    Returns:
      ``(init_fn, apply_fn, kernel_fn)``. With ``backend="native"``, ``params`` is the flax variable
      dict ``{"params": {"Dense_0": {"kernel", "bias"}, ...}}`` (see ``ntkbo.nets``); with ``"nt"``
      it is stax's list of ``(W, b)`` tuples (convert with ``ntkbo.kernels.nt.stax_to_flax_params``).

    Raises:
      ValueError: invalid arguments (naming the argument).
      ImportError: ``backend="nt"`` without an importable neural-tangents.
    """
    spec = mlp_spec(depth, width, activation, W_std, b_std, parameterization)
    if backend == "nt":
        from ntkbo.kernels import nt

        return nt.mlp_stax(depth, width, activation, W_std, b_std, parameterization)
    if backend != "native":
        raise ValueError(f"backend: expected one of {', '.join(BACKENDS)}, got {backend!r}.")

    module = nets.MLP(
        depth=spec.depth,
        width=spec.width,
        activation=spec.activation,
        W_std=spec.W_std,
        b_std=spec.b_std,
        parameterization=spec.parameterization,
    )

    def init_fn(key: jax.Array, input_shape: Sequence[int]):
        """``(output_shape, params)``; ``input_shape = (n, d)`` (``n`` may be ``-1``)."""
        input_shape = tuple(input_shape)
        if len(input_shape) != 2:
            raise ValueError(f"input_shape: expected (n, d), got {input_shape}.")
        dummy = jnp.zeros((1, input_shape[1]), nets.default_float())
        params = module.init(key, dummy)
        return input_shape[:-1] + (1,), params

    def apply_fn(params, x: jax.Array) -> jax.Array:
        """``(n, d) -> (n, 1)``: the finite network at ``params``."""
        # flax types apply's result for mutable collections too; here it is the output array
        return cast(jax.Array, module.apply(params, x))

    init_fn.module = apply_fn.module = module
    return init_fn, apply_fn, kernel_fn_from_spec(spec)


def network_mlp(network: Network, backend: str = "native"):
    """``mlp`` for an ``ntkbo.parts.Network``, the network part the algorithms take:
    ``mlp(network.depth, network.width, activation=..., W_std=..., b_std=...,
    parameterization=..., backend=backend)``, a field left unset taking ``mlp``'s default.

    Raises:
      ValueError: naming the field: ``depth`` or ``width`` unset, ``W_std`` a named rule (such
        as NeuralBO's ``"paper"``, which needs the input dimension: give the scales), or
        ``input_scale`` set (not a field of an MLP).
    """
    given = network.given()
    for name in ("depth", "width"):
        if name not in given:
            raise ValueError(f"network.{name}: required for a kernel, got none")
    if isinstance(given.get("W_std"), str):
        raise ValueError(f"network.W_std: expected scales, got the rule {given['W_std']!r} "
                         "(it needs the input dimension)")
    if "input_scale" in given:
        raise ValueError("network.input_scale: not a field of an MLP")
    options = {k: v for k, v in given.items() if k not in ("depth", "width")}
    return mlp(given["depth"], given["width"], backend=backend, **options)
