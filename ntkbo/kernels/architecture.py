"""The one description of a fully-connected architecture shared by ``ntkbo.nets`` and the kernels.

An :class:`MLPSpec` is ``depth`` hidden layers ``Dense(width) -> activation`` followed by a
``Dense(1)`` readout, i.e. for ``depth = 1`` neural-tangents'
``stax.serial(Dense(width), Relu(), Dense(1))``. The network ``ntkbo.nets.MLP`` and the analytic
kernels ``ntkbo.kernels.native`` are both built from it, so the kernel is the infinite-width limit
of exactly the network ntkbo trains.

Dense layers follow neural-tangents' ``stax.Dense`` (Jacot et al. 2018; Sohl-Dickstein et al. 2020)
with fan-in ``N`` (the layer's input width):

* ``"ntk"``: ``W_ij ~ N(0, 1)``, ``b_i ~ N(0, 1)``, ``z = W_std / sqrt(N) x W + b_std b``.
* ``"standard"``: ``W_ij ~ N(0, W_std^2 / N)``, ``b_i ~ N(0, b_std^2)``, ``z = x W + b``.

``W_std`` and ``b_std`` are either one value for every Dense layer or a sequence of ``depth + 1``
values, input layer first and readout last (e.g. the NeuralBO paper's experimental network is
``W_std=(sqrt(d), 1.0)`` with ``b_std=None``: Section 7's ``sqrt(m) W_2 relu(W_1 x)`` with every
weight ``N(0, 1/m)``, whose NTK ``<g(x), g(x')> / m`` is this network's ``"ntk"`` kernel).
``b_std=None`` (or a ``None`` entry) means that layer has no bias.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from typing import Optional, Sequence, Union

from ntkbo.kernels.activations import Activation, ActivationSpec, as_activation

PARAMETERIZATIONS: tuple[str, ...] = ("ntk", "standard")

FloatOrSeq = Union[float, Sequence[float]]
OptFloatOrSeq = Union[None, float, Sequence[Optional[float]]]


@dataclasses.dataclass(frozen=True)
class MLPSpec:
    """A validated fully-connected architecture (hashable; use :func:`mlp_spec` to build it).

    Attributes:
      depth: number of hidden layers, ``>= 1``.
      width: hidden width, ``>= 1``.
      activation: the hidden-layer nonlinearity.
      W_std: per-Dense-layer weight scales, length ``depth + 1`` (readout last).
      b_std: per-Dense-layer bias scales (``None``: no bias), length ``depth + 1``.
      parameterization: ``"ntk"`` or ``"standard"``.
    """

    depth: int
    width: int
    activation: Activation
    W_std: tuple[float, ...]
    b_std: tuple[Optional[float], ...]
    parameterization: str

    @property
    def num_dense(self) -> int:
        """Number of Dense layers, ``depth + 1``."""
        return self.depth + 1


def _per_layer(value, n: int, name: str, allow_none: bool) -> tuple:
    if value is None or isinstance(value, (int, float)) or _is_scalar_array(value):
        values = (value,) * n
    else:
        try:
            values = tuple(value)
        except TypeError:
            raise ValueError(
                f"{name}: expected a float or a sequence of {n} floats, got {value!r}."
            ) from None
        if len(values) != n:
            raise ValueError(
                f"{name}: expected one value per Dense layer (depth + 1 = {n}), got {len(values)}."
            )
    out = []
    for v in values:
        if v is None:
            if not allow_none:
                raise ValueError(f"{name}: must be a float, got None.")
            out.append(None)
            continue
        try:
            v = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"{name}: must be a float, got {v!r}.") from None
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"{name}: must be finite and >= 0, got {v}.")
        out.append(v)
    return tuple(out)


def _positive_int(value, name: str, what: str) -> int:
    try:
        if isinstance(value, bool):
            raise TypeError
        value_int = operator.index(value)
    except TypeError:
        raise ValueError(f"{name}: {what} must be an int >= 1, got {value!r}.") from None
    if value_int < 1:
        raise ValueError(f"{name}: {what} must be an int >= 1, got {value_int}.")
    return value_int


def _is_scalar_array(value) -> bool:
    shape = getattr(value, "shape", None)
    return shape is not None and tuple(shape) == ()


def mlp_spec(
    depth: int,
    width: int,
    activation: ActivationSpec = "relu",
    W_std: FloatOrSeq = 1.0,
    b_std: OptFloatOrSeq = None,
    parameterization: str = "ntk",
) -> MLPSpec:
    """Validates the arguments shared by ``ntkbo.nets.MLP`` and ``ntkbo.kernels.mlp``.

    Raises:
      ValueError: naming the offending argument: ``depth < 1``, ``width < 1``, unknown
        ``activation`` or ``parameterization``, negative/non-finite or wrongly-sized ``W_std``/``b_std``.
    """
    depth = _positive_int(depth, "depth", "the number of hidden layers")
    width = _positive_int(width, "width", "the hidden width")
    if not isinstance(parameterization, str) or parameterization.lower() not in PARAMETERIZATIONS:
        raise ValueError(
            f"parameterization: expected one of {', '.join(PARAMETERIZATIONS)}, got {parameterization!r}."
        )
    act = as_activation(activation)
    n = depth + 1
    return MLPSpec(
        depth=depth,
        width=width,
        activation=act,
        W_std=_per_layer(W_std, n, "W_std", allow_none=False),
        b_std=_per_layer(b_std, n, "b_std", allow_none=True),
        parameterization=parameterization.lower(),
    )
