"""Every shell command of docs/ runs as written, page after page on one database.

Each command goes to bash in one working directory with the project's ``nous-memory`` on
PATH; a synopsis line runs with every option given (``delete`` without ``--purge``, so
that ``memories restore`` has it to bring back) and the first of each ``a|b``;
placeholders take the ids the commands before printed. The curl lines go to two
``nous-memory serve`` processes started by the doc's own serve line on loopback: one
with a bootstrap key (service, deploy), one without (rest, export-import, cli). The
``nous-memory`` lines the CLI can send to a service run with ``$NOUS_MEMORY_URL`` naming
the page's server, as a user with a running service runs them: each is then a light
process (no database driver, store or model) and the server does the work; the lines
that work on the database itself run locally. Pages that share nothing run alongside
each other (``LANES``). The benchmark lines are checked, not run: the script takes the line's flags.
What is not run and why: ``NOT_RUN`` in tests/unit/doc_shell.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

from nous_memory import MemoryStore
from nous_memory.cli.main import LOCAL_COMMANDS, build_parser
from nous_memory.config import Settings
from tests.integration.http_helpers import free_port, stop_server, wait_healthy
from tests.integration.jobs_helpers import long_text, old_episode
from tests.integration.test_history_surfaces import garden_sessions
from tests.unit.doc_shell import (
    BENCH,
    ENV_PREFIX,
    PAGE_ORDER,
    DocCommand,
    bare,
    choices,
    doc_commands,
    flags,
    full,
    kind,
    shell_words,
    substitute,
)
from tests.unit.test_readme import ROOT

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
BOOTSTRAP_KEY = "doc-shell-bootstrap-key-0123456789"
KEYED_PAGES = ("operations/service.md", "operations/deploy.md")
# The pages in groups that run alongside each other, each in PAGE_ORDER: the memory pages
# find what the ones before them left; the service pages work on API keys only (the keyed
# server); the rest share nothing (the backups page has an embedded store of its own, the
# benchmark pages only check flags, the plugin is installed under HOME)
LANES = (("surfaces/cli.md", "operations/jobs.md", "surfaces/rest.md",
          "operations/export-import.md"),
         ("operations/service.md", "operations/deploy.md"),
         ("operations/backups.md", "surfaces/integrations.md", "guide/write-path.md",
          "scaling.md", "surfaces/typescript.md"))
# the first id a command prints is what this placeholder stands for afterwards
CAPTURE = {"nous-memory remember ": "ID", "nous-memory facts learn ": "FACT_ID",
           "nous-memory episodes start ": "EPISODE_ID"}
# what a command prints (a fragment of it), beyond its exit status 0
EXPECT = {"nous-memory memories restore": "restored ", "nous-memory db restore": "verified",
          "nous-memory import assistant-1.jsonl --agent assistant-2 --reembed --dry-run":
              "would import"}


REMOTE_PARSER = build_parser(remote=True)


def goes_to_service(argv: list[str]) -> bool:
    """Whether the CLI sends this command to the service ``$NOUS_MEMORY_URL`` names: not
    one that works on the database itself, which the CLI refuses to send (were this
    wrong that way, the line would fail with that refusal)."""
    if argv[1] in LOCAL_COMMANDS:
        return False
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            args = REMOTE_PARSER.parse_args(argv[1:])
        except SystemExit:  # a command the service does not run
            return False
    return bool(getattr(args, "remote", False))


def run_bash(text: str, env: dict[str, str], cwd: Path, stdin: int | None = None
             ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", text], env=env, cwd=cwd, text=True, timeout=300,
                          capture_output=True, stdin=stdin)


class Run:
    """The state the pages share: the environment, the bound placeholders, the servers."""

    def __init__(self, database_url: str, tmp: Path) -> None:
        self.tmp, self.work, self.home = tmp, tmp / "work", tmp / "home"
        self.work.mkdir()
        self.home.mkdir()
        bin_dir = Path(sys.executable).parent
        keep = {k: v for k, v in os.environ.items()
                if not k.startswith(("NOUS_MEMORY_", "OPENAI_"))}
        self.env = {**keep, "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                    "HOME": str(self.home), "HF_HUB_OFFLINE": "1",
                    "NOUS_MEMORY_DATABASE_URL": database_url,
                    "NOUS_MEMORY_DATA_DIR": str(tmp / "unused-data-dir"),
                    # the model's export stays where it is (it is found under HOME)
                    "NOUS_MEMORY_MODEL_CACHE_DIR": str(Settings.from_env().model_cache_dir),
                    "KEY": BOOTSTRAP_KEY, "OWNER_KEY": BOOTSTRAP_KEY}
        if "HF_HOME" not in keep:
            self.env["HF_HOME"] = str(Path.home() / ".cache" / "huggingface")
        self.values: dict[str, str] = {"FILE": "assistant-1.jsonl",
                                       "TIME": "2024-05-20T09:00:00Z"}
        self.ports = {"open": free_port(), "keyed": free_port()}
        self.servers: dict[str, subprocess.Popen[bytes]] = {}
        self.ran: list[str] = []
        self.remote: list[str] = []  # the lines run with $NOUS_MEMORY_URL

    def local(self, text: str, server: str) -> str:
        """The doc's line for this machine: the port the server listens on, the venv the
        suite runs in, a scratch directory, the day the backup was made."""
        port = str(self.ports[server])
        for written, meant in (("localhost:8765", f"localhost:{port}"),
                               ("127.0.0.1:8765", f"127.0.0.1:{port}"),
                               ("--port 8765", f"--port {port}"),
                               (".venv/bin/", f"{Path(sys.executable).parent}/"),
                               ("/tmp/check", str(self.tmp / "check")),
                               ("2026-01-31", datetime.date.today().isoformat())):
            text = text.replace(written, meant)
        return substitute(text, self.values)

    def start_servers(self, serve_line: str) -> None:
        for name, port in self.ports.items():
            env = dict(self.env)
            if name == "keyed":
                env["NOUS_MEMORY_API_KEYS"] = BOOTSTRAP_KEY
            with open(self.tmp / f"serve-{name}.log", "wb") as log:  # the child keeps it
                self.servers[name] = subprocess.Popen(
                    ["bash", "-c", "exec " + self.local(full(serve_line), name)], env=env,
                    cwd=self.work, stdout=log, stderr=subprocess.STDOUT)
            assert str(port) in self.local(full(serve_line), name)

    def healthy(self, server: str) -> None:
        wait_healthy(self.url(server), self.servers[server])

    def url(self, server: str) -> str:
        return f"http://127.0.0.1:{self.ports[server]}"

    def service_env(self, env: dict[str, str], server: str) -> dict[str, str]:
        """``env`` of a user whose CLI goes to the running service, not the database."""
        env = {k: v for k, v in env.items() if k != "NOUS_MEMORY_DATABASE_URL"}
        env["NOUS_MEMORY_URL"] = self.url(server)
        if server == "keyed":
            env["NOUS_MEMORY_API_KEY"] = BOOTSTRAP_KEY
        return env

    def stop(self) -> None:
        for proc in self.servers.values():
            stop_server(proc)

    def command(self, command: DocCommand, env: dict[str, str]) -> str:
        how = kind(command)
        server = "keyed" if command.page in KEYED_PAGES else "open"
        written = command.text
        if how == "cli":  # a soft delete: later lines restore it (the purge is parsed)
            form = bare if written.startswith("nous-memory delete ") else full
            written = choices(form(written))[0]
        text = self.local(written, server)
        if how == "cli" and goes_to_service(shell_words(ENV_PREFIX.sub("", text), env)):
            self.healthy(server)
            env = self.service_env(env, server)
            self.remote.append(text)
        if how == "curl":
            self.healthy(server)
            done = run_bash(text + " --write-out '\\n%{http_code}\\n'", env, self.work)
            status = done.stdout.splitlines()[-1] if done.stdout else ""
            assert done.returncode == 0 and status.startswith("2"), (
                f"{command.page}: {text}: {status} {done.stdout[-500:]} {done.stderr}")
        elif how == "bench":
            self.bench(command.text)
        else:
            # the stdio MCP server ends when its input does
            done = run_bash(text, env, self.work, stdin=subprocess.DEVNULL)
            assert done.returncode == 0, f"{command.page}: {text}\n{done.stderr}"
            for start, name in CAPTURE.items():
                if text.startswith(start):
                    found = UUID.search(done.stdout)
                    assert found, done.stdout
                    self.values[name] = found.group(0)
                    if name == "FACT_ID":
                        self.values["REF"] = f"fact:{found.group(0)[:8]}"
            for start, fragment in EXPECT.items():
                if text.startswith(start):
                    assert fragment in done.stdout, (text, done.stdout)
        self.ran.append(text)
        return text

    def bench(self, text: str) -> None:
        """The script exists and takes the line's flags, with their values (``--help``
        last: the values before it are converted, then it prints the options)."""
        match = BENCH.match(text)
        assert match is not None
        script = ROOT / match.group(1)
        argv = text[match.end():].split()
        done = subprocess.run([sys.executable, str(script), *argv, "--help"], cwd=ROOT,
                              env=self.env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (text, done.stderr)
        for flag in flags(text[match.end():]):
            assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", done.stdout), (
                text, flag)


async def _cli(run: Run, store: MemoryStore) -> dict[str, str]:
    """The file of past conversations ``ingest history.jsonl`` reads."""
    sessions = garden_sessions()
    (run.work / "history.jsonl").write_text("".join(json.dumps(s) + "\n" for s in sessions))
    return run.env


async def _jobs(run: Run, store: MemoryStore) -> dict[str, str]:
    """An episode that ended 40 days ago with more detail than trim keeps hot: the block
    trims it, and ``memories restore ID`` brings its cold detail back."""
    episode = await old_episode(store, "assistant-1", ended_days_ago=40,
                                detail=long_text(3_000, seed=36),
                                now=datetime.datetime.now(datetime.UTC))
    run.values["ID"] = str(episode.id)
    return run.env


async def _backups(run: Run, store: MemoryStore) -> dict[str, str]:
    """The page's lines are for the embedded default (the restore names a data
    directory): no database URL, a store of its own made by ``db init``."""
    env = {k: v for k, v in run.env.items() if k != "NOUS_MEMORY_DATABASE_URL"}
    env["NOUS_MEMORY_DATA_DIR"] = str(run.tmp / "embedded")
    done = await asyncio.to_thread(run_bash, "nous-memory db init", env, run.work)
    assert done.returncode == 0, done.stderr
    # without the page's mkdir: one line naming the file, no traceback
    done = await asyncio.to_thread(run_bash, "nous-memory db backup nowhere/x.backup", env,
                                   run.work)
    assert (done.returncode, done.stderr) == (
        2, "nous-memory: error: file: its directory does not exist\n")
    return env


async def _deploy(run: Run, store: MemoryStore) -> dict[str, str]:
    """The project's files, which `cp .env.example .env` starts from."""
    shutil.copy(ROOT / ".env.example", run.work / ".env.example")
    return run.env


SETUP: dict[str, Callable[[Run, MemoryStore], Awaitable[dict[str, str]]]] = {
    "surfaces/cli.md": _cli,
    "operations/jobs.md": _jobs, "operations/backups.md": _backups,
    "operations/deploy.md": _deploy}


async def _pages(run: Run, store: MemoryStore, found: list[DocCommand],
                 pages: Iterable[str]) -> None:
    """The pages' commands in order, each page after its setup."""
    for page in pages:
        setup = SETUP.get(page)
        env = await setup(run, store) if setup else run.env
        for command in [c for c in found if c.page == page]:
            if kind(command) in ("cli", "curl", "bench", "as-written"):
                await asyncio.to_thread(run.command, command, env)


async def test_every_shell_command_of_the_docs_runs(database_url: str, store: MemoryStore
                                                    ) -> None:
    found = doc_commands()
    assert sorted(p for lane in LANES for p in lane) == sorted(PAGE_ORDER)
    assert all(list(lane) == sorted(lane, key=PAGE_ORDER.index) for lane in LANES)
    (serve_line,) = [c.text for c in found if kind(c) == "serve"]
    with tempfile.TemporaryDirectory(prefix="nous-doc-shell-") as tmp:
        run = Run(database_url, Path(tmp))
        run.start_servers(serve_line)
        try:
            # every lane to its end (a lane's failure stops no other midway), then the
            # first failure
            ends = await asyncio.gather(*(_pages(run, store, found, lane) for lane in LANES),
                                        return_exceptions=True)
            for end in ends:
                if isinstance(end, BaseException):
                    raise end
        finally:
            await asyncio.to_thread(run.stop)
        assert (run.home / ".hermes" / "plugins").exists() or any(
            (run.home / ".hermes").rglob("*")), "install_plugin wrote nothing"
        assert len(run.ran) == len([c for c in found if kind(c) in (
            "cli", "curl", "bench", "as-written")])
        # the memory commands went to the service
        assert {"remember", "facts", "episodes", "recall", "context", "export", "import"} <= {
            line.split()[1] for line in run.remote}, run.remote
