"""Tables the docs take from the code, so they cannot drift from it.

``settings-table`` lists every ``Settings`` field: its environment variable, type,
default and the comment written beside it in ``config.py``. ``jobs-table`` lists the job
registry: each job's name, default schedule, schedule setting and description. A field
without a comment is a build warning, which ``-W`` turns into an error.
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import MISSING, fields
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.application import Sphinx
from sphinx.util import logging

log = logging.getLogger(__name__)


def settings_comments() -> dict[str, str]:
    """Each ``Settings`` field's comment: its own trailing one, else the comment block
    above the group of fields it belongs to (fields with no blank line between them)."""
    from nous_memory import config

    source = inspect.getsource(config.Settings)
    names = {f.name for f in fields(config.Settings)}
    body = ast.parse(source).body[0]
    assert isinstance(body, ast.ClassDef)
    lines = source.splitlines()
    found: dict[str, str] = {}
    for node in body.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and node.target.id in names):
            continue
        line = lines[node.lineno - 1]
        trailing = re.search(r"#\s*(.*)$", line.split("=", 1)[-1])
        if trailing:
            found[node.target.id] = trailing.group(1)
            continue
        # walk up over fields of the same group to the comment block above it
        row = node.lineno - 2
        while row >= 0 and re.match(r"\s+\w+: .*", lines[row]):
            row -= 1
        block: list[str] = []
        while row >= 0 and lines[row].strip().startswith("#"):
            block.insert(0, lines[row].strip().lstrip("#").strip())
            row -= 1
        if block:
            found[node.target.id] = " ".join(block)
    return found


def _default(field: Any) -> str:
    if field.default is not MISSING:
        return "unset" if field.default is None else repr(field.default)
    factory = field.default_factory
    return f"{factory.__name__}()" if factory is not MISSING else "required"


def _type(field: Any) -> str:
    return str(field.type).replace("typing.", "")


def _table(header: list[str], rows: list[list[nodes.Node]]) -> nodes.table:
    table = nodes.table()
    group = nodes.tgroup(cols=len(header))
    table += group
    for _ in header:
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    group += head
    head += _row([nodes.Text(title) for title in header])
    body = nodes.tbody()
    group += body
    for row in rows:
        body += _row(row)
    return table


def _row(cells: list[nodes.Node]) -> nodes.row:
    row = nodes.row()
    for cell in cells:
        entry = nodes.entry()
        paragraph = nodes.paragraph()
        paragraph += cell
        entry += paragraph
        row += entry
    return row


class SettingsTable(Directive):
    """Every setting, from ``nous_memory.config.Settings``."""

    def run(self) -> list[nodes.Node]:
        from nous_memory.config import ENV_PREFIX, Settings

        comments = settings_comments()
        rows: list[list[nodes.Node]] = []
        for field in fields(Settings):
            text = comments.get(field.name)
            if text is None:
                log.warning("Settings.%s has no comment in config.py to document it",
                            field.name, location=self.state.document.current_source)
                text = ""
            rows.append([nodes.literal(text=ENV_PREFIX + field.name.upper()),
                         nodes.literal(text=_type(field)),
                         nodes.literal(text=_default(field)), nodes.Text(text)])
        return [_table(["variable", "type", "default", "meaning"], rows)]


class JobsTable(Directive):
    """Every maintenance job, from the registry in ``jobs.registry``."""

    def run(self) -> list[nodes.Node]:
        from jobs.registry import JOBS
        from nous_memory.config import ENV_PREFIX, Settings

        defaults = Settings()
        rows: list[list[nodes.Node]] = []
        for job in JOBS.values():
            cron = job.cron(defaults)
            rows.append([nodes.literal(text=job.name),
                         nodes.literal(text=cron) if cron else nodes.Text("off"),
                         nodes.literal(text=f"{ENV_PREFIX}JOB_{job.name.upper()}_CRON"),
                         nodes.Text(job.description)])
        return [_table(["job", "default schedule (UTC)", "schedule setting", "does"], rows)]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("settings-table", SettingsTable)
    app.add_directive("jobs-table", JobsTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
