"""The docs site's pages (docs/, mkdocs.yml): what can be checked without mkdocs.

- Every ```python block of the user guide (docs/guide/*.md) runs: the blocks of one page in order,
  in one namespace, as written (small budgets, random search, so the pages run in seconds).
- docs/index.md's python blocks are README.md's (test_readme.py runs those).
- docs/algorithms/index.md lists every registered algorithm (``ntkbo.algorithms.names()``).
- The hook docs/_ext/links.py finds a broken link between pages and ignores links that leave docs/.

``mkdocs build --strict`` itself (API pages, anchors, the nav) is .ci/run's third lane.
"""

import importlib.util
import pathlib
import re

import pytest
from markdown_blocks import blocks, run_python_blocks

import ntkbo

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


python_blocks = blocks


GUIDE = sorted((DOCS / "guide").glob("*.md"))


def test_guide_has_pages():
    assert {p.stem for p in GUIDE} >= {"state", "keys", "signs", "precision", "failures", "vmap"}


@pytest.mark.parametrize("page", GUIDE, ids=lambda p: p.name)
def test_guide_python_blocks_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_python_blocks(page, f"docs/guide/{page.name}", {"__name__": f"docs_{page.stem}"})


def test_index_python_blocks_are_the_readmes():
    readme = python_blocks(ROOT / "README.md")
    index = python_blocks(DOCS / "index.md")
    assert index and all(block in readme for block in index)


def test_algorithms_page_lists_every_registered_name():
    text = (DOCS / "algorithms" / "index.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"`([a-z0-9_]+)`", text))
    missing = sorted(set(ntkbo.algorithms.names()) - listed)
    assert not missing, f"docs/algorithms/index.md does not list {missing}"


def test_links_hook():
    spec = importlib.util.spec_from_file_location("docs_links", DOCS / "_ext" / "links.py")
    links = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(links)
    files = {"index.md", "results.md", "guide/state.md", "api/index.md"}
    text = ("[a](guide/state.md#x) [b](../benchmarks/README.md) [c](missing.md) [d](api/) "
            "[e](https://example.org) [f](#here) `[g](nope.md)`\n```\n[h](nope.md)\n```\n")
    assert links.broken_links(text, "index.md", files) == ["missing.md"]
    assert links.broken_links("[a](../results.md) [b](state.md) [c](../guide/no.md)",
                              "guide/keys.md", files) == ["../guide/no.md"]
