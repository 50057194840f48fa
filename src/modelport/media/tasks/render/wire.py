"""The messages between a serving process and its render process: pickled tuples, each after its length.

serving process -> render process:
    ("render", id, runner, params, seed, inputs)   inputs: the URL fields' bytes
    ("stop", id)                                    the task was cancelled, timed out or taken over
render process -> serving process:
    ("progress", id, fraction)                      at most one per percent
    ("done", id, [RenderedFile, ...])
    ("stopped", id)                                 the render saw its stop at a progress report
    ("invalid", id, message)                        the model refused the input (`InputError`)
    ("failed", id, exception type, traceback)

Both ends are this package's code, started by the serving process over a socket pair nothing else holds,
so pickle carries the outputs (`RenderedFile`) as they are.
"""

from __future__ import annotations

import pickle
import socket
import struct
from typing import Any

HEADER = struct.Struct(">Q")


def encode(message: tuple[Any, ...]) -> list[bytes]:
    """The frame as its header and body (sent one after the other: no copy of a large body)."""
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return [HEADER.pack(len(body)), body]


def decode(body: bytes | bytearray) -> tuple[Any, ...]:
    message = pickle.loads(body)
    if not isinstance(message, tuple) or not message:
        raise ValueError("a render message is a non-empty tuple")
    return message


def receive(sock: socket.socket) -> tuple[Any, ...] | None:
    """The next message on a blocking socket; None once the other end closed it."""
    header = _exactly(sock, HEADER.size)
    if header is None:
        return None
    (size,) = HEADER.unpack(header)
    body = _exactly(sock, size)
    if body is None:
        return None
    return decode(body)


def _exactly(sock: socket.socket, size: int) -> bytearray | None:
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:])
        if n == 0:
            return None
        got += n
    return buffer
