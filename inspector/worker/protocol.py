"""Frames between a worker and its supervisor: a 4-byte big-endian length, then UTF-8 JSON.

The header's top bit says which JSON writer wrote the body (:data:`STDLIB_BODY`).

Engine-controlled data crosses the boundary only as JSON (never pickle): a hostile engine can
at worst send a malformed or oversized frame, which ends its own run as a fault. Only the
process that started the worker writes frames (:class:`FrameWriter` checks the pid), so a
``fork`` inside engine code cannot interleave frames of its own.
"""

from __future__ import annotations

import json
import os
import struct
import threading
from typing import Any

from inspector.jsonfast import dumps_fast, loads_fast

HEADER = struct.Struct(">I")
MAX_FRAME = 512 * 1024 * 1024  # a final trace of a 150 MB session fits; past this the stream is broken


class ProtocolError(Exception):
    """The worker sent something that is not a frame of ours (its run ends as a fault)."""


def _default(value: Any) -> Any:
    """What JSON cannot hold, as a saved trace would hold it (tuples are lists already)."""
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


# ASCII out (non-ASCII as \\u escapes, lone surrogates included): the C encoder's fastest path, and
# the bytes need no further encoding. Engine data cannot be circular once the host has recorded it.
_ENCODER = json.JSONEncoder(ensure_ascii=True, check_circular=False, separators=(",", ":"), default=_default,
                            allow_nan=True)


# The header's top bit: the body was written by the standard library (orjson refused it), so it is
# read by it too (``inspector.jsonfast``: orjson would read an integer past 64 bits as a float).
STDLIB_BODY = 1 << 31


def parse_body(header: int, body: bytes) -> Any:
    """The value of a frame's ``body`` by the writer its ``header`` names; raises what JSON parsing raises."""
    if header & STDLIB_BODY:
        return json.loads(body.decode("utf-8", "surrogatepass"))
    return loads_fast(body)


def encode(message: dict[str, Any]) -> bytes:
    return b"".join(encode_parts(message))


def encode_parts(message: dict[str, Any]) -> tuple[bytes, bytes]:
    """A frame's header and body, to be written one after the other: joined, a frame holding a
    whole session (tens of MB) was copied once more only to put four bytes before it."""
    data = dumps_fast(message, _default)
    if data is not None:
        return HEADER.pack(len(data)), data
    data = _ENCODER.encode(message).encode("ascii")
    return HEADER.pack(len(data) | STDLIB_BODY), data


class FrameWriter:
    """Writes frames to a pipe; thread-safe; silent in a forked child and after the pipe closed."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self.broken = False

    def send(self, message: dict[str, Any]) -> bool:
        if os.getpid() != self.pid or self.broken:
            return False
        parts = encode_parts(message)
        with self._lock:
            try:
                for part in parts:
                    view = memoryview(part)
                    while view:
                        n = os.write(self.fd, view)
                        view = view[n:]
            except OSError:
                self.broken = True  # the supervisor is gone: nothing left to tell
                return False
        return True


class FrameReader:
    """Accumulates bytes from a non-blocking pipe and yields complete frames."""

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self._buf = bytearray()
        self.max_frame = max_frame

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self._buf += data
        out: list[dict[str, Any]] = []
        while len(self._buf) >= HEADER.size:
            (header,) = HEADER.unpack_from(self._buf)
            size = header & ~STDLIB_BODY
            if size > self.max_frame:
                raise ProtocolError(f"the worker sent a frame of {size:,} bytes (limit {self.max_frame:,})")
            if len(self._buf) < HEADER.size + size:
                break
            body = bytes(self._buf[HEADER.size:HEADER.size + size])
            del self._buf[:HEADER.size + size]
            try:
                message = parse_body(header, body)
            except (UnicodeDecodeError, ValueError, RecursionError) as exc:
                raise ProtocolError(f"the worker sent a frame that is not JSON: {exc}") from None
            if not isinstance(message, dict) or not isinstance(message.get("type"), str):
                raise ProtocolError("the worker sent a frame without a type")
            out.append(message)
        return out
