"""README.md stays true: CI runs its test command, and its Python example runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_blocks(language: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def test_ci_runs_the_readme_test_command() -> None:
    text = (ROOT / "README.md").read_text()
    marked = text.split("<!-- test-command", 1)[1]
    command = re.search(r"```bash\n(.*?)\n```", marked, re.S)
    assert command is not None
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert command.group(1).strip() in ci_lines
    assert "torch==2.13.0" in command.group(1)
    assert command.group(1).index("torch==2.13.0") < command.group(1).index("pip install -e")
    # the checks CONTRIBUTING names run, and run before the tests
    steps = [step.strip() for step in command.group(1).split("&&")]
    checks = [".venv/bin/ruff check .", ".venv/bin/mypy", ".venv/bin/lint-imports"]
    assert all(check in steps for check in checks), steps
    assert max(steps.index(check) for check in checks) < steps.index(".venv/bin/pytest")


def test_readme_has_exactly_two_setup_commands() -> None:
    setup = [b for b in readme_blocks("bash") if b.startswith("python3 -m venv")]
    assert len(setup) == 2
    assert setup[0].strip().endswith("nous-memory serve")
    assert setup[1].strip().endswith("pytest")
