"""How ``nous-memory serve`` runs the app under uvicorn: a response leaves in one send.

uvicorn writes a response's status line and headers to the socket as soon as the app
starts the response, and its body in a second write.  On loopback each write wakes the
client, which reads the head, finds no body yet and sleeps again until the second
write: two wake-ups where one would do.  On this 2-core machine under load a wake-up
can cost milliseconds (the woken client takes the core, and the server waits for it
back), and an MCP tool call over HTTP paid that on every call.  ``OneSendTransport``
holds a short write (a response head) until the next write, which takes it along, or
until the event loop next turns, whichever comes first: a head and the body sent right
after it leave together, and nothing waits longer than the turn it was written in.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import uvicorn
from uvicorn.protocols.http.auto import AutoHTTPProtocol

HOLD_BYTES = 16 * 1024
"""A write shorter than this (a response head) waits for what follows it; a longer one
goes out at once."""


class OneSendTransport(asyncio.Transport):
    """A socket transport whose short write goes out with the write after it."""

    def __init__(self, transport: asyncio.Transport,
                 loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._transport = transport
        self._loop = loop
        self._held = b""
        self._flush_due = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if self._held:
            held, self._held = self._held, b""
            if len(data) < HOLD_BYTES:
                self._transport.write(held + data)
                return
            self._transport.write(held)
        if len(data) >= HOLD_BYTES:
            self._transport.write(data)
            return
        self._held = bytes(data)
        if not self._flush_due:
            self._flush_due = True
            self._loop.call_soon(self.flush)

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def flush(self) -> None:
        """Send a held write now (nothing once the connection is closing)."""
        self._flush_due = False
        held, self._held = self._held, b""
        if held and not self._transport.is_closing():
            self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def abort(self) -> None:
        self._held = b""
        self._transport.abort()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + len(self._held)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)


class OneSendHTTPProtocol(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    """uvicorn's HTTP/1.1 protocol (httptools when installed, else h11) over a
    ``OneSendTransport``."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a socket transport, asyncio's or uvloop's (which does not derive from asyncio's)
        socket = cast(asyncio.Transport, transport)
        super().connection_made(OneSendTransport(socket, asyncio.get_running_loop()))


def server_config(app: Any, *, host: str, port: int, **options: Any) -> uvicorn.Config:
    """The uvicorn configuration ``serve`` runs ``app`` with."""
    return uvicorn.Config(app, host=host, port=port, http=OneSendHTTPProtocol, **options)
