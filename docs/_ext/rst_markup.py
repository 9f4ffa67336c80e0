"""A Griffe extension for the API pages: ntkbo's docstrings use reST markup that Markdown does not
know; rewrite it before the Google-style parser and Markdown see it.

- ``:func:`name```, ``:class:``, ``:data:``, ``:mod:``, ... (Sphinx roles) -> ```name``` (inline code;
  a role's target is not a full dotted path, so it is not turned into a link);
- a paragraph ending in ``::`` that introduces an indented literal block -> ``:`` (the indented block
  stays an indented Markdown code block), and a line of ``::`` alone is dropped;
- a simple table (``====  ====`` borders) -> a fenced text block, so that its columns stay aligned.

``double backticks`` need nothing: they are a Markdown code span as they are. Loaded from mkdocs.yml
(``plugins.mkdocstrings.handlers.python.options.extensions``); the source files are not changed.
"""

from __future__ import annotations

import re

import griffe

_ROLE = re.compile(r":(?:func|class|data|mod|meth|attr|obj|exc|const|py:\w+):`~?([^`]+)`")
_LITERAL = re.compile(r"(\S)::$", re.MULTILINE)
_BARE_LITERAL = re.compile(r"^[ \t]*::[ \t]*$", re.MULTILINE)
_BORDER = re.compile(r"^\s*=+(\s+=+)+\s*$")


def _fence_tables(text: str) -> str:
    """Wraps each simple table, from its first border line to the border line that ends it (one
    followed by a blank line or the end of the text), in a fenced text block."""
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        if lines[i].lstrip().startswith("```"):  # a fenced block (an earlier pass's): as it is
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith("```"):
                j += 1
            out += lines[i:j + 1]
            i = j + 1
            continue
        if not _BORDER.match(lines[i]):
            out.append(lines[i])
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not (_BORDER.match(lines[j]) and
                                      (j + 1 == len(lines) or not lines[j + 1].strip())):
            j += 1
        if j == len(lines):  # no closing border: leave the text as it is
            out.append(lines[i])
            i += 1
            continue
        indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
        out += ["", indent + "```text", *lines[i:j + 1], indent + "```", ""]
        i = j + 1
    return "\n".join(out)


def rewrite(text: str) -> str:
    """``text`` with Sphinx roles as code spans, ``::`` paragraph ends as ``:`` and simple tables
    fenced."""
    text = _ROLE.sub(lambda m: f"``{m.group(1)}``", text)
    text = _BARE_LITERAL.sub("", _LITERAL.sub(r"\1:", text))
    return _fence_tables(text)


class RstMarkup(griffe.Extension):
    """Rewrites every docstring's reST markup (module docstring); an alias shares its target's
    docstring, which is rewritten once, with the target."""

    def on_object(self, *, obj: griffe.Object, **kwargs) -> None:
        if not obj.is_alias and obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value)
