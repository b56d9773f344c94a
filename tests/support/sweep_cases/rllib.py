"""Bad-input sweep: the RLlib backend's Ray address (`--address`, RAY_ADDRESS, rllib.address), issue 24.

The address check is a Ray handshake with a timeout (`check_reachable`), so an address that
is not a Ray cluster is refused in seconds instead of hanging in ray.init's retries. The
servers are local stand-ins on 127.0.0.1. Only the issue's case (a port that accepts and
says nothing) waits for the handshake's timeout (HANDSHAKE_TIMEOUT_S, 5 s); the others are
refused at once.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path
from unittest import mock

from .case import Case
from .fakes import tcp_server


def _with_tcp_server(reply: bytes, body: Callable[[str], object]) -> Callable[[], object]:
    """A case that runs `body(address)` while a `tcp_server(reply)` listens."""

    def run() -> object:
        with tcp_server(reply) as address:
            return body(address)

    return run


def _with_grpc_server(body: Callable[[str], object]) -> Callable[[], object]:
    """A case that runs `body(address)` while a gRPC server without Ray's services listens."""

    def run() -> object:
        import grpc

        server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        try:
            return body(f"127.0.0.1:{port}")
        finally:
            server.stop(grace=None)

    return run


def _closed_port() -> str:
    """host:port of a port nothing listens on (bound, then closed)."""
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return f"127.0.0.1:{sock.getsockname()[1]}"


def cases(tmp: Path) -> Iterator[Case]:
    from tacocat.train.rllib.config import RllibConfig
    from tacocat.train.rllib.ray_runtime import RllibSetupError, check_reachable, resolve_address, start_ray

    expect = (RllibSetupError,)
    settings = RllibConfig()

    def via_environment(address: str) -> object:
        with mock.patch.dict(os.environ, {"RAY_ADDRESS": address}):
            return start_ray(settings, resolve_address(None, settings))

    # the case: a TCP port that accepts and says nothing (refused after the 5 s handshake timeout)
    yield Case("rllib", "--address at a silent TCP port", _with_tcp_server(b"", check_reachable), expect)

    # ports that answer, but not as Ray
    garbage = {
        "an HTTP/1.1 reply": b"HTTP/1.1 200 OK\r\n\r\nhello",
        "zero bytes": b"\x00" * 64,
        "every byte value": bytes(range(256)) * 4,
        "a Redis error": b"-ERR unknown command\r\n",
    }
    for what, reply in garbage.items():
        yield Case("rllib", f"--address at a port that sends {what}", _with_tcp_server(reply, check_reachable), expect)
    yield Case(
        "rllib",
        "ray:// at a port that sends garbage",
        _with_tcp_server(b"\xff" * 32, lambda a: check_reachable(f"ray://{a}")),
        expect,
    )
    yield Case("rllib", "--address at a gRPC server that is not Ray's GCS", _with_grpc_server(check_reachable), expect)
    yield Case(
        "rllib",
        "ray:// at a gRPC server that is not a Ray Client server",
        _with_grpc_server(lambda a: check_reachable(f"ray://{a}")),
        expect,
    )
    yield Case("rllib", "--address at a closed port", lambda: check_reachable(_closed_port()), expect)
    yield Case(
        "rllib",
        "start_ray at a port that sends garbage (before Ray starts)",
        _with_tcp_server(b"garbage" * 8, lambda a: start_ray(settings, a)),
        expect,
    )
    yield Case(
        "rllib", "RAY_ADDRESS at a port that sends garbage", _with_tcp_server(b"x" * 64, via_environment), expect
    )

    # addresses that are not host:port
    malformed = [
        "",
        "nohost",
        "127.0.0.1:",
        ":6379",
        "127.0.0.1:http",
        "127.0.0.1:-1",
        "127.0.0.1:0",
        "127.0.0.1:65536",
        "127.0.0.1:99999",
        "127.0.0.1:\uff16\uff13\uff17\uff19",
        "127.0.0.1:\u00b2",
        "http://127.0.0.1:6379",
        "gcs://127.0.0.1:6379",
        "ray://",
        "127.0.0.1:6379\n",
        "a\x00b:6379",
    ]
    for address in malformed:
        yield Case("rllib", f"--address {address!r}", lambda a=address: check_reachable(a), expect)
