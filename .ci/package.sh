#!/usr/bin/env bash
# The package, as a user gets it (.ci/run's lane 5; runs alone too: `bash .ci/package.sh`).
# `python -m build` makes the sdist and, from the sdist, the wheel (so the sdist is complete
# enough to build); `twine check --strict` reads both; the wheel must ship every .py file of
# ntkbo/ and theory_checks/ and ntkbo/py.typed. Then the wheel, with the `plot` extra the demo's
# figure needs, goes into a fresh virtual environment outside the repository, and from an empty
# folder outside it, with PYTHONPATH unset, run: the README's main command at a small scale
# (`ntkbo demo --budget 10 --seeds 2`: the three algorithms, their progress bars, report and
# plot), and `python -m theory_checks --help`. Everything lives in one temporary folder, removed at
# the end; the compilation cache too (NTKBO_CACHE_DIR), so the demo compiles as a new user's does.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
PY=${PYTHON:-python3}
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_PROGRESS_BAR=off
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
t0=$(date +%s)

"$PY" -m venv "$work/tools"
"$work/tools/bin/pip" install -q build twine
"$work/tools/bin/python" -m build -q -o "$work/dist" . > "$work/build.log" 2>&1 \
  || { cat "$work/build.log"; exit 1; }
"$work/tools/bin/twine" check --strict "$work/dist"/*
wheel=$(ls "$work/dist"/*.whl)
"$work/tools/bin/python" - "$wheel" "$repo" <<'EOF'
import os, sys, zipfile
wheel, repo = sys.argv[1:]
shipped = set(zipfile.ZipFile(wheel).namelist())
wanted = {"ntkbo/py.typed"}
for top in ("ntkbo", "theory_checks"):
    for folder, dirs, names in os.walk(os.path.join(repo, top)):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        wanted |= {os.path.relpath(os.path.join(folder, n), repo) for n in names if n.endswith(".py")}
missing = sorted(wanted - shipped)
if missing:
    sys.exit(f"the wheel lacks {len(missing)} file(s): {', '.join(missing[:10])}")
print(f"{os.path.basename(wheel)}: all {len(wanted)} .py files of ntkbo/ and theory_checks/ and py.typed")
EOF
echo "package: build and checks took $(( $(date +%s) - t0 )) s"

t1=$(date +%s)
"$PY" -m venv "$work/venv"
# --no-compile: pip would byte-compile every installed module (jax, scipy, matplotlib: minutes of
# CPU here); Python compiles the few the demo imports when it imports them.
"$work/venv/bin/pip" install -q --no-compile "$wheel[plot]"
echo "package: install took $(( $(date +%s) - t1 )) s"

t2=$(date +%s)
mkdir "$work/run"
cd "$work/run"
export NTKBO_CACHE_DIR="$work/cache"
unset PYTHONPATH
"$work/venv/bin/python" -c "
import ntkbo, theory_checks
for m in (ntkbo, theory_checks):
    assert m.__file__.startswith('$work/venv/'), f'{m.__name__} imported from {m.__file__}'
"
"$work/venv/bin/ntkbo" demo --budget 10 --seeds 2 --out demo
test -s demo/report.md && test -s demo/curves_branin.png
"$work/venv/bin/python" -m theory_checks --help > /dev/null
echo "package: demo and theory_checks --help took $(( $(date +%s) - t2 )) s"
