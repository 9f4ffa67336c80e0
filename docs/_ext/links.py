"""An mkdocs hook (mkdocs.yml, ``hooks``): a relative link that stays inside docs/ must name a file
of the site, else a warning (fatal under ``mkdocs build --strict``).

mkdocs.yml sets ``validation.links.not_found`` to ``info`` because some pages link to repository
files outside docs/ (``../benchmarks/README.md``), which are not part of the site; without this hook
a link to a missing page would then pass the strict build too. Links that leave docs/ are left to
mkdocs (reported at ``info``). Anchors are checked by mkdocs itself (``validation.links.anchors``).
"""

from __future__ import annotations

import logging
import posixpath
import re

log = logging.getLogger("mkdocs.hooks.links")

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"``.*?``|`[^`\n]*`")
_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def broken_links(markdown: str, src_uri: str, site_files: set[str]) -> list[str]:
    """The relative link targets of ``markdown`` (a page at ``src_uri``, relative to docs/) that
    stay inside docs/ and name no file of ``site_files``; code blocks and spans are skipped."""
    text = _CODE.sub("", _FENCE.sub("", markdown))
    bad = []
    for target in _LINK.findall(text):
        path = target.split("#", 1)[0].split("?", 1)[0]
        if not path or _SCHEME.match(target) or target.startswith("/"):
            continue  # an anchor on the page, a URL, or an absolute link (mkdocs checks those)
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(src_uri), path))
        if resolved == ".." or resolved.startswith("../"):
            continue  # leaves docs/: a repository file, not a page (module docstring)
        if resolved not in site_files and posixpath.join(resolved, "index.md") not in site_files:
            bad.append(target)
    return bad


def on_page_markdown(markdown, page, config, files, **kwargs):
    site_files = {f.src_uri for f in files}
    for target in broken_links(markdown, page.file.src_uri, site_files):
        log.warning("Doc file '%s' links to '%s', which is no file of the site",
                    page.file.src_uri, target)
    return markdown
