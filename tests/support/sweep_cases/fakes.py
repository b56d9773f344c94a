"""Stand-ins shared by the sweep's cases and the tests: a silent or garbage-sending TCP server
on 127.0.0.1, and a zip whose central directory lies about a member."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def tcp_server(reply: bytes | None) -> Iterator[str]:
    """A TCP server on 127.0.0.1 that accepts every connection, sends `reply` (None or b"":
    nothing) and keeps it open; yields its host:port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.05)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            accepted.append(conn)
            if reply:
                conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()
        server.close()


def patch_zip_directory(path: Path, member: str, *, file_size: int | None = None, flag_bits: int | None = None) -> Path:
    """Rewrite one member's entry in the zip's central directory (what zipfile trusts): its
    uncompressed size and/or its flag bits. LookupError if the member is not there."""
    data = bytearray(path.read_bytes())
    at = struct.unpack_from("<I", data, data.rfind(b"PK\x05\x06") + 16)[0]  # the directory's offset
    while data[at : at + 4] == b"PK\x01\x02":
        name_len = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46 : at + 46 + name_len] == member.encode():
            if file_size is not None:
                struct.pack_into("<I", data, at + 24, file_size)
            if flag_bits is not None:
                struct.pack_into("<H", data, at + 8, flag_bits)
            path.write_bytes(bytes(data))
            return path
        at += 46 + name_len + sum(struct.unpack_from("<HH", data, at + 30))
    raise LookupError(f"no {member} in {path}")
