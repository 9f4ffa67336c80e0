"""A flax.linen MLP in NTK or standard parameterisation, matching ``ntkbo.kernels`` exactly.

Its public name is ``ntkbo.nets`` (the networks layer); it is defined here, inside the kernels
package, because ``ntkbo.kernels.mlp`` builds its ``init_fn``/``apply_fn`` from it while it uses the
package's architecture description: both below ``mlp``, so no import goes up.

``MLP(depth, width, activation, W_std, b_std, parameterization)`` is ``depth`` hidden layers
``Dense(width) -> activation`` followed by a ``Dense(1)`` readout, with neural-tangents'
``stax.Dense`` semantics (Jacot et al. 2018; Sohl-Dickstein et al. 2020). For a layer with fan-in
``N`` (``x`` of shape ``(n, N)``):

* ``"ntk"``: ``kernel ~ N(0, 1)``, ``bias ~ N(0, 1)``; ``z = (W_std / sqrt(N)) x @ kernel + b_std bias``.
* ``"standard"``: ``kernel ~ N(0, W_std^2 / N)``, ``bias ~ N(0, b_std^2)``; ``z = x @ kernel + bias``.

``b_std=None`` means no bias parameter. ``W_std``/``b_std`` may be one value or ``depth + 1`` values
(readout last); activations are ``ntkbo.kernels.activations`` specs (``"relu"``,
``("leaky_relu", {"alpha": 0.1})``, ...), the same registry the analytic kernels use. The
infinite-width limit of this network is ``ntkbo.kernels.mlp(...)[2]``.

Parameters (``variables = MLP(...).init(key, x)``)::

    variables["params"]["Dense_l"]["kernel"]  (fan_in_l, out_l)   l = 0 .. depth (readout: out = 1)
    variables["params"]["Dense_l"]["bias"]    (out_l,)            only if b_std[l] is not None

Parameters are float64 when ``jax_enable_x64`` is on and float32 otherwise (``param_dtype``).
"""

from __future__ import annotations

from typing import Any, Optional

import flax.linen as nn
import jax
import jax.numpy as jnp

from ntkbo.kernels.activations import ActivationSpec
from ntkbo.kernels.architecture import FloatOrSeq, OptFloatOrSeq, mlp_spec

Array = jax.Array


def default_float():
    """The float dtype jax computes in here: float64 with ``jax_enable_x64``, else float32."""
    return jax.dtypes.canonicalize_dtype(jnp.float64)


def _scaled_normal(scale: float):
    def init(key, shape, dtype):
        return jax.random.normal(key, shape, dtype) * jnp.asarray(scale, dtype)

    return init


class Dense(nn.Module):
    """neural-tangents' ``stax.Dense`` as a flax module: ``(n, N) -> (n, features)``.

    Attributes:
      features: output width.
      W_std: weight scale.
      b_std: bias scale; ``None`` means no bias.
      parameterization: ``"ntk"`` or ``"standard"`` (formulas in the module docstring).
      param_dtype: parameter dtype; ``None`` means float64 under x64, else float32.
    """

    features: int
    W_std: float = 1.0
    b_std: Optional[float] = None
    parameterization: str = "ntk"
    param_dtype: Any = None

    @nn.compact
    def __call__(self, x: Array) -> Array:
        dtype = self.param_dtype or default_float()
        fan_in = x.shape[-1]
        if self.parameterization == "ntk":
            kernel = self.param("kernel", _scaled_normal(1.0), (fan_in, self.features), dtype)
            out = (self.W_std / fan_in**0.5) * jnp.dot(x, kernel)
            if self.b_std is not None:
                bias = self.param("bias", _scaled_normal(1.0), (self.features,), dtype)
                out = out + self.b_std * bias
        elif self.parameterization == "standard":
            kernel = self.param(
                "kernel", _scaled_normal(self.W_std / fan_in**0.5), (fan_in, self.features), dtype
            )
            out = jnp.dot(x, kernel)
            if self.b_std is not None:
                bias = self.param("bias", _scaled_normal(self.b_std), (self.features,), dtype)
                out = out + bias
        else:
            raise ValueError(
                f"parameterization: expected 'ntk' or 'standard', got {self.parameterization!r}."
            )
        return out


class MLP(nn.Module):
    """``depth`` x ``(Dense(width), activation)`` then ``Dense(1)``: ``(n, d) -> (n, 1)``.

    Attributes:
      depth: number of hidden layers (``>= 1``).
      width: hidden width (``>= 1``).
      activation: activation spec (see ``ntkbo.kernels.activations``).
      W_std: weight scale, one float or ``depth + 1`` floats (readout last).
      b_std: bias scale(s); ``None`` (or a ``None`` entry) means no bias.
      parameterization: ``"ntk"`` or ``"standard"``.
      param_dtype: parameter dtype; ``None`` means float64 under x64, else float32.

    Raises:
      ValueError: (when called or initialised) for invalid arguments, naming the argument, or for
        inputs that are not ``(n, d)``.
    """

    depth: int
    width: int
    activation: ActivationSpec = "relu"
    W_std: FloatOrSeq = 1.0
    b_std: OptFloatOrSeq = None
    parameterization: str = "ntk"
    param_dtype: Any = None

    @nn.compact
    def __call__(self, x: Array) -> Array:
        spec = mlp_spec(
            self.depth, self.width, self.activation, self.W_std, self.b_std, self.parameterization
        )
        x = jnp.asarray(x)
        if x.ndim != 2:
            raise ValueError(f"x: expected shape (n, d), got {x.shape}.")
        dtype = self.param_dtype or default_float()
        x = x.astype(dtype)
        for layer in range(spec.num_dense):
            features = 1 if layer == spec.depth else spec.width
            x = Dense(
                features,
                W_std=spec.W_std[layer],
                b_std=spec.b_std[layer],
                parameterization=spec.parameterization,
                param_dtype=dtype,
                name=f"Dense_{layer}",
            )(x)
            if layer < spec.depth:
                x = spec.activation(x)
        return x
