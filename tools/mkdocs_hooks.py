"""MkDocs hook for the documentation site (``mkdocs.yml``): the docstrings' Sphinx roles become links or plain code.

The package's docstrings name other objects as ``:func:`name```, ``:class:`~package.module.Name``` or
``:data:`NAME```. mkdocstrings renders the role as text before a code span; this hook drops the role, shows
``~a.b.Name`` as ``Name`` (Sphinx's reading of the tilde), and hands every dotted name to mkdocs-autorefs, which
links it to its entry in the API reference where there is one (``dualpath_plan.NAME`` is
``dualpath_plan.api.NAME``) and leaves it as plain code where there is none.
"""

from __future__ import annotations

import re

from dualpath_plan import __all__ as API

_ROLE = re.compile(r":(?:func|class|data|meth|attr|mod|obj|exc):<code>(~?)([\w.]+)</code>")


def _link(match: re.Match) -> str:
    tilde, name = match.groups()
    shown = name.rpartition(".")[2] if tilde else name
    if "." not in name:
        return f"<code>{shown}</code>"
    package, _, short = name.partition(".")
    if package == "dualpath_plan" and short in API:  # dp.NAME is dualpath_plan.api.NAME, loaded on first use
        name = f"dualpath_plan.api.{short}"
    return f'<autoref identifier="{name}" optional><code>{shown}</code></autoref>'


def on_page_content(html: str, **kwargs) -> str:
    """The page's HTML with every ``:role:`` before a code span turned into a link (or plain code)."""
    return _ROLE.sub(_link, html)
