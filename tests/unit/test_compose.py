"""docker-compose.yml and the Dockerfile: static checks (no Docker engine is needed).

Each check is a function that raises AssertionError; the tests run them on the real
files and, to show that none of them can pass vacuously, on broken copies as well.
tests/integration/test_compose_up.py runs the services as the files declare them.
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from nous_memory.config import Settings
from tests import compose_model as cm

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
PYPROJECT = ROOT / "pyproject.toml"
ENV_EXAMPLE = ROOT / ".env.example"

TORCH_PIN = "torch==2.13.0"
API_PORT = 8765

# .env.example with its two required values filled, as a user's .env would be
REQUIRED = {"POSTGRES_PASSWORD": "a-db-password", "NOUS_MEMORY_API_KEYS": "a-key-of-20-chars-xx"}

Compose = dict[str, Any]


def user_env() -> dict[str, str]:
    return cm.parse_dotenv(ENV_EXAMPLE.read_text()) | REQUIRED


def load_compose() -> Compose:
    return cm.load_compose(COMPOSE, user_env())


def service(compose: Compose, name: str) -> dict[str, Any]:
    services = compose.get("services") or {}
    assert name in services, f"no service {name!r}"
    svc = services[name]
    assert isinstance(svc, dict), f"service {name!r} is not a mapping"
    return svc


def environment(svc: dict[str, Any]) -> dict[str, str]:
    """The service's own ``environment`` (mapping or list of ``KEY=VALUE``)."""
    env = svc.get("environment") or {}
    if isinstance(env, list):
        return dict(item.split("=", 1) for item in env)
    return {str(k): str(v) for k, v in env.items()}


def command_words(svc: dict[str, Any]) -> list[str]:
    assert svc.get("command"), "no command"
    return cm.command(svc)


published_ports = cm.published_ports
dockerfile_instructions = cm.dockerfile_instructions


# ---------------------------------------------------------------------- checks


def check_db_image(compose: Compose) -> None:
    image = str(service(compose, "db").get("image", ""))
    assert image.split(":", 1)[0] == "pgvector/pgvector", f"db image is {image!r}"


def check_db_healthcheck(compose: Compose) -> None:
    health = service(compose, "db").get("healthcheck")
    assert isinstance(health, dict) and not health.get("disable"), "db has no healthcheck"
    test = health.get("test")
    text = " ".join(test) if isinstance(test, list) else str(test)
    assert "pg_isready" in text, f"db healthcheck does not run pg_isready: {text!r}"


def check_db_volume(compose: Compose) -> None:
    db = service(compose, "db")
    named = set((compose.get("volumes") or {}).keys())
    sources = []
    for vol in db.get("volumes") or []:
        if isinstance(vol, dict):
            sources.append((str(vol.get("source")), str(vol.get("target"))))
        else:
            source, _, target = str(vol).partition(":")
            sources.append((source, target.split(":", 1)[0]))
    assert any(source in named and target.startswith("/var/lib/postgresql")
               for source, target in sources), f"db data is not on a named volume: {sources}"


def check_database_url(compose: Compose, name: str = "api") -> None:
    db_env = environment(service(compose, "db"))
    url = environment(service(compose, name)).get("NOUS_MEMORY_DATABASE_URL")
    assert url, f"{name} has no NOUS_MEMORY_DATABASE_URL"
    parts = urlsplit(url)
    assert parts.scheme in ("postgresql", "postgres"), f"scheme {parts.scheme!r}"
    assert parts.hostname == "db", f"{name} connects to {parts.hostname!r}, not the db service"
    assert (parts.port or 5432) == 5432, f"port {parts.port}"
    assert unquote(parts.username or "") == db_env.get("POSTGRES_USER"), "user differs from db"
    assert unquote(parts.password or "") == db_env.get("POSTGRES_PASSWORD"), \
        "password differs from db"
    assert parts.path.lstrip("/") == db_env.get("POSTGRES_DB", db_env.get("POSTGRES_USER")), \
        "database differs from db"


def check_api_probes_readiness(compose: Compose) -> None:
    """The api is healthy when it can take traffic (/ready: database, model, worker), not
    merely when its process answers (/health)."""
    health = service(compose, "api").get("healthcheck")
    assert isinstance(health, dict) and not health.get("disable"), "api has no healthcheck"
    test = health.get("test")
    text = " ".join(test) if isinstance(test, list) else str(test)
    assert "/ready" in text, f"api healthcheck does not probe /ready: {text!r}"


def check_depends_on_db_healthy(compose: Compose, name: str = "api") -> None:
    depends = service(compose, name).get("depends_on")
    assert isinstance(depends, dict), f"{name} depends_on has no conditions: {depends!r}"
    assert (depends.get("db") or {}).get("condition") == "service_healthy", \
        f"{name} does not wait for a healthy db"


def check_api_port(compose: Compose) -> None:
    ports = published_ports(service(compose, "api"))
    bound = [p for p in ports if p[2] == str(API_PORT)]
    assert bound, f"api does not publish {API_PORT}: {ports}"
    for host_ip, published, _ in bound:
        assert host_ip == "127.0.0.1", f"api port {published} is bound to {host_ip or 'all'}"
        assert published == str(API_PORT), f"api published on {published}"


def check_api_command(compose: Compose) -> None:
    words = command_words(service(compose, "api"))
    assert words[:2] == ["nous-memory", "serve"], f"api runs {words}"
    assert "0.0.0.0" in words, "api must listen on all interfaces inside its container"
    assert str(API_PORT) in words, f"api does not listen on {API_PORT}"


def check_console_scripts(compose: Compose) -> None:
    scripts = tomllib.loads(PYPROJECT.read_text())["project"]["scripts"]
    for name in ("api", "scheduler"):
        program = command_words(service(compose, name))[0]
        assert program in scripts, f"{name} runs {program!r}, not in [project.scripts]"


def check_scheduler_service(compose: Compose) -> None:
    """The scheduler is a normal service: a plain `docker compose up` starts it, it runs
    a command the CLI has, on the api's database, once that database is healthy."""
    svc = service(compose, "scheduler")
    assert not svc.get("profiles"), f"scheduler is opt-in (profiles {svc.get('profiles')})"
    words = command_words(svc)
    assert words[:2] == ["nous-memory", "scheduler"], f"scheduler runs {words}"
    from nous_memory.cli.main import build_parser
    subparsers = build_parser()._subparsers
    assert subparsers is not None
    commands = subparsers._group_actions[0].choices
    assert words[1] in commands, f"the CLI has no {words[1]!r} command"
    check_database_url(compose, "scheduler")
    check_depends_on_db_healthy(compose, "scheduler")


def check_torch_before_project(dockerfile: str) -> None:
    runs = "\n".join(i for i in dockerfile_instructions(dockerfile) if i.upper().startswith("RUN "))
    pin = re.escape(TORCH_PIN)
    torch = re.search(rf"pip install [^\n&;|]*?(?<![\w.=-]){pin}(?![\w.])", runs)
    project = re.search(r"pip install[ \t]+(?:[^\s&;|]+[ \t]+)*\.(?=\s|$|\[)", runs)
    assert torch, f"no RUN installs {TORCH_PIN}"
    assert "/whl/cpu" in torch.group(0), "torch is not installed from the CPU wheel index"
    assert project, "no RUN does `pip install .`"
    assert torch.start() < project.start(), "torch is installed after the project"


# ---------------------------------------------------------------------- the real files


COMPOSE_CHECKS: list[Callable[[Compose], None]] = [
    check_db_image,
    check_db_healthcheck,
    check_db_volume,
    check_database_url,
    check_depends_on_db_healthy,
    check_api_port,
    check_api_probes_readiness,
    check_api_command,
    check_console_scripts,
    check_scheduler_service,
]


@pytest.mark.parametrize("check", COMPOSE_CHECKS, ids=lambda c: c.__name__)
def test_compose(check: Callable[[Compose], None]) -> None:
    check(load_compose())


def test_dockerfile_installs_cpu_torch_before_project() -> None:
    check_torch_before_project(DOCKERFILE.read_text())


def test_dockerfile_runs_as_non_root_and_checks_health() -> None:
    instructions = dockerfile_instructions(DOCKERFILE.read_text())
    users = [i.split(None, 1)[1] for i in instructions if i.upper().startswith("USER ")]
    assert users and users[-1].split(":")[0] not in ("root", "0"), "image runs as root"
    assert any(i.upper().startswith("HEALTHCHECK ") and "/health" in i for i in instructions)
    assert f"EXPOSE {API_PORT}" in instructions
    assert any(i.startswith("FROM python:3.11-slim") for i in instructions)


# ---------------------------------------------------------------------- the checks can fail


def _set(path: str, value: Any) -> Callable[[Compose], None]:
    """A mutation setting (or with value=None deleting) a dotted path in the compose data."""
    def mutate(data: Compose) -> None:
        *parents, last = path.split(".")
        node = data
        for key in parents:
            node = node[key]
        if value is None:
            del node[last]
        else:
            node[last] = value
    return mutate


_DB = "services.db"
_API = "services.api"
_SCHED = "services.scheduler"

BROKEN: list[tuple[str, Callable[[Compose], None], Callable[[Compose], None]]] = [
    ("postgres image", _set(f"{_DB}.image", "postgres:17"), check_db_image),
    ("no db healthcheck", _set(f"{_DB}.healthcheck", None), check_db_healthcheck),
    ("healthcheck not pg_isready", _set(f"{_DB}.healthcheck", {"test": ["CMD", "true"]}),
     check_db_healthcheck),
    ("bind mount", _set(f"{_DB}.volumes", ["./data:/var/lib/postgresql/data"]),
     check_db_volume),
    ("wrong host", _set(f"{_API}.environment",
                        {"NOUS_MEMORY_DATABASE_URL": "postgresql://nous:nous-memory@localhost:5432/nous_memory"}),
     check_database_url),
    ("wrong password", _set(f"{_DB}.environment.POSTGRES_PASSWORD", "other"),
     check_database_url),
    ("wrong user", _set(f"{_DB}.environment.POSTGRES_USER", "other"), check_database_url),
    ("wrong database", _set(f"{_DB}.environment.POSTGRES_DB", "other"), check_database_url),
    ("depends_on list", _set(f"{_API}.depends_on", ["db"]), check_depends_on_db_healthy),
    ("service_started", _set(f"{_API}.depends_on", {"db": {"condition": "service_started"}}),
     check_depends_on_db_healthy),
    ("port on all interfaces", _set(f"{_API}.ports", ["8765:8765"]), check_api_port),
    ("port on 0.0.0.0", _set(f"{_API}.ports", ["0.0.0.0:8765:8765"]), check_api_port),
    ("long syntax, no host_ip", _set(f"{_API}.ports", [{"target": 8765, "published": 8765}]),
     check_api_port),
    ("no ports", _set(f"{_API}.ports", None), check_api_port),
    ("liveness probe", _set(f"{_API}.healthcheck.test", ["CMD", "curl", "-f",
                                                         "http://127.0.0.1:8765/health"]),
     check_api_probes_readiness),
    ("other command", _set(f"{_API}.command", "python -m http.server 8765"),
     check_api_command),
    ("unknown script", _set(f"{_API}.command", "nous-mem serve --host 0.0.0.0 --port 8765"),
     check_console_scripts),
    ("scheduler opt-in", _set(f"{_SCHED}.profiles", ["scheduler"]), check_scheduler_service),
    ("scheduler runs serve", _set(f"{_SCHED}.command", ["nous-memory", "serve"]),
     check_scheduler_service),
    ("scheduler without database", _set(f"{_SCHED}.environment", {}),
     check_scheduler_service),
    ("scheduler not waiting", _set(f"{_SCHED}.depends_on", ["db"]), check_scheduler_service),
]


@pytest.mark.parametrize(("mutate", "check"), [(m, c) for _, m, c in BROKEN],
                         ids=[name for name, _, _ in BROKEN])
def test_compose_check_catches(mutate: Callable[[Compose], None],
                               check: Callable[[Compose], None]) -> None:
    data = copy.deepcopy(load_compose())
    check(data)  # the real file passes ...
    mutate(data)
    with pytest.raises(AssertionError):
        check(data)  # ... and the broken copy does not


@pytest.mark.parametrize("dockerfile", [
    "FROM python:3.11-slim\nRUN pip install .\n"
    "RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0\n",
    "FROM python:3.11-slim\nRUN pip install torch==2.13.0\nRUN pip install .\n",
    "FROM python:3.11-slim\n"
    "RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.01\n"
    "RUN pip install .\n",
    "FROM python:3.11-slim\n"
    "# RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0\n"
    "RUN pip install .\n",
    "FROM python:3.11-slim\nRUN pip install . && \\\n"
    "    pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0\n",
], ids=["after", "not-cpu", "other-version", "commented-out", "after-in-same-run"])
def test_torch_check_catches(dockerfile: str) -> None:
    with pytest.raises(AssertionError):
        check_torch_before_project(dockerfile)


# ---------------------------------------------------------------------- .env.example

# Settings .env.example leaves out, and why: compose (or the image) fixes them.
NOT_IN_ENV_EXAMPLE = {
    "database_url": "compose builds it from POSTGRES_PASSWORD (the db service)",
    "data_dir": "the embedded server's directory; compose uses the db service",
    "database_name": "the embedded server's database; compose names it in the URL",
    "embedded_shared_buffers": "the embedded server's tuning; compose uses the db service",
    "model_cache_dir": "the models volume is mounted on the default",
    "api_host": "the api command binds all of the container's interfaces",
    "api_port": "the api command listens on 8765; PUBLISH_PORT moves the host side",
    "insecure_no_auth_on_network": "compose requires API keys",
}


def env_example_lines() -> dict[str, str]:
    """Every ``NOUS_MEMORY_*`` line, set or commented out, with its value."""
    found = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        match = re.match(r"^#? ?(NOUS_MEMORY_[A-Z0-9_]+=.*)$", line)
        if match:
            found.update(cm.parse_dotenv(match.group(1)))
    return found


def test_env_example_documents_every_setting() -> None:
    documented = {key.removeprefix("NOUS_MEMORY_").lower() for key in env_example_lines()}
    fields = set(Settings.__dataclass_fields__)
    assert documented <= fields, f"not settings: {sorted(documented - fields)}"
    missing = fields - documented - set(NOT_IN_ENV_EXAMPLE)
    assert not missing, f".env.example does not document {sorted(missing)}"
    assert not documented & set(NOT_IN_ENV_EXAMPLE)


def test_env_example_shows_the_defaults() -> None:
    """A commented line shows the default; where the default is unset, an example that the
    settings accept."""
    defaults = Settings()
    for key, value in env_example_lines().items():
        name = key.removeprefix("NOUS_MEMORY_").lower()
        default = getattr(defaults, name)
        if not value:
            continue
        parsed = getattr(Settings.from_env({key: value} | (
            {"NOUS_MEMORY_LLM_BASE_URL": "http://x", "NOUS_MEMORY_LLM_MODEL": "m"}
            if name.startswith("llm_") else {})), name)
        if default is not None:
            assert parsed == default, f"{key}={value} but the default is {default!r}"


def test_required_values_stop_compose_with_their_name() -> None:
    example = cm.parse_dotenv(ENV_EXAMPLE.read_text())
    for name in REQUIRED:
        with pytest.raises(cm.InterpolationError, match=name):
            cm.load_compose(COMPOSE, example | REQUIRED | {name: ""})


def test_secrets_only_come_from_env() -> None:
    raw = COMPOSE.read_text()
    for value in REQUIRED.values():
        assert value not in raw
    assert "nous-memory@" not in raw  # no password written into the file
    assert ".env" in (ROOT / ".gitignore").read_text().split()


def test_api_published_on_loopback_unless_told_otherwise() -> None:
    assert cm.published_ports(service(load_compose(), "api")) == [("127.0.0.1", "8765", "8765")]
    wider = cm.load_compose(COMPOSE, user_env() | {"PUBLISH_ADDRESS": "0.0.0.0",
                                                    "PUBLISH_PORT": "443"})
    assert cm.published_ports(service(wider, "api")) == [("0.0.0.0", "443", "8765")]


def test_model_cache_is_a_named_volume_the_image_user_owns() -> None:
    compose = load_compose()
    image = cm.read_image(DOCKERFILE)
    assert image.user not in ("root", "0")
    for name in ("api", "scheduler"):
        volumes = cm.named_volumes(service(compose, name), compose)
        assert volumes == {"models": f"{image.workdir}/.cache/nous-memory/models"}
    runs = [i for i in cm.dockerfile_instructions(DOCKERFILE.read_text())
            if i.startswith(("RUN ", "USER "))]
    user_at = max(i for i, r in enumerate(runs) if r.startswith("USER "))
    assert any("mkdir -p /home/nous/.cache/nous-memory/models" in r for r in runs[user_at:]), \
        "the volume's mount point must exist, owned by the image's user"


# ---------------------------------------------------------------------- interpolation


@pytest.mark.parametrize(("text", "expected"), [
    ("${A}", "a"), ("$A-x", "a-x"), ("${UNSET}", ""), ("$$A", "$A"),
    ("${A:-d}", "a"), ("${EMPTY:-d}", "d"), ("${EMPTY-d}", ""), ("${UNSET-d}", "d"),
    ("${UNSET:-${A}b}", "ab"), ("${A:+alt}", "alt"), ("${EMPTY:+alt}", ""),
    ("${EMPTY+alt}", "alt"), ("${UNSET+alt}", ""), ("x${A:?need A}y", "xay"),
])
def test_interpolation(text: str, expected: str) -> None:
    assert cm.interpolate(text, {"A": "a", "EMPTY": ""}) == expected


@pytest.mark.parametrize("text", ["${EMPTY:?need it}", "${UNSET?need it}", "${UNSET:?need it}"])
def test_interpolation_requires(text: str) -> None:
    with pytest.raises(cm.InterpolationError, match="need it"):
        cm.interpolate(text, {"EMPTY": ""})


def test_dotenv_syntax() -> None:
    parsed = cm.parse_dotenv(
        "# comment\nA=1\nexport B = two words  # note\nC='${A} lit'\nD=\"x\\ny ${A}\"\n"
        "E=\nF=$A$A\n")
    assert parsed == {"A": "1", "B": "two words", "C": "${A} lit", "D": "x\ny 1", "E": "",
                      "F": "11"}
