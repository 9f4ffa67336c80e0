"""The tutorials (docs/tutorials/NN-name.md): every ```python block of a page runs, in order, in
one namespace, in a temporary working directory (some pages write files), at the small scale the
pages are written at.

Mutation this catches: rename an API name a page uses (``ntkbo.ask_tell.ask_trial`` ->
``ask_one`` in 03-ask-tell.md, or ``result.best_x`` -> ``result.bestx`` in 01-jax-objective.md)
and that page's test fails with "docs/tutorials/<page> python block <i> raised AttributeError".
A page added to docs/tutorials/ but left out of mkdocs.yml's nav fails
``test_nav_lists_every_tutorial``. (Both checked by hand, 2026-11-27.)

Cost (2026-11-27, 2 cores shared with another test run, load average ~7.5; float64 from
conftest): the whole file 101 s, per page 2.5 (02) to 21.6 s (04), compilation dominating;
roughly half that on an idle machine. Keep pages at 10-20 evaluations, 2-3 seeds, width 32.
"""

import pathlib
import re

import pytest
from markdown_blocks import blocks, run_python_blocks

ROOT = pathlib.Path(__file__).resolve().parent.parent
TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("[0-9][0-9]-*.md"))


python_blocks = blocks


def test_tutorials_exist():
    assert TUTORIALS
    assert all(python_blocks(p) for p in TUTORIALS), "a tutorial page without a python block"


@pytest.mark.parametrize("page", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_python_blocks_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_python_blocks(page, f"docs/tutorials/{page.name}",
                      {"__name__": f"tutorial_{page.stem.replace('-', '_')}"})


def test_nav_lists_every_tutorial():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r"tutorials/([0-9][0-9]-[\w-]+\.md)", nav))
    missing = sorted({p.name for p in TUTORIALS} - listed)
    assert not missing, f"mkdocs.yml's nav does not list {missing}"
