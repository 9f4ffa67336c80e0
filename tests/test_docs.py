"""The docs site's pages (docs/, mkdocs.yml): what can be checked without mkdocs.

- Every ```python block of the user guide (docs/guide/*.md) runs: the blocks of one page in order,
  in one namespace, as written (small budgets, random search, so the pages run in seconds).
- docs/index.md's python blocks are README.md's (test_readme.py runs those).
- docs/algorithms/index.md lists every registered algorithm (``ntkbo.algorithms.names()``), and
  every registered algorithm has a catalogue page with the sections every page has (paper,
  equation, defaults against the paper, cost per step, when to use it).
- mkdocs.yml's nav ends with the development log (Development), apart from the user pages.
- docs/studies.md has a section for every committed study (a benchmarks/results/ folder with a
  report.md and a spec in benchmarks/specs/), and docs/theory.md one for every check of
  ``theory_checks.CHECKS``.

``mkdocs build --strict`` itself (API pages, links, anchors, the nav) is .ci/run's third lane, with
tests/test_docs_site.py (a dead link fails that build).
"""

import json
import pathlib
import re

import pytest
import yaml  # PyYAML: a dependency of flax
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


#: The sections of every algorithm page, in this order (docs/algorithms/index.md describes them).
CATALOGUE_SECTIONS = ("Paper", "Equation", "Defaults and the paper", "Cost per step",
                      "When to use it", "API")


def catalogue_pages() -> dict:
    """``{page name: the registered names its "Registered names:" paragraph lists}`` for every
    page of docs/algorithms/ but the index."""
    pages = {}
    for page in sorted((DOCS / "algorithms").glob("*.md")):
        if page.name == "index.md":
            continue
        head = re.search(r"Registered names: (.*?)\. Module", page.read_text(encoding="utf-8"),
                         re.S)
        assert head, f"{page.name} has no 'Registered names: ... Module' paragraph"
        pages[page.name] = set(re.findall(r"`([a-z0-9_]+)`", head.group(1)))
    return pages


def sections(text: str) -> dict:
    """``{heading: body}`` of a page's level-2 sections."""
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def test_every_registered_algorithm_has_a_complete_catalogue_page():
    """Every name of ``ntkbo.algorithms.names()`` is listed by some page of docs/algorithms/,
    every such page has ``CATALOGUE_SECTIONS`` in order, its Paper section names each paper with
    a year and its arXiv id (or says it has none), its Equation section writes the rule out (a
    code block) with a numbered reference (eq., Eq., Algorithm, Lemma or Definition) or says
    that the paper has none (random search) or that it is not recorded (constrained EI), and its
    Cost section states a big-O. The names come
    from the registry, not from the pages. Mutations caught (checked): ``pinn_ntk_gp`` dropped
    from pinn_bo.md's names; the "Cost per step" heading removed from one page; an arXiv id
    removed from a paper entry."""
    pages = catalogue_pages()
    listed = set().union(*pages.values())
    missing = sorted(set(ntkbo.algorithms.names()) - listed)
    assert not missing, f"no page of docs/algorithms/ lists {missing}"
    assert listed <= set(ntkbo.algorithms.names()) | {"neural_linear"}, listed
    for name in pages:
        text = (DOCS / "algorithms" / name).read_text(encoding="utf-8")
        found = sections(text)
        assert tuple(h for h in found if h in CATALOGUE_SECTIONS) == CATALOGUE_SECTIONS, (
            name, list(found))
        paper = found["Paper"]
        entries = [e for e in re.split(r"\n- |\n\n", paper) if '"' in e]
        assert entries, (name, "no quoted paper title")
        for entry in entries:
            assert re.search(r"\b(19|20)\d\d\b", entry) or "no venue, year" in entry, (name, entry)
            assert re.search(r"arXiv:\d{4}\.\d{4,5}|no arXiv id", entry), (name, entry)
        assert "```" in found["Equation"], name
        assert re.search(r"\b(eqs?\.|Eqs?\.|Algorithm|Alg\.|Lemma|Definition) ?\(?\d"
                         r"|no numbered equation|equation number in either paper is not recorded",
                         found["Equation"]), name
        assert "O(" in found["Cost per step"], name
        assert "::: ntkbo.algorithms." in found["API"], name


def test_development_log_apart_from_the_user_pages():
    # Catches decisions.md, ci.md or status.md put back among the user sections (as "Decisions"
    # and "Results > Status" were before 2026-11-29), or a Development section before them.
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    titles = [next(iter(item)) if isinstance(item, dict) else item for item in nav]
    assert titles[-1] == "Development"
    dev = {next(iter(p.values())) for p in nav[-1]["Development"]}
    assert dev == {"decisions.md", "ci.md", "status.md"}

    def pages(entry):
        if isinstance(entry, str):
            return [entry]
        if isinstance(entry, list):
            return [p for e in entry for p in pages(e)]
        return [p for v in entry.values() for p in pages(v)]

    assert not dev & set(pages(nav[:-1]))


RESULTS = ROOT / "benchmarks" / "results"
SPECS = ROOT / "benchmarks" / "specs"


def committed_studies() -> list:
    """The folders of benchmarks/results/ that hold a study: a ``report.md`` and a spec
    ``benchmarks/specs/NAME.toml``, ``NAME`` being the folder's ``spec.json`` name (else the folder
    name without its ``-cpu``/``-full``/... scale suffix). Read from the files, not from the page."""
    studies = []
    for folder in sorted(p for p in RESULTS.iterdir() if p.is_dir()):
        if not (folder / "report.md").is_file():
            continue
        name = None
        if (folder / "spec.json").is_file():
            try:
                name = json.loads((folder / "spec.json").read_text(encoding="utf-8")).get("name")
            except (ValueError, AttributeError):
                name = None
        name = name or re.sub(r"-(smoke|cpu|full|gpu)$", "", folder.name)
        if (SPECS / f"{name}.toml").is_file():
            studies.append(folder.name)
    return studies


def headed_sections(text: str) -> dict:
    """``{name: body}`` for every backquoted name in a level-2 or level-3 heading, the body running
    to the next such heading (code blocks' ``#`` comment lines are not headings)."""
    prose = re.sub(r"^```.*?^```", lambda m: re.sub(r"(?m)^#", " #", m.group(0)), text,
                   flags=re.M | re.S)
    parts = re.split(r"^#{2,3} (.+)$", prose, flags=re.M)
    found = {}
    for i in range(1, len(parts), 2):
        for name in re.findall(r"`([^`]+)`", parts[i]):
            found[name] = parts[i + 1]
    return found


def test_studies_page_has_a_section_for_every_committed_study():
    """Every study folder (``committed_studies()``: report.md plus a matching spec) has a heading
    naming the folder in docs/studies.md, and that section names the folder's report.md (a
    repository path, not a page of the site: written as code, not as a link). The
    folders come from benchmarks/results/, not from the page, so a new committed study fails this
    test until the page covers it. Mutation caught (checked): the section of
    ``goucb_tuning-cpu`` deleted from docs/studies.md."""
    studies = committed_studies()
    assert len(studies) >= 8, studies        # the papers' eight cpu studies at least
    found = headed_sections((DOCS / "studies.md").read_text(encoding="utf-8"))
    missing = [s for s in studies if s not in found]
    assert not missing, f"docs/studies.md has no section for {missing}"
    unnamed = [s for s in studies if f"`benchmarks/results/{s}/report.md`" not in found[s]]
    assert not unnamed, f"docs/studies.md: these sections do not name their report.md: {unnamed}"


def test_theory_page_has_a_section_for_every_check():
    """Every check the command line runs (``theory_checks.CHECKS``, the registry
    ``python -m theory_checks`` reads) has a heading naming it in docs/theory.md, with its cpu
    verdict and its GPU status. Mutation caught (checked): the section of ``nngp_convergence``
    deleted from docs/theory.md."""
    import theory_checks

    found = headed_sections((DOCS / "theory.md").read_text(encoding="utf-8"))
    missing = [c for c in theory_checks.CHECKS if c not in found]
    assert not missing, f"docs/theory.md has no section for {missing}"
    incomplete = [c for c in theory_checks.CHECKS
                  if "Verdict at cpu scale" not in found[c] or "GPU" not in found[c]]
    assert not incomplete, f"docs/theory.md: no cpu verdict or GPU status for {incomplete}"
