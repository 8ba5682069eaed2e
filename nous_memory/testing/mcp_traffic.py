"""Generated MCP traffic for fuzzing both transports, and drivers that time each answer.

``Traffic`` makes invalid requests of every kind a careless or hostile client sends: tool
calls that break one rule of the tool's own input schema (a string over its
``maxLength``, a wrong type, an unknown or missing argument, a number out of range, a
value outside an enum), unknown tools and methods, another agent's memory, lone
surrogates, batches, lines cut in half, bad UTF-8, binary noise and (on request) a
10 MB line.  Every one of them must be answered with an error, and none may change a
row.  ``StdioDriver`` (``nous-memory mcp`` as a subprocess) and ``HttpDriver`` (a served
``/mcp``) send one request at a time and time the answer; ``row_snapshot`` reads every
row of every table, to show that nothing changed.
"""

from __future__ import annotations

import json
import queue
import random
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx

SURROGATE = "\\ud800"  # as JSON text: a lone surrogate the decoder accepts
HUGE_BYTES = 10 * 1024 * 1024
KINDS = ("schema", "schema", "schema", "unknown_tool", "foreign", "surrogate", "cut",
         "bad_utf8", "binary", "batch", "not_object", "unknown_method", "long_method",
         "envelope")


@dataclass(frozen=True, slots=True)
class Probe:
    """One request: its bytes (a line without its newline, or an HTTP body) and the ids
    its answer may carry (None: the line is too broken to show its id)."""

    kind: str
    body: bytes
    ids: tuple[int | str | None, ...]


def _request(ident: int, method: str, params: Mapping[str, Any] | None = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


class Traffic:
    """Invalid requests from the tools' own listing (``tools/list``'s ``tools``)."""

    def __init__(self, tools: Sequence[Mapping[str, Any]], *, foreign_ids: Sequence[str] = (),
                 foreign_agent: str = "someone-else") -> None:
        self._tools = [(str(t["name"]), dict(t.get("inputSchema") or t.get("input_schema")
                                             or {})) for t in tools]
        self._foreign_ids = list(foreign_ids) or ["00000000-0000-4000-8000-000000000000"]
        self._foreign_agent = foreign_agent

    def probes(self, rng: random.Random, count: int, first_id: int) -> Iterator[Probe]:
        for n in range(count):
            yield self.probe(rng, first_id + n, rng.choice(KINDS))

    def probe(self, rng: random.Random, ident: int, kind: str) -> Probe:
        name, schema = rng.choice(self._tools)
        valid = _valid_arguments(rng, schema)
        if kind == "schema":
            return Probe(kind, self._call(ident, name, _broken(rng, schema, valid)).encode(),
                         (ident,))
        if kind == "unknown_tool":
            return Probe(kind, self._call(ident, f"{name}_{rng.randrange(10**6)}", valid)
                         .encode(), (ident,))
        if kind == "foreign":  # another agent's memory, or its name
            args = ({"ref": rng.choice(self._foreign_ids)} if rng.random() < 0.5
                    else {**valid, "agent_id": self._foreign_agent})
            return Probe(kind, self._call(ident, rng.choice(["memory_expand", "memory_history",
                                                              "memory_forget"])
                                          if "ref" in args else name, args).encode(), (ident,))
        if kind == "surrogate":
            text = self._call(ident, "memory_search", {"query": "x"})
            return Probe(kind, text.replace('"query": "x"', f'"query": "a{SURROGATE}b"')
                         .encode(), (ident,))
        if kind == "cut":
            whole = self._call(ident, name, valid).encode()
            return Probe(kind, whole[:rng.randrange(1, len(whole) - 1)], (ident, None))
        if kind == "bad_utf8":
            line = self._call(ident, "memory_search", {"query": "tea or coffee"}).encode()
            at = line.index(b"tea")
            return Probe(kind, line[:at] + bytes([rng.choice([0x80, 0xC3, 0xFF, 0xED])])
                         + line[at:], (ident, None))
        if kind == "binary":
            noise = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
            noise = noise.replace(b"\n", b"\x00").replace(b"\r", b"\x00")
            return Probe(kind, b"\xfe" + noise, (None,))
        if kind == "batch":
            return Probe(kind, f"[{_request(ident, 'tools/list')}]".encode(), (None,))
        if kind == "not_object":
            return Probe(kind, rng.choice([b"42", b'"tools/list"', b"null", b"true", b"{}"]),
                         (None,))
        if kind == "unknown_method":
            return Probe(kind, _request(ident, f"nothing/{rng.randrange(10**6)}").encode(),
                         (ident,))
        if kind == "long_method":
            return Probe(kind, _request(ident, "x" * rng.randrange(200, 5000)).encode(),
                         (ident,))
        if kind == "envelope":
            bad = rng.choice([{"jsonrpc": "1.0", "id": ident, "method": "tools/list"},
                              {"jsonrpc": "2.0", "id": ident, "method": "tools/call",
                               "params": "memory_search"},
                              {"jsonrpc": "2.0", "id": ident, "method": 7}])
            return Probe(kind, json.dumps(bad).encode(), (ident, None))
        if kind == "huge":
            return Probe(kind, self._call(ident, "memory_search", {"query": "a" * HUGE_BYTES})
                         .encode(), (ident, None))
        raise ValueError(f"unknown probe kind {kind}")

    def broken_call(self, rng: random.Random) -> tuple[str, dict[str, Any]]:
        """A tool call (name, arguments) that breaks one rule of the tool's schema, for a
        client that builds the request itself (the MCP SDK's)."""
        name, schema = rng.choice(self._tools)
        return name, _broken(rng, schema, _valid_arguments(rng, schema))

    def _call(self, ident: int, name: str, arguments: Mapping[str, Any]) -> str:
        return _request(ident, "tools/call", {"name": name, "arguments": dict(arguments)})


def _valid_arguments(rng: random.Random, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The required arguments, each a small valid value (a ref that names nothing)."""
    properties = schema.get("properties", {})
    return {name: _value(rng, properties.get(name, {}))
            for name in schema.get("required", [])}


def _value(rng: random.Random, prop: Mapping[str, Any]) -> Any:
    if "enum" in prop:
        return rng.choice(prop["enum"])
    kind = prop.get("type")
    if kind == "integer":
        return int(prop.get("minimum", 1))
    if kind == "number":
        return float(prop.get("minimum", 0))
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    return "fact:0000abcd" if "ref" in str(prop.get("description", "")).lower() else "tea"


def _broken(rng: random.Random, schema: Mapping[str, Any],
            valid: Mapping[str, Any]) -> dict[str, Any]:
    """``valid`` with one rule of ``schema`` broken, so the call can never be valid."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    ways: list[tuple[str, str]] = [("unknown", "")]
    ways += [("missing", name) for name in schema.get("required", [])]
    for name, prop in properties.items():
        ways.append(("type", name))
        if "maxLength" in prop:
            ways.append(("long", name))
        if "maximum" in prop or "minimum" in prop:
            ways.append(("range", name))
        if "enum" in prop:
            ways.append(("enum", name))
        if "maxItems" in prop:
            ways.append(("items", name))
    way, name = rng.choice(ways)
    args = dict(valid)
    prop = properties.get(name, {})
    if way == "unknown":
        args[f"not_an_argument_{rng.randrange(1000)}"] = "x"
    elif way == "missing":
        del args[name]
    elif way == "type":
        args[name] = {"string": 12, "integer": "twelve", "number": "many", "boolean": "yes",
                      "array": "one"}.get(str(prop.get("type")), [[1]])
    elif way == "long":
        args[name] = "a" * (int(prop["maxLength"]) + rng.choice([1, 100, 1_000_000]))
    elif way == "range":
        args[name] = (prop["maximum"] + rng.choice([1, 10**9]) if "maximum" in prop
                      else prop["minimum"] - rng.choice([1, 10**9]))
    elif way == "enum":
        args[name] = f"not-{rng.randrange(1000)}"
    else:  # items
        args[name] = ["x"] * (int(prop["maxItems"]) + 1)
    return args


def answer_problem(probe: Probe, answer: bytes, *, secrets: Sequence[str] = ()) -> str | None:
    """Why ``answer`` is not an error answer to ``probe`` (None when it is one)."""
    text = answer.decode("utf-8", "replace")
    for secret in secrets:
        if secret in text:
            return f"another agent's text ({secret!r}) in the answer"
    try:
        message = json.loads(answer)
    except ValueError:
        return f"not JSON: {text[:200]!r}"
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return f"not a JSON-RPC message: {text[:200]!r}"
    if message.get("id") not in probe.ids:
        return f"answered id {message.get('id')!r}, expected one of {probe.ids}"
    result = message.get("result")
    if "error" not in message and not (isinstance(result, dict) and result.get("isError")):
        return f"an invalid {probe.kind} request succeeded: {text[:200]!r}"
    return None


class StdioDriver:
    """``nous-memory mcp`` as a subprocess; one request line at a time."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str]) -> None:
        self._proc = subprocess.Popen(list(argv), env=dict(env), stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._stderr: list[bytes] = []
        self._readers = [threading.Thread(target=self._read, daemon=True),
                         threading.Thread(target=self._read_err, daemon=True)]
        for reader in self._readers:
            reader.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._lines.put(line)

    def _read_err(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            self._stderr.append(line)

    def initialize(self, timeout: float = 120.0) -> dict[str, Any]:
        """The handshake; the ``tools/list`` result."""
        hello = {"protocolVersion": "2025-06-18", "capabilities": {},
                 "clientInfo": {"name": "fuzz", "version": "1"}}
        answer, _ = self.ask(_request(0, "initialize", hello).encode(), timeout)
        if answer is None:
            raise RuntimeError("no answer to initialize: " + self.stderr()[-2000:])
        self.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        listed, _ = self.ask(_request(0, "tools/list").encode(), timeout)
        assert listed is not None
        result: dict[str, Any] = json.loads(listed)["result"]
        return result

    def send(self, body: bytes) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(body + b"\n")
        self._proc.stdin.flush()

    def ask(self, body: bytes, timeout: float) -> tuple[bytes | None, float]:
        """The answer line (None after ``timeout`` s) and the milliseconds it took."""
        start = time.perf_counter()
        self.send(body)
        try:
            answer = self._lines.get(timeout=max(0.0, timeout - (time.perf_counter() - start)))
        except queue.Empty:
            return None, (time.perf_counter() - start) * 1000
        return answer, (time.perf_counter() - start) * 1000

    def alive(self) -> bool:
        return self._proc.poll() is None

    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    def close(self) -> None:
        """End the process, then its pipes (the readers stop at end of file)."""
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for reader in self._readers:
            reader.join(timeout=10)
        for pipe in (self._proc.stdout, self._proc.stderr):
            if pipe is not None:
                pipe.close()


class HttpDriver:
    """A served ``/mcp``; one POST per request."""

    def __init__(self, url: str, headers: Mapping[str, str] | None = None) -> None:
        self._url = url
        self._http = httpx.Client(headers={
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json", **(headers or {})})

    def ask(self, body: bytes, timeout: float) -> tuple[bytes | None, float]:
        start = time.perf_counter()
        try:
            response = self._http.post(self._url, content=body, timeout=timeout)
        except httpx.TimeoutException:
            return None, (time.perf_counter() - start) * 1000
        return response.content, (time.perf_counter() - start) * 1000

    def tools(self, timeout: float = 60.0) -> list[dict[str, Any]]:
        answer, _ = self.ask(_request(0, "tools/list").encode(), timeout)
        assert answer is not None
        tools: list[dict[str, Any]] = json.loads(answer)["result"]["tools"]
        return tools

    def close(self) -> None:
        self._http.close()


async def row_snapshot(dsn: str) -> dict[str, set[str]]:
    """Every row of every table of the public schema, as text."""
    conn = await asyncpg.connect(dsn)
    try:
        tables = [r["table_name"] for r in await conn.fetch(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'public' AND table_type = 'BASE TABLE'")]
        return {table: {r[0] for r in await conn.fetch(
            f'SELECT t::text FROM "{table}" t')} for table in tables}
    finally:
        await conn.close()


def rows_changed(before: Mapping[str, set[str]], after: Mapping[str, set[str]]) -> int:
    """Rows inserted, deleted or changed between two snapshots (a change counts once)."""
    return sum(max(len(before.get(t, set()) - after.get(t, set())),
                   len(after.get(t, set()) - before.get(t, set())))
               for t in set(before) | set(after))
