"""Every command of the shell blocks in docs/ has its way into the suite, and every
``nous-memory`` line, in each of its forms, is one the real parser takes.

tests/integration/test_doc_shell.py runs them; this checks, without a database, that none
is left out: a new command that is neither run nor listed in ``NOT_RUN`` (with its
reason) fails here.
"""

from __future__ import annotations

import contextlib
import io
import os
from uuid import uuid4

import pytest

from nous_memory.cli.main import build_parser
from tests.unit.doc_shell import (
    ENV_PREFIX,
    NOT_RUN,
    PAGE_ORDER,
    PARSE_ONLY,
    RUN_AS_WRITTEN,
    DocCommand,
    bare,
    choices,
    commands,
    doc_commands,
    full,
    kind,
    shell_words,
    strip_comment,
    substitute,
)

DUMMY = {"ID": str(uuid4()), "FACT_ID": str(uuid4()), "EPISODE_ID": str(uuid4()),
         "FILE": "assistant-1.jsonl", "TIME": "2024-05-20T09:00:00Z", "REF": "fact:0123abcd"}
PATH = os.environ.get("PATH", "/usr/bin:/bin")  # for date in $(date +%F)


def forms(text: str) -> list[str]:
    """Every form a synopsis line stands for: all options, none, and each choice."""
    found: list[str] = []
    for variant in (full(text), bare(text)):
        found += [form for form in choices(variant) if form not in found]
    return found


def test_every_command_is_run_or_listed_with_a_reason() -> None:
    found = doc_commands()
    assert len(found) > 30, found
    unknown = [c for c in found if kind(c) == "unknown"]
    assert not unknown, f"shell commands in docs/ that no test runs (run them in " \
                        f"tests/integration/test_doc_shell.py or list them in " \
                        f"NOT_RUN with the reason): {unknown}"
    assert {c.page for c in found} == set(PAGE_ORDER)
    texts = {(c.page, c.text) for c in found}
    assert set(NOT_RUN) <= texts, set(NOT_RUN) - texts  # no stale entry
    assert set(RUN_AS_WRITTEN) <= texts, set(RUN_AS_WRITTEN) - texts
    parsed = {bare(c.text) for c in found if kind(c) == "parse"}
    assert parsed == set(PARSE_ONLY)
    assert all(reason for reason in NOT_RUN.values())


def test_every_nous_memory_line_parses_in_every_form() -> None:
    lines = [c for c in doc_commands() if kind(c) in ("cli", "parse", "serve")]
    assert len(lines) > 30
    parser = build_parser()
    for command in lines:
        for form in forms(substitute(command.text, DUMMY)):
            argv = shell_words(ENV_PREFIX.sub("", form), {"HOME": "/home/doc", "PATH": PATH})
            assert argv[0] == "nous-memory"
            assert not [a for a in argv if a.isupper() and a.isidentifier()], (
                f"{command.page}: a placeholder with no value: {form}")
            with contextlib.redirect_stderr(io.StringIO()) as err:
                try:
                    parser.parse_args(argv[1:])
                except SystemExit:
                    pytest.fail(f"{command.page}: {form}: {err.getvalue()}")


def test_the_notation() -> None:
    assert strip_comment("nous-memory jobs list   # schedules") == "nous-memory jobs list"
    assert strip_comment("curl -d '{\"a\": \"#1\"}'") == "curl -d '{\"a\": \"#1\"}'"
    block = "a \\\n  --b 1   # x\n# only a comment\n\nc [--d] \\\n    [--e F [--g]]\n"
    assert commands(block, "bash") == ["a --b 1", "c [--d] [--e F [--g]]"]
    assert commands("$ nous-memory db status\nschema 9\n", "console") == [
        "nous-memory db status"]
    assert full("c [--d] [--e F [--g]]") == "c --d --e F --g"
    assert bare("c [--d] [--e F [--g]]") == "c"
    assert choices("x --m a|b|c --n on|off") == [
        "x --m a --n on", "x --m b --n on", "x --m c --n on", "x --m a --n off"]
    assert choices("curl -H 'k: a|b'") == ["curl -H 'k: a|b'"]
    assert substitute("get ID --as-of TIME; jobs run NAME", DUMMY) == (
        f"get {DUMMY['ID']} --as-of 2024-05-20T09:00:00Z; jobs run trim")
    assert kind(DocCommand("x.md", "rm -rf /")) == "unknown"
    assert kind(DocCommand("x.md", "NOUS_MEMORY_DATA_DIR=/x nous-memory db status")) == "cli"
