"""docker-compose.yml and the Dockerfile read the way Docker reads them, without Docker.

- ``.env`` files in compose's dotenv syntax;
- compose interpolation: ``$$``, ``$VAR``, ``${VAR}``, ``${VAR:-default}``,
  ``${VAR-default}``, ``${VAR:?error}``, ``${VAR?error}``, ``${VAR:+alt}``, ``${VAR+alt}``
  (defaults may nest), applied to every string in the file;
- a service's process: the image's ENTRYPOINT + (the service's command, else the image's
  CMD), its environment (image ENV < env_file < environment), its healthcheck (the
  service's, else the image's HEALTHCHECK) and its start order (depends_on).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Compose = dict[str, Any]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class InterpolationError(ValueError):
    """A ``${VAR:?message}`` (or ``?``) whose variable is missing."""


def interpolate(text: str, env: Mapping[str, str]) -> str:
    value, end = _interpolate(text, 0, env, stop=None)
    assert end == len(text)
    return value


def _interpolate(text: str, i: int, env: Mapping[str, str], stop: str | None
                 ) -> tuple[str, int]:
    out: list[str] = []
    while i < len(text):
        ch = text[i]
        if stop is not None and ch == stop:
            return "".join(out), i
        if ch != "$":
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1] if i + 1 < len(text) else ""
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "{":
            value, i = _braced(text, i + 2, env)
            out.append(value)
        else:
            match = _NAME.match(text, i + 1)
            if match is None:
                out.append("$")
                i += 1
            else:
                out.append(env.get(match.group(0), ""))
                i = match.end()
    if stop is not None:
        raise ValueError(f"unterminated ${{...}} in {text!r}")
    return "".join(out), i


def _braced(text: str, i: int, env: Mapping[str, str]) -> tuple[str, int]:
    """``${`` was read; returns the value and the index after the closing brace."""
    match = _NAME.match(text, i)
    if match is None:
        raise ValueError(f"invalid interpolation in {text!r}")
    name, i = match.group(0), match.end()
    if text[i] == "}":
        return env.get(name, ""), i + 1
    operator = text[i:i + 2] if text[i] == ":" else text[i]
    if operator not in (":-", "-", ":?", "?", ":+", "+"):
        raise ValueError(f"unsupported interpolation operator {operator!r} in {text!r}")
    argument, end = _interpolate(text, i + len(operator), env, stop="}")
    present = name in env
    filled = present and env[name] != ""
    usable = filled if operator.startswith(":") else present
    kind = operator[-1]
    if kind == "-":
        value = env[name] if usable else argument
    elif kind == "?":
        if not usable:
            raise InterpolationError(f"required variable {name} is missing a value: {argument}")
        value = env[name]
    else:  # "+"
        value = argument if usable else ""
    return value, end + 1


def interpolate_tree(node: Any, env: Mapping[str, str]) -> Any:
    if isinstance(node, str):
        return interpolate(node, env)
    if isinstance(node, list):
        return [interpolate_tree(item, env) for item in node]
    if isinstance(node, dict):
        return {key: interpolate_tree(value, env) for key, value in node.items()}
    return node


def parse_dotenv(text: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """compose's .env syntax: KEY=VALUE lines, '#' comments, optional ``export``; single
    quotes are literal, double quotes take escapes, unquoted values lose a `` #`` comment
    and surrounding blanks; unquoted and double-quoted values are interpolated."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not _NAME.fullmatch(key):
            raise ValueError(f"not a KEY=VALUE line: {raw!r}")
        value = value.strip()
        scope = {**(env or {}), **values}
        if value.startswith("'") and value.endswith("'") and len(value) >= 2:
            values[key] = value[1:-1]
        elif value.startswith('"') and value.endswith('"') and len(value) >= 2:
            unescaped = re.sub(r'\\([\\"n])', lambda m: "\n" if m.group(1) == "n"
                               else m.group(1), value[1:-1])
            values[key] = interpolate(unescaped, scope)
        else:
            values[key] = interpolate(re.split(r"\s+#", value, maxsplit=1)[0].rstrip(), scope)
    return values


def load_compose(path: Path, env: Mapping[str, str]) -> Compose:
    """The file with YAML merge keys resolved and every string interpolated from ``env``."""
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), f"{path} is not a mapping"
    tree: Compose = interpolate_tree(data, env)
    return tree


# ---------------------------------------------------------------------- Dockerfile


def dockerfile_instructions(text: str) -> list[str]:
    """Instructions with line continuations joined and comments dropped."""
    instructions: list[str] = []
    current = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):  # Docker drops these, even mid-instruction
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        instructions.append(current + stripped)
        current = ""
    if current:
        instructions.append(current)
    return instructions


@dataclass
class Image:
    env: dict[str, str] = field(default_factory=dict)
    user: str = "root"
    workdir: str = "/"
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)
    healthcheck: list[str] | None = None


def _exec_form(text: str) -> list[str]:
    text = text.strip()
    if text.startswith("["):
        words = json.loads(text)
        assert isinstance(words, list)
        return [str(w) for w in words]
    return ["/bin/sh", "-c", text]


def read_image(dockerfile: Path) -> Image:
    """What ``docker build`` records of the final stage (ENV, USER, WORKDIR, CMD, ...)."""
    image = Image()
    for instruction in dockerfile_instructions(dockerfile.read_text()):
        keyword, _, rest = instruction.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            image = Image()
        elif keyword == "ENV":
            for item in shlex.split(rest):
                key, _, value = item.partition("=")
                image.env[key] = value
        elif keyword == "USER":
            image.user = rest.strip()
        elif keyword == "WORKDIR":
            image.workdir = rest.strip()
        elif keyword == "ENTRYPOINT":
            image.entrypoint = _exec_form(rest)
        elif keyword == "CMD":
            image.cmd = _exec_form(rest)
        elif keyword == "HEALTHCHECK":
            _, _, command = rest.partition("CMD ")
            image.healthcheck = _exec_form(command) if command else None
    return image


# ---------------------------------------------------------------------- services


def environment(service: Mapping[str, Any], project_dir: Path,
                image: Image | None = None) -> dict[str, str]:
    """The container's environment: image ENV, then env_file(s), then environment."""
    env = dict(image.env) if image else {}
    files = service.get("env_file") or []
    for entry in [files] if isinstance(files, (str, dict)) else files:
        spec = {"path": entry} if isinstance(entry, str) else entry
        path = project_dir / spec["path"]
        if not path.exists():
            if spec.get("required", True):
                raise FileNotFoundError(f"env_file {path} is required")
            continue
        env.update(parse_dotenv(path.read_text()))
    declared = service.get("environment") or {}
    if isinstance(declared, list):
        declared = dict(item.split("=", 1) if "=" in item else (item, None)
                        for item in declared)
    env.update({str(k): str(v) for k, v in declared.items() if v is not None})
    return env


def command(service: Mapping[str, Any], image: Image | None = None) -> list[str]:
    """ENTRYPOINT + (the service's command, else CMD), as Docker runs it."""
    cmd = service.get("command")
    if cmd is None:
        words = list(image.cmd) if image else []
    else:
        words = shlex.split(cmd) if isinstance(cmd, str) else [str(w) for w in cmd]
    entry = service.get("entrypoint")
    if entry is None:
        prefix = list(image.entrypoint) if image else []
    else:
        prefix = shlex.split(entry) if isinstance(entry, str) else [str(w) for w in entry]
    return prefix + words


def healthcheck(service: Mapping[str, Any], image: Image | None = None) -> list[str] | None:
    """The healthcheck's argv (CMD-SHELL through /bin/sh -c), None when there is none."""
    check = service.get("healthcheck")
    if check is None:
        return image.healthcheck if image else None
    if check.get("disable"):
        return None
    test = check.get("test")
    if test is None:
        return image.healthcheck if image else None
    if isinstance(test, str):
        return ["/bin/sh", "-c", test]
    kind, *args = test
    if kind == "NONE":
        return None
    if kind == "CMD-SHELL":
        return ["/bin/sh", "-c", " ".join(args)]
    assert kind == "CMD", f"healthcheck test {test!r}"
    return [str(a) for a in args]


def depends_on(service: Mapping[str, Any]) -> dict[str, str]:
    """{service: condition}; the short (list) form means service_started."""
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return {name: "service_started" for name in deps}
    return {name: (spec or {}).get("condition", "service_started")
            for name, spec in deps.items()}


def start_order(compose: Compose) -> list[list[str]]:
    """Services in the waves compose starts them in; fails on a cycle, an unknown
    service, or service_healthy on a service without a healthcheck."""
    services: dict[str, Any] = compose["services"]
    waves: list[list[str]] = []
    started: set[str] = set()
    for name, svc in services.items():
        for dep, condition in depends_on(svc).items():
            assert dep in services, f"{name} depends on unknown {dep}"
            assert condition in ("service_started", "service_healthy",
                                 "service_completed_successfully"), condition
            if condition == "service_healthy":
                check = services[dep].get("healthcheck") or {}
                assert check.get("test") and not check.get("disable"), \
                    f"{name} waits for {dep} to be healthy, but {dep} has no healthcheck"
    while len(started) < len(services):
        wave = sorted(n for n, svc in services.items()
                      if n not in started and set(depends_on(svc)) <= started)
        assert wave, f"depends_on cycle among {sorted(set(services) - started)}"
        waves.append(wave)
        started |= set(wave)
    return waves


def published_ports(service: Mapping[str, Any]) -> list[tuple[str | None, str, str]]:
    """(host_ip, published, target) for short and long port syntax."""
    out: list[tuple[str | None, str, str]] = []
    for entry in service.get("ports") or []:
        if isinstance(entry, dict):
            out.append((entry.get("host_ip"), str(entry.get("published", "")),
                        str(entry["target"])))
            continue
        text = str(entry).split("/", 1)[0]
        # [host_ip:]published:target, the host_ip maybe a bracketed IPv6 address
        match = re.fullmatch(r"(?:(\[[^\]]+\]|[^:]+):)?(\d+):(\d+)", text)
        assert match, f"port {entry!r} does not publish to a host port"
        host_ip = match.group(1).strip("[]") if match.group(1) else None
        out.append((host_ip, match.group(2), match.group(3)))
    return out


def named_volumes(service: Mapping[str, Any], compose: Compose) -> dict[str, str]:
    """{volume name: container path} of the named volumes a service mounts."""
    declared = set((compose.get("volumes") or {}).keys())
    out = {}
    for vol in service.get("volumes") or []:
        if isinstance(vol, dict):
            source, target = str(vol.get("source")), str(vol.get("target"))
        else:
            source, _, rest = str(vol).partition(":")
            target = rest.split(":", 1)[0]
        if source in declared:
            out[source] = target
    return out
