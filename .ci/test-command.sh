#!/usr/bin/env bash
# The README's test command (keep the two identical).
set -euo pipefail
python3 -m venv .venv && .venv/bin/pip install -q -e ".[test,plot,tasks,coco]" && .venv/bin/python -m pytest -m "not nt" -n 2 --dist loadfile -q
