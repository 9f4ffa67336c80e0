"""neural-tangents adapter: use ``neural_tangents.stax`` kernels in ntkbo, and cross-check ntkbo.

Where ``neural_tangents`` imports, any stax ``kernel_fn`` (convolutions, attention, ...: whatever
neural-tangents supports) works wherever ntkbo takes a kernel, through the one convention
:func:`as_kernel` (``k(x1, x2) -> (n1, n2)``)::

    from neural_tangents import stax
    _, _, kernel_fn = stax.serial(stax.Conv(32, (3, 3)), stax.Relu(), stax.Flatten(), stax.Dense(1))
    k = ntkbo.kernels.as_kernel(kernel_fn, get="ntk")

:func:`mlp_stax` builds ntkbo's fully-connected architecture through stax (what
``ntkbo.kernels.mlp(..., backend="nt")`` returns) and :func:`flax_to_stax_params` /
:func:`stax_to_flax_params` map parameters between ``ntkbo.nets.MLP`` and that stax network.

Environment: neural-tangents 0.6.5, the last release, imports only with ``jax <= 0.5.3`` (jax 0.6
removed ``jax.core.Jaxpr``, which it imports), and its import pulls in
``neural_tangents.experimental``, which needs TensorFlow. ntkbo itself never needs it: the native
kernels are the same recursions. This module imports neural-tangents lazily, only when called.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from ntkbo.kernels.activations import ActivationSpec, as_activation
from ntkbo.kernels.architecture import FloatOrSeq, OptFloatOrSeq, mlp_spec
from ntkbo.kernels.base import as_kernel  # noqa: F401  (re-exported: the kernel convention)

IMPORT_HELP = (
    "neural_tangents could not be imported ({error}). ntkbo's native kernels do not need it; the "
    "'nt' backend and the cross-checks do. neural-tangents 0.6.5 (its last release) needs "
    "jax<=0.5.3 because jax 0.6 removed jax.core.Jaxpr, which it imports: use a separate "
    "environment with jax==0.5.3 jaxlib==0.5.3 flax==0.10.6 optax==0.2.8 'chex<=0.1.90' "
    "(pip install 'ntkbo[nt]') and `pip install --no-deps neural-tangents==0.6.5 frozendict`. "
    "Importing neural_tangents also imports neural_tangents.experimental, which needs TensorFlow: "
    "install TensorFlow, or put an empty module at sys.modules['neural_tangents.experimental'] "
    "before the import (as ntkbo's tests/nt_shim.py does)."
)

# ntkbo activation name -> neural_tangents.stax layer constructor (parameter names are the same).
_STAX_ACTIVATIONS = {
    "identity": "Identity",
    "relu": "Relu",
    "leaky_relu": "LeakyRelu",
    "ab_relu": "ABRelu",
    "abs": "Abs",
    "erf": "Erf",
    "sigmoid_like": "Sigmoid_like",
    "gelu": "Gelu",
    "sin": "Sin",
    "cos": "Cos",
    "rbf": "Rbf",
    "exp": "Exp",
    "gaussian": "Gaussian",
}


def import_neural_tangents():
    """Returns the ``neural_tangents`` module.

    Raises:
      ImportError: with :data:`IMPORT_HELP` (the jax <= 0.5.3 and TensorFlow constraints) when it
        cannot be imported.
    """
    try:
        import neural_tangents  # pyright: ignore[reportMissingImports]  (the nt extra, optional)
    except Exception as error:  # ImportError, or AttributeError from newer jax.
        raise ImportError(IMPORT_HELP.format(error=f"{type(error).__name__}: {error}")) from error
    return neural_tangents


def is_available() -> bool:
    """Whether ``neural_tangents`` imports in this environment."""
    try:
        import_neural_tangents()
    except ImportError:
        return False
    return True


def stax_activation(activation: ActivationSpec):
    """The ``neural_tangents.stax`` layer for an ntkbo activation spec (``Gelu`` is the exact one)."""
    act = as_activation(activation)
    stax = import_neural_tangents().stax
    params = dict(act.params)
    if act.name == "gelu":
        params["approximate"] = False
    return getattr(stax, _STAX_ACTIVATIONS[act.name])(**params)


def mlp_stax(
    depth: int,
    width: int,
    activation: ActivationSpec = "relu",
    W_std: FloatOrSeq = 1.0,
    b_std: OptFloatOrSeq = None,
    parameterization: str = "ntk",
):
    """The architecture of ``ntkbo.kernels.mlp`` built with ``neural_tangents.stax``.

    ``stax.serial(Dense(width), act, ..., Dense(width), act, Dense(1))`` with ``depth`` hidden
    layers and the given per-layer ``W_std``/``b_std`` (arguments as in ``ntkbo.kernels.mlp``).

    Returns:
      stax's ``(init_fn, apply_fn, kernel_fn)``.

    Raises:
      ValueError: invalid arguments.
      ImportError: neural-tangents is not importable (see :data:`IMPORT_HELP`).
    """
    spec = mlp_spec(depth, width, activation, W_std, b_std, parameterization)
    stax = import_neural_tangents().stax
    layers = []
    for layer in range(spec.num_dense):
        out_dim = 1 if layer == spec.depth else spec.width
        layers.append(
            stax.Dense(
                out_dim,
                W_std=spec.W_std[layer],
                b_std=spec.b_std[layer],
                parameterization=spec.parameterization,
            )
        )
        if layer < spec.depth:
            layers.append(stax_activation(spec.activation))
    return stax.serial(*layers)


def flax_to_stax_params(variables: Any, depth: int) -> list:
    """``ntkbo.nets.MLP`` variables -> the params of :func:`mlp_stax`'s ``serial`` network.

    Returns:
      ``[(W_0, b_0), (), (W_1, b_1), (), ..., (W_depth, b_depth)]`` with ``W_l (fan_in, out)``,
      ``b_l (1, out)`` or ``None`` (stax's layout; activations have empty params ``()``).
    """
    params = variables["params"] if "params" in variables else variables
    out = []
    for layer in range(depth + 1):
        dense = params[f"Dense_{layer}"]
        bias = dense.get("bias")
        out.append((jnp.asarray(dense["kernel"]), None if bias is None else jnp.asarray(bias)[None, :]))
        if layer < depth:
            out.append(())
    return out


def stax_to_flax_params(stax_params: list, depth: int) -> dict:
    """Inverse of :func:`flax_to_stax_params`: ``{"params": {"Dense_l": {"kernel", "bias"}}}``."""
    if len(stax_params) != 2 * depth + 1:
        raise ValueError(
            f"stax_params: expected {2 * depth + 1} entries for depth {depth}, got {len(stax_params)}."
        )
    params = {}
    for layer in range(depth + 1):
        W, b = stax_params[2 * layer]
        entry = {"kernel": jnp.asarray(W)}
        if b is not None:
            entry["bias"] = jnp.asarray(b).reshape(-1)
        params[f"Dense_{layer}"] = entry
    return {"params": params}
