"""``benchmarks/compile.py`` at CI's tiny scale (``--quick``: random search, budget 8), so that the
benchmark cannot rot, and the cache's promise checked on its numbers: a second process running the
same script compiles (almost) nothing."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_quick_run_reports_every_case(tmp_path):
    """Every case runs in its own process and reports its stages. Mutations caught: a case that
    errors (the script exits 1 and the row holds ``error``); the library's runs not cached by
    default (the second process's compile seconds equal the first's, not under 1 s and a
    fraction of them)."""
    out = tmp_path / "compile.json"
    env = {**os.environ, "NTKBO_CACHE_DIR": str(tmp_path / "unused")}
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "compile.py"),
                           "--quick", "--json", str(out)], capture_output=True, text=True,
                          timeout=600, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = {row["case"]: row for row in json.loads(out.read_text())["rows"]}
    assert set(rows) == {"first", "parts", "vmap", "asktell", "job (1st process)",
                         "job (2nd process)"}
    assert not any("error" in r for r in rows.values())
    first = rows["first"]
    assert first["segments"] == 1 and first["compile"] > 0 and first["program_bytes"] > 0
    parts = rows["parts"]["parts"]
    # the whole program holds its parts: more HLO instructions than any one of them
    assert parts["minimize"]["hlo_instructions"] > max(parts["suggest"]["hlo_instructions"],
                                                       parts["update"]["hlo_instructions"])
    one, two = rows["job (1st process)"], rows["job (2nd process)"]
    assert two["compile"] < 1.0 and two["compile"] < 0.5 * one["compile"]
