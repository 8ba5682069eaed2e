"""README.md and docs/ stay true: CI runs README's test command, every code block of a
runnable language is run by a named test, and README stays a front door."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^( *)```([\w{}-]*)\n(.*?)^\1```", re.S | re.M)

# Which test runs the code blocks of each language, page by page. A block in a language
# or page not listed here fails test_every_code_block_has_a_runner: an example nobody runs
# goes stale.
RUNNERS = {
    "python": "tests/integration/test_readme_example.py (each block, as a program or "
              "inside an open store)",
    "py": "tests/integration/test_readme_example.py (against ScriptedLLMServer)",
    "python3": "tests/integration/test_client.py (against a served instance)",
    "ts": "tests/integration/test_typescript_client.py (the typechecked examples/chat.ts)",
    "json": "test_json_blocks_parse below",
    "sql": "tests/unit/test_scaling_doc.py (the generated Citus script)",
    **dict.fromkeys(("bash", "sh", "shell", "console"),
                    "in docs/: tests/integration/test_doc_shell.py (each command run, or "
                    "listed in tests/unit/doc_shell.py's NOT_RUN with its reason); in "
                    "README: the set-up commands, checked below"),
}
# Shell blocks that another test also reads, marked where they stand.
SHELL_RUN = {
    "operations/export-import.md": "tests/integration/test_cli_portability.py runs the "
                                   "nous-memory lines of the marked block",
}
# plain text and the directives of the docs build: not examples
NOT_CODE = {"", "text", "{toctree}", "{eval-rst}", "{include}", "{settings-table}",
            "{jobs-table}"}


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts)]


def blocks(path: Path, language: str) -> list[str]:
    """The code blocks of one language on one page, dedented as written."""
    found = []
    for indent, lang, body in FENCE.findall(path.read_text()):
        if lang == language:
            found.append(re.sub(rf"(?m)^{indent}", "", body) if indent else body)
    return found


def doc_blocks(page: str, language: str) -> list[str]:
    """Code blocks of a docs page, named relative to docs/ (``surfaces/python.md``)."""
    return blocks(DOCS / page, language)


def readme_blocks(language: str) -> list[str]:
    return blocks(ROOT / "README.md", language)


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


def test_the_readme_is_a_front_door() -> None:
    """Short, one example, and a link to a docs page for every face."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    assert len(readme_blocks("python")) == 1
    linked = set(re.findall(r"\]\(([^)#:]+)", text))  # relative links, not URLs
    assert any(target.startswith("docs/") for target in linked), "README links no docs page"
    for target in linked:
        assert (ROOT / target).is_file(), f"README links {target}, which does not exist"
    faces = text.split("## The faces", 1)[1].split("\n## ", 1)[0]
    for face in ("Python", "REST", "Command line", "MCP", "OpenAI Agents", "Hermes",
                 "LangChain", "TypeScript"):
        assert face in faces, face


def test_every_code_block_has_a_runner() -> None:
    for path in pages():
        for _, language, _ in FENCE.findall(path.read_text()):
            assert language in RUNNERS or language in NOT_CODE, (
                f"{path.relative_to(ROOT)}: a ```{language} block that no test runs")


def test_the_runners_find_their_blocks() -> None:
    """Each marked shell block is where its test looks for it."""
    for page in SHELL_RUN:
        assert "runs the nous-memory lines of this block -->" in (DOCS / page).read_text()


def test_json_blocks_parse() -> None:
    found = [(path, block) for path in pages() for block in blocks(path, "json")]
    assert found
    for path, block in found:
        assert isinstance(json.loads(block), dict), path
