"""The stdio transport of ``nous-memory mcp``, in place of the SDK's reader.

Every line a client writes gets an answer: lines the server can take go to it, and the
rest (see ``mcp_lines``) are answered here at once with a JSON-RPC error and one log
line on stderr, and the session reads on.  Lines are read in bounded pieces, so a line
of any size costs at most ``MAX_LINE_BYTES`` of memory.

While serving, file descriptor 0 reads the null device and 1 writes to stderr (as the
SDK's transport does), so nothing the store or the model runtime prints can corrupt
the protocol; the protocol itself uses private duplicates of both.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from .mcp_lines import HEAD_BYTES, MAX_LINE_BYTES, Refusal, check_line, encode_message

log = logging.getLogger("nous_memory.mcp")

READ_BYTES = 64 * 1024
QUEUED_MESSAGES = 64  # parsed messages waiting for the server; refusals never wait

Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception],
                MemoryObjectSendStream[SessionMessage]]


@contextmanager
def claimed_std_fds() -> Iterator[tuple[int, int]]:
    """Private duplicates of fds 0 and 1 for the protocol; meanwhile fd 0 reads the null
    device and fd 1 writes to stderr.  Both are put back on exit."""
    sys.stdout.flush()
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        yield wire_in, wire_out
    finally:
        sys.stdout.flush()
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_out)  # wire_in stays open: a reading thread may still block on it


async def read_lines(read: Callable[[], Awaitable[bytes]]) -> AsyncIterator[tuple[bytes, int]]:
    """(line, size) for each line until end of input (a last line without a newline
    included); a line over ``MAX_LINE_BYTES`` comes as its head and its full size."""
    kept = bytearray()
    size = 0
    while chunk := await read():
        start = 0
        while start <= len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if len(kept) < MAX_LINE_BYTES:
                kept += piece[:MAX_LINE_BYTES - len(kept)]
            size += len(piece)
            if end < 0:
                break
            yield (bytes(kept) if size <= MAX_LINE_BYTES else bytes(kept[:HEAD_BYTES])), size
            kept.clear()
            size, start = 0, end + 1
    if size:
        yield (bytes(kept) if size <= MAX_LINE_BYTES else bytes(kept[:HEAD_BYTES])), size


class LineTransport:
    """Reads lines from one file descriptor and writes messages to another."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._read_fd = read_fd
        self._write_fd = write_fd
        self._lock = anyio.Lock()

    async def _read(self) -> bytes:
        return await anyio.to_thread.run_sync(os.read, self._read_fd, READ_BYTES,
                                              abandon_on_cancel=True)

    async def emit(self, data: bytes) -> None:
        """One whole line to the client; lines from the server and refusals never mix."""
        async with self._lock:
            await anyio.to_thread.run_sync(self._write_all, data)

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._write_fd, view):]

    async def pump_in(self, to_server: MemoryObjectSendStream[SessionMessage | Exception]
                      ) -> None:
        async with to_server:
            async for raw, size in read_lines(self._read):
                verdict = check_line(raw, size)
                if isinstance(verdict, Refusal):
                    log.warning("mcp: refused a request line of %d bytes (id %s): %s",
                                size, "none" if verdict.id is None else "given",
                                verdict.message)
                    await self.emit(verdict.encoded())
                elif verdict is not None:
                    await to_server.send(verdict)

    async def pump_out(self, from_server: MemoryObjectReceiveStream[SessionMessage]) -> None:
        async with from_server:
            async for message in from_server:
                try:
                    await self.emit(encode_message(message))
                except OSError as exc:  # the client went away; the input side ends too
                    log.warning("mcp: cannot write to the client: %s", exc)
                    return


@asynccontextmanager
async def line_server(read_fd: int, write_fd: int) -> AsyncIterator[Streams]:
    """The (read, write) streams ``Server.run`` takes, over two file descriptors."""
    transport = LineTransport(read_fd, write_fd)
    to_server, server_in = anyio.create_memory_object_stream[SessionMessage | Exception](
        QUEUED_MESSAGES)
    server_out, from_server = anyio.create_memory_object_stream[SessionMessage](0)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(transport.pump_in, to_server)
        tasks.start_soon(transport.pump_out, from_server)
        yield server_in, server_out
        tasks.cancel_scope.cancel()


@asynccontextmanager
async def stdio_lines() -> AsyncIterator[Streams]:
    """``line_server`` over this process's stdin and stdout."""
    with claimed_std_fds() as (wire_in, wire_out):
        async with line_server(wire_in, wire_out) as streams:
            yield streams
