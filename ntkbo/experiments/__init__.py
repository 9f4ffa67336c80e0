"""Experiments at scale: a declarative spec, sharded and distributed runs, atomic cell files.

::

    spec = ntkbo.experiments.Spec.from_toml("benchmarks/specs/neuralbo_synthetic.toml")
    ntkbo.experiments.run(spec, out="runs/neuralbo", scale="cpu")   # or: ntkbo bench SPEC --out DIR
    for path in ntkbo.experiments.list_cells("runs/neuralbo"):
        cell = ntkbo.experiments.read_cell(path)                     # x (S, B, d), f (S, B), meta, ...

- ``spec``: ``Spec`` (TOML or Python) -> ``Spec.resolve(scale)`` -> ``Cell`` list (algorithm x
  problem x dim, each with a ``cell_id`` and a ``digest``); scale presets ``smoke``, ``cpu``, ``full``.
- ``runner``: ``run``: each cell one compiled ``jax.vmap`` of ``ntkbo.minimize`` over its seeds,
  sharded over a ``jax.sharding.Mesh`` of the local devices; resumable; refuses a changed spec.
- ``distributed``: ``jax.distributed`` set-up for several processes sharing the cells.
- ``store``: the cell files (one atomic ``.npz`` per finished cell) and their schema.
- ``summary``: ``summary.npz``, per cell and seed the best-so-far curve, keys and wall time: what
  the reports read where the raw cells are not kept (``ntkbo summary DIR``).
"""

from ntkbo.experiments import distributed, runner, spec, store, summary
from ntkbo.experiments.runner import paired_keys, run, run_cell
from ntkbo.experiments.spec import SCALES, AlgorithmSpec, Cell, ProblemSpec, Scale, Spec
from ntkbo.experiments.store import CellRecord, list_cells, read_cell, write_cell
from ntkbo.experiments.summary import read_summary, write_summary

__all__ = [
    "SCALES", "AlgorithmSpec", "Cell", "CellRecord", "ProblemSpec", "Scale", "Spec", "distributed",
    "list_cells", "paired_keys", "read_cell", "read_summary", "run", "run_cell", "runner", "spec",
    "store", "summary", "write_cell", "write_summary",
]
