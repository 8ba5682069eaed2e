"""The task registry: each queued task named once (its place in the flow:
``test_pipeline_map.py``)."""

from __future__ import annotations

import re
from pathlib import Path

from nous_memory.work.tasks import Task

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = [ROOT / "nous_memory", ROOT / "jobs"]


def test_each_task_name_is_written_once_in_the_product() -> None:
    """Code and SQL refer to ``Task`` members (SQL takes them as parameters), so a
    rename or a new task has one place to change."""
    sources = [p for root in PRODUCT for p in root.rglob("*")
               if p.suffix in {".py", ".sql"} and "__pycache__" not in p.parts]
    for task in Task:
        literal = re.compile(rf"""['"]{task.value}['"]""")
        places = [f"{p.relative_to(ROOT)}:{n}" for p in sources
                  for n, line in enumerate(p.read_text().splitlines(), 1)
                  if literal.search(line)]
        assert places == ["nous_memory/work/tasks.py:" + str(_line_of(task))], (task, places)


def _line_of(task: Task) -> int:
    lines = (ROOT / "nous_memory" / "work" / "tasks.py").read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if f'= "{task.value}"' in line)
