"""What the MCP transports make of one line (``tools.mcp_lines``) and how the stdio
transport cuts its input into lines (``tools.mcp_stdio.read_lines``)."""

from __future__ import annotations

import json

import pytest

from nous_memory.tools.mcp_lines import MAX_LINE_BYTES, Refusal, check_line, peek_id
from nous_memory.tools.mcp_stdio import read_lines

CALL = b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "memory_search"'


@pytest.mark.parametrize(("line", "code", "ident"), [
    (b"{not json", -32700, None),
    (CALL, -32700, 7),  # half a line: its id still shows, so the caller's call ends
    (b'{"jsonrpc": "2.0", "id": 12', -32700, None),  # 12 may be the head of 123
    (b'{"params": {"id": 3}, "jsonrpc": "2.0", "meth', -32700, None),  # not the outer id
    (b"\xff\xfe\x00 noise", -32700, None),
    (b'[{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]', -32600, None),
    (b"42", -32600, None),
    (b'{"jsonrpc": "1.0", "id": "a", "method": "tools/list"}', -32600, "a"),
    (b'{"jsonrpc": "2.0", "id": 5, "method": "' + b"x" * 500 + b'"}', -32601, 5),
    (b'{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "memory_search",'
     b' "arguments": {"query": "a\\ud800"}}}', -32602, 6),
])
def test_lines_the_server_cannot_take_are_refused_with_their_id(
        line: bytes, code: int, ident: object) -> None:
    refusal = check_line(line)
    assert isinstance(refusal, Refusal), refusal
    assert (refusal.code, refusal.id) == (code, ident)
    answer = json.loads(refusal.encoded())
    assert answer == {"jsonrpc": "2.0", "id": ident,
                      "error": {"code": code, "message": refusal.message}}
    assert b"xxxxxxxx" not in refusal.encoded()  # nothing of the line but its id


def test_an_oversize_line_says_its_size_and_a_blank_one_asks_nothing() -> None:
    refusal = check_line(b'{"jsonrpc": "2.0", "id": 9, "method": "x", ', MAX_LINE_BYTES + 5)
    assert isinstance(refusal, Refusal) and refusal.id == 9
    assert refusal.message.endswith(f"longer than {MAX_LINE_BYTES} bytes "
                                    f"(got {MAX_LINE_BYTES + 5})")
    assert check_line(b"  \r") is None
    assert peek_id('{"id": "x\\"y", "a": 1}') == 'x"y'


async def test_lines_are_read_in_pieces_with_oversize_ones_cut_to_their_head() -> None:
    big = b"y" * (MAX_LINE_BYTES + 10)
    chunks = [b"one\ntw", b"o\n", big[:100], big[100:], b"\nlast"]

    async def read() -> bytes:
        return chunks.pop(0) if chunks else b""

    lines = [(line[:5], size) async for line, size in read_lines(read)]
    assert lines == [(b"one", 3), (b"two", 3), (b"yyyyy", MAX_LINE_BYTES + 10), (b"last", 4)]
