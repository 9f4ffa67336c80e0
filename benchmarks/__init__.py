"""Benchmark and study scripts (``python benchmarks/NAME.py``), importable as ``benchmarks.NAME``
from the repository root (the tests: pytest's ``pythonpath`` option in ``pyproject.toml``). Not
part of the installed package."""
