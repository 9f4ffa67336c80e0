"""Device-memory budget of the checks: chunked maps, per-stage peak estimates, measured peaks.

Every check maps a function over many independent items (networks, ensemble members, BO seeds).
Vmapped all at once in float64 the ``gpu`` scale would need terabytes; instead each *stage* maps
over its items in chunks of ``chunk`` (:func:`chunked_map`: a sequential scan over chunks, each
chunk vmapped), so only ``chunk`` items' intermediates are alive at once and
the stage's peak is about

    peak = fixed + chunk * per_item        (bytes)

where ``per_item`` counts the arrays one item keeps alive at its peak (parameters, Jacobians,
gradients: written out in each check's ``memory``) and ``fixed`` what the stage holds for all items
(its inputs and stacked outputs). A check's ``memory(settings) -> list[Stage]`` computes these from
the scale's sizes, the dtype (:func:`itemsize`) and the chunk; ``settings["chunk"]`` is ``None``
(each stage takes the largest chunk whose peak fits ``FILL * BUDGET``, :func:`chunk_for`) or an int
(every stage's chunk, capped at its number of items: ``1`` is fully sequential). A smaller chunk
changes only the order of floating-point operations inside a batched matrix product, not the
values' definition (the draws are keyed per item), so results agree to rounding.

The estimates are checked against XLA's own accounting: :func:`chunked_map` compiles each stage
ahead of time and records ``compiled.memory_analysis()`` (arguments + outputs + temporaries, the
buffers XLA assigns for the whole program) in :data:`MEASURED`;
``tests/test_theory_checks_memory.py`` compares them at a small scale. ``python -m theory_checks
NAME --scale gpu`` prints the estimate before running and ``--dry-run`` prints every selected
check's estimate without running.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import jax
import jax.numpy as jnp

#: Device memory the ``gpu`` scale must fit (bytes): one 64 GB accelerator, or the share
#: ``$THEORY_CHECKS_MEMORY_GIB`` (GiB) that ``python -m theory_checks --jobs N`` gives each of its
#: ``N`` check processes sharing one device.
BUDGET = int(float(os.environ.get("THEORY_CHECKS_MEMORY_GIB", "64")) * 2**30)
#: Fraction of ``BUDGET`` a stage's estimate may use when its chunk is derived: the rest is left to
#: what the estimate does not count (XLA's workspace, cuBLAS/cuSOLVER scratch, fragmentation).
FILL = 0.75

#: ``(label, bytes)`` of every program :func:`chunked_map` compiled, in order: XLA's measured peak.
MEASURED: list = []


class Stage(NamedTuple):
    """One chunked map of a check: ``num`` items, ``chunk`` at a time, ``peak = fixed + chunk *
    per_item`` bytes."""

    label: str
    num: int
    chunk: int
    per_item: int
    fixed: int

    @property
    def peak(self) -> int:
        return int(self.fixed + self.chunk * self.per_item)


def itemsize() -> int:
    """Bytes of the default float (8 under ``jax_enable_x64``, which the checks use; else 4)."""
    return jnp.dtype(jnp.result_type(float)).itemsize


def mlp_params(depth: int, width: int, d: int, bias: bool = True) -> int:
    """Number of parameters of ``ntkbo.kernels.mlp(depth, width)`` on ``d`` inputs (readout 1)."""
    b = 1 if bias else 0
    return (d * width + b * width + (depth - 1) * (width * width + b * width)
            + width + b)


def chunk_for(num: int, per_item: int, fixed: int = 0, budget: float | None = None) -> int:
    """The largest chunk ``c <= num`` with ``fixed + c * per_item <= budget`` (default ``FILL *
    BUDGET``), at least 1 (a stage whose single item does not fit is reported by its estimate)."""
    budget = FILL * BUDGET if budget is None else budget
    room = (budget - fixed) // max(int(per_item), 1)
    return int(max(1, min(num, room)))


def stage(settings, label: str, num: int, per_item: int, fixed: int = 0) -> Stage:
    """The :class:`Stage` of ``num`` items with the chunk ``settings["chunk"]`` asks for (``None``:
    :func:`chunk_for`; an int: that, capped at ``num``)."""
    chunk = settings.get("chunk")
    chunk = chunk_for(num, per_item, fixed) if chunk is None else max(1, min(int(chunk), num))
    return Stage(label, int(num), int(chunk), int(per_item), int(fixed))


def find(stages, label: str) -> Stage:
    """The stage named ``label`` in a check's ``memory(settings)`` list."""
    for st in stages:
        if st.label == label:
            return st
    raise KeyError(f"no memory stage {label!r} (have {[s.label for s in stages]})")


def compiled_peak(compiled) -> int | None:
    """XLA's buffer total of a compiled program: arguments + outputs + temporaries - aliased
    (``None`` where the backend gives no ``memory_analysis``)."""
    try:
        m = compiled.memory_analysis()
    except (AttributeError, NotImplementedError, RuntimeError):
        return None
    if m is None:
        return None
    return int(m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes
               - m.alias_size_in_bytes)


def _map(fn, xs, chunk: int):
    """``jax.lax.map(fn, xs, batch_size=chunk)`` written out (a scan over the full chunks, each
    vmapped, then one vmap over the remainder; ``chunk >= num``: a single vmap), because
    ``lax.map``'s reshape of the outputs fails on zero-size leaves (NeuralBO's state)."""
    num = jax.tree_util.tree_leaves(xs)[0].shape[0]
    if chunk >= num:
        return jax.vmap(fn)(xs)
    tree_map = jax.tree_util.tree_map
    full, rest = divmod(num, chunk)
    head = tree_map(lambda v: v[: full * chunk].reshape((full, chunk) + v.shape[1:]), xs)
    _, out = jax.lax.scan(lambda carry, x: (carry, jax.vmap(fn)(x)), None, head)
    out = tree_map(lambda v: v.reshape((full * chunk,) + v.shape[2:]), out)
    if rest:
        tail = jax.vmap(fn)(tree_map(lambda v: v[full * chunk:], xs))
        out = tree_map(lambda a, b: jnp.concatenate([a, b]), out, tail)
    return out


def chunked_map(fn, xs, chunk: int, label: str = ""):
    """``fn`` mapped over the leading axis of ``xs``, ``chunk`` items at a time (:func:`_map`),
    compiled ahead of time; the compiled program's measured peak is appended to :data:`MEASURED`
    as ``(label, bytes)``. ``chunk >= len(xs)`` is one vmap over every item (the unchunked
    program)."""
    num = jax.tree_util.tree_leaves(xs)[0].shape[0]
    chunk = max(1, min(int(chunk), num))
    program = jax.jit(lambda v: _map(fn, v, chunk)).lower(xs).compile()
    MEASURED.append((label, compiled_peak(program)))
    return program(xs)


def gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB"


def describe(name: str, stages, budget: int | None = None) -> str:
    """One line per stage and the check's peak against ``budget`` (default :data:`BUDGET`), for
    the command line."""
    budget = BUDGET if budget is None else budget
    peak = max(st.peak for st in stages)
    lines = [f"memory estimate {name}: peak {gib(peak)} of {gib(budget)} "
             f"({'fits' if peak <= budget else 'DOES NOT FIT'})"]
    for st in stages:
        lines.append(f"   {st.label}: {st.num} items, chunk {st.chunk}: {gib(st.fixed)} + "
                     f"{st.chunk} x {gib(st.per_item)} = {gib(st.peak)}")
    return "\n".join(lines)
