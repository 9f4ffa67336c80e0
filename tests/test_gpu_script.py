"""``benchmarks/gpu.py``, the prepared run for a borrowed GPU machine, at its CPU-sized ``tiny``
scale: every part runs (or is recorded as skipped with a reason), the report is written, and the
correctness part passes. The GPU sizes are not run here (no accelerator); this keeps a script
that is only ever run on a lent machine, with minutes to spare, from failing there on plumbing.

55-71 s on the 2-core machine at load averages 4.1-4.6 (other jobs running; about 45 CPU
seconds): six fresh processes, each importing jax, plus pytest and one theory check in
subprocesses, within the run's own 120 s budget."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARTS = ("environment", "correctness", "seeds", "step", "botorch", "theory")


def _torch_and_botorch_import() -> bool:
    try:
        import botorch  # noqa: F401
        import torch  # noqa: F401
    except Exception:  # noqa: BLE001
        return False
    return True


@pytest.mark.slow
def test_tiny_scale_writes_a_report_with_every_part(tmp_path):
    out = tmp_path / "gpu"
    env = dict(os.environ, PYTHONPATH=ROOT, JAX_PLATFORMS="cpu")
    # conftest.py turns on float64 for the tests; the script must run as it runs on the GPU
    # machine, with JAX's defaults (float32).
    env.pop("JAX_ENABLE_X64", None)
    proc = subprocess.run(
        [sys.executable, "benchmarks/gpu.py", "--scale", "tiny", "--out", str(out),
         "--budget-s", "120"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "[gpu.py] done" in proc.stdout  # progress lines on stdout
    assert (out / "report.md").is_file() and (out / "report.json").is_file()
    report = json.loads((out / "report.json").read_text())
    assert set(report["parts"]) == set(PARTS)
    for name, part in report["parts"].items():
        assert part["status"] in ("ok", "failed", "skipped", "timeout"), (name, part)
        if part["status"] != "ok":
            assert part.get("message"), (name, part)  # a failure or a skip says why

    env_part = report["parts"]["environment"]
    assert env_part["status"] == "ok" and env_part["platform"] == "cpu", env_part
    assert env_part["x64"] is False

    correctness = report["parts"]["correctness"]
    assert correctness["status"] == "ok", correctness
    assert correctness["verdict"] == "pass", correctness
    assert correctness["pytest"]["counts"]["passed"] >= 1
    gp_rows = [r for r in correctness["gp_rows"] if r["path"] == "ntkbo.gp"]
    assert gp_rows and all(r["max_mean_error"] <= 1e-3 for r in gp_rows), gp_rows

    # The study runner's cell beside the vmap cells, at the largest seed count they ran: on CPU
    # one device and one seed per call (default_block).
    seeds = report["parts"]["seeds"]
    assert seeds["status"] == "ok", seeds
    for row in seeds["rows"]:
        r = row["runner"]
        assert r["status"] == "ok" and r["block"] == 1 and r["devices"] == 1, r
        assert r["seeds"] == max(c["seeds"] for c in row["vmap"] if c["status"] == "ok"), r

    if not _torch_and_botorch_import():
        botorch = report["parts"]["botorch"]
        assert botorch["status"] == "skipped" and "import" in botorch["message"], botorch

    md = (out / "report.md").read_text()
    for title in ("1. Environment", "2. Correctness", "3. Seeds per second", "4. Step time",
                  "5. Theory checks"):
        assert title in md
