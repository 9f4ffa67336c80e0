"""README.md's code: every ```python block runs, and the test command is CI's.

The python blocks run in order in one namespace (later blocks use the names of earlier ones), as
written: the README keeps its budgets, seeds and widths small enough for this (budget 20, 4 seeds,
width 64). Bash blocks are not run. A block that raises fails the test and is named in the
failure; checked by renaming ``ntkbo.best_so_far`` in a block, which fails it.
"""

import pathlib

import markdown_blocks
from markdown_blocks import run_python_blocks

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def blocks(lang: str) -> list[str]:
    """The bodies of README.md's fenced blocks of ``lang``, in order."""
    return markdown_blocks.blocks(README, lang)


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the ask/tell block writes study.msgpack
    code = blocks("python")
    assert len(code) >= 3, "README.md lost its python examples"
    run_python_blocks(README, "README.md", {"__name__": "readme"})


def test_readme_test_command_is_ci():
    """The README's test command is the command .ci/run's first lane runs."""
    ci = (ROOT / ".ci" / "test-command.sh").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci in [b.strip() for b in blocks("bash")]
