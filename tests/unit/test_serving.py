"""The transport ``nous-memory serve`` answers through: a response's head waits for its
body, and both reach the socket in one send."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.types import Receive, Scope, Send
from uvicorn.server import ServerState

from nous_memory.api.serving import HOLD_BYTES, OneSendTransport, server_config


class Recording(asyncio.Transport):
    """A socket transport stand-in that keeps every write it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        assert not self.closed, "written after close"
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(
            name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0


async def test_a_short_write_leaves_with_the_next_one() -> None:
    raw = Recording()
    transport = OneSendTransport(raw, asyncio.get_running_loop())
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.write(b"")
    assert raw.writes == [] and transport.get_write_buffer_size() == 19
    transport.write(b"body")  # at once: nothing waits for the loop once the body came
    assert raw.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody"]
    transport.write(b"more")
    transport.write(b"again")
    assert raw.writes[1:] == [b"moreagain"]
    await asyncio.sleep(0)  # the turn ends: nothing was left to send
    assert len(raw.writes) == 2 and transport.get_write_buffer_size() == 0


async def test_a_lone_short_write_leaves_when_the_loop_turns() -> None:
    raw = Recording()
    transport = OneSendTransport(raw, asyncio.get_running_loop())
    transport.write(b"HTTP/1.1 204 No Content\r\n\r\n")
    assert raw.writes == []
    await asyncio.sleep(0)
    assert raw.writes == [b"HTTP/1.1 204 No Content\r\n\r\n"]


async def test_long_writes_go_out_at_once_and_close_sends_what_is_held() -> None:
    raw = Recording()
    transport = OneSendTransport(raw, asyncio.get_running_loop())
    long = b"x" * HOLD_BYTES
    transport.write(long)
    assert raw.writes == [long]
    transport.write(b"head")
    transport.write(long)  # not copied into one buffer with the head
    assert raw.writes[1:] == [b"head", long]
    transport.write(b"tail")
    transport.close()
    assert raw.writes[3:] == [b"tail"] and raw.closed
    await asyncio.sleep(0)  # the flush that was due finds nothing, and writes nothing
    assert len(raw.writes) == 4


async def test_abort_drops_what_is_held() -> None:
    raw = Recording()
    transport = OneSendTransport(raw, asyncio.get_running_loop())
    transport.write(b"never sent")
    transport.abort()
    await asyncio.sleep(0)
    assert raw.writes == [] and raw.aborted


async def test_serve_protocol_answers_a_request_in_one_send() -> None:
    """uvicorn writes the head when the app starts its response and the body after it;
    through serve's protocol the client gets both from one send."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        await receive()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", b"11")]})
        await send({"type": "http.response.body", "body": b'{"ok":true}'})

    config = server_config(app, host="127.0.0.1", port=0, lifespan="off",
                           log_config=None, access_log=False)
    config.load()
    state = ServerState()
    protocol = config.http_protocol_class(config=config, server_state=state,  # type: ignore[call-arg]
                                          app_state={})
    raw = Recording()
    protocol.connection_made(raw)
    for _ in range(2):  # a kept-alive connection answers each request the same way
        raw.writes.clear()
        protocol.data_received(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                               b"Content-Length: 2\r\n\r\n{}")
        for _ in range(50):
            if raw.writes:
                break
            await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert len(raw.writes) == 1, raw.writes
        head, body = raw.writes[0].split(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK") and body == b'{"ok":true}'
    protocol.connection_lost(None)
    await asyncio.gather(*state.tasks)
