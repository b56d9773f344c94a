"""Running the web app with uvicorn: `serve` (the `tacocat serve` command) and
`BackgroundServer` (a server in a thread, for the browser tests, the benchmark and the
screenshots)."""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from types import TracebackType

import uvicorn
from starlette.applications import Starlette

from tacocat_web.app import create_app

LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def is_local(host: str) -> bool:
    """True for a loopback address (only this machine can connect)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: a free one); OSError naming the address if the
    port is taken or the host is not an address of this machine."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as err:
        raise OSError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as err:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def local_app(host: str) -> Starlette:
    """The app for a server on `host`: bound to a loopback address, it answers only requests
    addressed to this machine by name (Host header), so that a page of another site that a
    DNS trick points at 127.0.0.1 gets 400."""
    return create_app(allowed_hosts=[*LOCAL_HOSTS, host] if is_local(host) else None)


def _server(app: Starlette) -> uvicorn.Server:
    return uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))


def serve(host: str = "127.0.0.1", port: int = 8000, echo=print) -> None:  # noqa: ANN001 (a print-like callable)
    """Serve the app on host:port until Ctrl-C, saying where and who can reach it."""
    sock = bind(host, port)
    url = url_of(sock)
    if is_local(host):
        echo(f"Tacocat in the browser: open {url}/  (local only: other machines cannot reach it; "
             "--host 0.0.0.0 opens it to the network)")
    else:
        echo(f"Tacocat in the browser: open {url}/  (listening on {host}: other machines can reach it, and "
             "agent specs they send can load policy files from this machine)")
    echo("Ctrl-C stops the server.")
    try:
        _server(local_app(host)).run(sockets=[sock])
    finally:
        sock.close()


class BackgroundServer:
    """The app served on a free local port in a thread: `with BackgroundServer() as url: ...`."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.sock = bind(host, 0)
        self.url = url_of(self.sock)
        self.app = local_app(host)
        self.server = _server(self.app)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the web server did not start")
            time.sleep(0.02)
        return self.url

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
