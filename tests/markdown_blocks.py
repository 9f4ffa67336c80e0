"""Fenced code blocks of Markdown pages, and running a page's python blocks (imported as
``markdown_blocks``: ``tests/`` is on ``sys.path`` under pytest, see ``nt_shim.py``)."""

import pathlib
import re


def blocks(path: pathlib.Path, lang: str = "python") -> list[str]:
    """The bodies of the fenced blocks of ``lang`` in ``path``, in order."""
    return re.findall(rf"^```{lang}\n(.*?)^```", pathlib.Path(path).read_text(encoding="utf-8"),
                      re.DOTALL | re.MULTILINE)


def run_python_blocks(path: pathlib.Path, label: str, namespace: dict | None = None) -> dict:
    """Executes the python blocks of ``path`` in order in one namespace; a block that raises
    fails with ``AssertionError`` naming ``label`` and the block's number."""
    namespace = {"__name__": "markdown_page"} if namespace is None else namespace
    for i, source in enumerate(blocks(path), 1):
        try:
            exec(compile(source, f"{label} python block {i}", "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"{label} python block {i} raised "
                                 f"{type(e).__name__}: {e}\n{source}") from e
    return namespace
