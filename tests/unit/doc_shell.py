"""The shell blocks of docs/ as commands, and the synopsis notation they use.

A command is one line of a block with its continuation lines joined and its comment
dropped; ``[...]`` marks an optional part (nested ones too) and ``a|b|c`` a choice.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from tests.unit.test_readme import DOCS, blocks, pages

SHELL_LANGUAGES = ("bash", "sh", "shell", "console")
CHOICE = re.compile(r"(?<![\w'\"/-])([a-z][\w-]*(?:\|[a-z][\w-]*)+)(?![\w'\"])")
FLAG = re.compile(r"(?<!\S)(--?[A-Za-z][\w-]*)")


@dataclass(frozen=True)
class DocCommand:
    page: str  # relative to docs/
    text: str  # as written, continuations joined, comment dropped


def strip_comment(line: str) -> str:
    """The line without a ``#`` comment (one that starts a word outside quotes)."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def commands(block: str, language: str) -> list[str]:
    """The commands of one block; in a ``console`` block only the ``$`` lines."""
    lines = block.splitlines()
    if language == "console":
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    joined: list[str] = []
    pending = ""
    for line in lines:
        text = strip_comment(line) if not line.rstrip().endswith("\\") else line.rstrip()
        if text.endswith("\\"):
            pending += text[:-1].strip() + " "
            continue
        text = (pending + text.strip()).strip()
        pending = ""
        if text:
            joined.append(text)
    assert not pending, f"a continuation line ends the block: {pending!r}"
    return joined


def doc_commands() -> list[DocCommand]:
    """Every command of every shell block in docs/, page by page, in page order."""
    found = []
    for path in pages():
        if not path.is_relative_to(DOCS):
            continue
        page = str(path.relative_to(DOCS))
        for language in SHELL_LANGUAGES:
            for block in blocks(path, language):
                found += [DocCommand(page, text) for text in commands(block, language)]
    return found


def _brackets(text: str, keep: bool) -> str:
    """Optional parts kept (brackets removed) or dropped, innermost first."""
    inner = re.compile(r"\[([^\[\]]*)\]")
    while inner.search(text):
        text = inner.sub(r"\1" if keep else "", text)
    return re.sub(r"\s+", " ", text).strip()


def full(text: str) -> str:
    """Every optional part given."""
    return _brackets(text, keep=True)


def bare(text: str) -> str:
    """No optional part given."""
    return _brackets(text, keep=False)


def choices(text: str) -> list[str]:
    """The text with the first alternative of every ``a|b|c``, then one text for each
    other alternative (the rest at their first)."""
    groups = list(CHOICE.finditer(text))

    def pick(chosen: dict[int, str]) -> str:
        out, last = [], 0
        for i, match in enumerate(groups):
            out += [text[last:match.start()], chosen.get(i, match.group(1).split("|")[0])]
            last = match.end()
        return "".join([*out, text[last:]])

    variants = [pick({})]
    for i, match in enumerate(groups):
        variants += [pick({i: option}) for option in match.group(1).split("|")[1:]]
    return variants


def flags(text: str) -> list[str]:
    """The options a command line names (``--k``, ``-o``), quoted text left out."""
    unquoted = re.sub(r"'[^']*'|\"[^\"]*\"", "", text)
    return FLAG.findall(unquoted)


# ---------------------------------------------------------------------- the plan

# The order the pages' commands run in, all on one database: a page finds what the pages
# before it left (the servers, the agents' memories). Pages that share nothing run
# alongside (LANES in tests/integration/test_doc_shell.py), each group in this order.
PAGE_ORDER = ("surfaces/cli.md", "operations/jobs.md", "operations/backups.md",
              "operations/service.md", "operations/deploy.md", "surfaces/rest.md",
              "operations/export-import.md", "surfaces/integrations.md",
              "guide/write-path.md", "scaling.md", "surfaces/typescript.md")

_DOCKER = ("needs Docker and the compose project (not on the test machine); "
           "tests/integration/test_compose_up.py runs every compose service as declared")
# Commands that are not run, each with the reason. A command that is neither run nor
# listed here fails tests/unit/test_doc_shell_lines.py.
NOT_RUN: dict[tuple[str, str], str] = {
    ("operations/deploy.md", "docker compose up -d --build"): _DOCKER,
    ("operations/deploy.md", "docker compose ps"): _DOCKER,
    ("operations/deploy.md", "docker compose exec -T db pg_dump -U nous -d nous_memory -Fc > "
                             "nous-memory-$(date +%F).dump"):
        _DOCKER + "; pg_dump and pg_restore of the same database run here through "
                  "`nous-memory db backup` and `db restore` (operations/backups.md)",
    ("operations/deploy.md", "docker compose down && docker volume rm nous-memory_pgdata"):
        _DOCKER,
    ("operations/deploy.md", "docker compose up -d db"): _DOCKER,
    ("operations/deploy.md", "docker compose exec -T db pg_restore -U nous -d nous_memory "
                             "--no-owner < nous-memory-2026-01-31.dump"): _DOCKER,
    ("operations/deploy.md", "docker compose up -d"): _DOCKER,
    ("surfaces/typescript.md", "cd clients/typescript && npm ci && npm run build && npm pack"):
        "tests/integration/test_typescript_client.py builds and packs the package so and "
        "loads the tarball in a fresh project",
    ("surfaces/typescript.md", "cd /your/project && npm install "
                               "/path/to/nous-memory-client-0.1.0.tgz ai "
                               "@ai-sdk/openai-compatible"):
        "a project of the reader's; the test above installs the tarball the same way",
}
# nous-memory commands only parsed (every form of them), not run, with the reason
PARSE_ONLY: dict[str, str] = {
    "nous-memory scheduler": "runs the jobs on their schedules until it is stopped; "
                             "tests/integration/test_jobs_scheduler.py runs it",
}
# Commands other than nous-memory, curl and the benchmarks that run as written
RUN_AS_WRITTEN: dict[tuple[str, str], str] = {
    ("surfaces/integrations.md", ".venv/bin/python -c \"from nous_memory.integrations.hermes "
                                 "import install_plugin; install_plugin('$HOME/.hermes')\""):
        "installs the Hermes plugin under $HOME",
    ("surfaces/integrations.md", "export NOUS_MEMORY_URL=http://127.0.0.1:8765 "
                                 "NOUS_MEMORY_AGENT=assistant-1"): "sets the plugin's settings",
    ("operations/deploy.md", "cp .env.example .env"): "copies the settings template",
    ("operations/backups.md", "mkdir -p ~/backups"): "makes the backups' directory",
}
SERVE = re.compile(r"^nous-memory serve\b")
BENCH = re.compile(r"^(?:\.venv/bin/)?python3? (bench/\w+\.py)\b")
ENV_PREFIX = re.compile(r"^(?:\w+=\S+ )*")

# What a placeholder of the synopses stands for; ids are bound when the test made them
NAMED = (("jobs run NAME", "jobs run trim"), ("--actor NAME", "--actor ops-desk"))
PLACEHOLDER = re.compile(r"(?<![\w$])(ID|FACT_ID|EPISODE_ID|FILE|TIME)(?!\w)")
REF = "fact:1a2b3c4d"


def kind(command: DocCommand) -> str:
    """How the suite handles it: cli, parse, serve, curl, bench, as-written or not-run."""
    key = (command.page, command.text)
    if key in NOT_RUN:
        return "not-run"
    if key in RUN_AS_WRITTEN:
        return "as-written"
    bare_text = ENV_PREFIX.sub("", command.text)
    if SERVE.match(bare_text):
        return "serve"
    if bare_text.startswith("nous-memory "):
        return "parse" if bare(bare_text) in PARSE_ONLY else "cli"
    if command.text.startswith("curl "):
        return "curl"
    if BENCH.match(command.text):
        return "bench"
    return "unknown"


def substitute(text: str, values: dict[str, str]) -> str:
    """Placeholders replaced by what they stand for (KeyError: one not bound yet)."""
    for written, meant in NAMED:
        text = text.replace(written, meant)
    text = text.replace(REF, values.get("REF", REF))
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


def shell_words(text: str, env: dict[str, str]) -> list[str]:
    """The words bash makes of a command line (expansions done, nothing run but them)."""
    done = subprocess.run(["bash", "-c", f"printf '%s\\0' {text}"], env=env, check=True,
                          capture_output=True, text=True)
    return done.stdout.split("\0")[:-1]
