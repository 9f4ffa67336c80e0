"""Experiments at scale: a declarative spec, sharded and distributed runs, atomic cell files.

``store`` reads and writes the cell files (one ``.npz`` per finished cell).
"""

from ntkbo.experiments import store
from ntkbo.experiments.store import CellRecord, list_cells, read_cell, write_cell

__all__ = ["CellRecord", "list_cells", "read_cell", "store", "write_cell"]
