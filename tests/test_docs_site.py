"""The docs site's link rule: `mkdocs build --strict` with mkdocs.yml's ``validation`` block fails
on a dead link. Runs in .ci/run's docs lane (lane 3), whose environment has mkdocs; lane 1's has
not, and skips this file."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("mkdocs", reason="the docs lane (lane 3 of .ci/run) installs mkdocs")
import yaml  # noqa: E402  (mkdocs depends on PyYAML)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _config() -> dict:
    with open(os.path.join(ROOT, "mkdocs.yml")) as fh:
        return yaml.safe_load(fh)


def _build(tmp_path, pages: dict[str, str]) -> subprocess.CompletedProcess:
    """Builds a site of ``pages`` (name -> Markdown) with mkdocs.yml's validation block, the
    built-in theme and no plugins, with ``--strict`` (not ``-q``: mkdocs counts only the warnings
    it logs, so ``--strict -q`` passes a dead link)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in pages.items():
        (docs / name).write_text(text)
    cfg = {"site_name": "links", "docs_dir": "docs", "theme": {"name": "mkdocs"},
           "plugins": [], "validation": _config()["validation"],
           "nav": [{n: n} for n in pages]}
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(cfg))
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


GOOD = "# Other\n\n## Part\n"


def test_valid_links_build(tmp_path):
    # the control for the test below: the same site with live links builds
    r = _build(tmp_path, {"index.md": "# Home\n\n[other](other.md), [part](other.md#part)\n",
                          "other.md": GOOD})
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("target", ["missing.md", "../benchmarks/README.md", "other.md#nowhere"])
def test_dead_link_fails_the_build(tmp_path, target):
    # Catches links.not_found (the first two cases) or links.anchors (the third) set to `info` in
    # mkdocs.yml, as not_found was before 2026-11-29, when 13 links to ../benchmarks/ passed the
    # strict build: the build then passes with the dead link (checked: all three cases fail).
    r = _build(tmp_path, {"index.md": f"# Home\n\n[dead]({target})\n", "other.md": GOOD})
    assert r.returncode != 0
    assert target.split("#")[-1] in r.stderr
