"""Sphinx configuration: Markdown pages (MyST), the API reference from docstrings, and
tables generated from the code (``_ext/nous_docs.py``); nothing is fetched at build or
read time."""

from __future__ import annotations

import sys
from pathlib import Path

from pygments.lexers.sql import PostgresLexer
from sphinx.application import Sphinx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))

# The modules the API reference documents, imported here as they are in use: autodoc
# re-imports a module it loads itself with typing.TYPE_CHECKING set, which LangChain's
# pydantic models do not survive.
import importlib  # noqa: E402

for _module in ("nous_memory.store", "nous_memory.config", "nous_memory.client",
                "nous_memory.tools", "nous_memory.testing",
                "nous_memory.integrations.openai_agents", "nous_memory.integrations.langchain",
                "nous_memory.integrations.langgraph", "nous_memory.integrations.hermes"):
    importlib.import_module(_module)

project = "nous-memory"
author = "nous-memory contributors"
copyright = "nous-memory contributors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "nous_docs",
]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext"]
# links between pages may name a section (page.md#the-section): anchors for headings up
# to level 3, so a link to a missing one is a warning, and -W makes it an error
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
suppress_warnings: list[str] = []

html_theme = "alabaster"
html_theme_options = {"nosidebar": False, "fixed_sidebar": False}
html_sidebars = {"**": ["about.html", "navigation.html", "searchbox.html"]}
html_static_path: list[str] = []
html_show_sourcelink = False
html_show_sphinx = False
html_copy_source = False

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
# the reference says what this project's code does, not what a base class it implements says
autodoc_inherit_docstrings = False
autodoc_default_options = {"members": True, "undoc-members": False}


def setup(app: Sphinx) -> None:
    """Read ``sql`` blocks as PostgreSQL's dialect (dollar quoting, ``format``)."""
    app.add_lexer("sql", PostgresLexer)
