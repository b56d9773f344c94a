"""Running the web app with uvicorn: `serve` (the `tacocat serve` command) and
`BackgroundServer` (a server in a thread, for the browser tests, the benchmark and the
screenshots)."""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

import uvicorn
from starlette.applications import Starlette

from tacocat.web.app import create_app
from tacocat.web.specs import ServedAgents

LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")
_HOST_NAME = re.compile(r"(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*")


def is_local(host: str) -> bool:
    """True for a loopback address (only this machine can connect)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(text: str) -> str:
    """An `--allowed-host` value as a Host header names it (lower case, an IPv6 address in
    brackets); ValueError unless a host name or an address, without port or wildcard."""
    name = text.strip().lower()
    try:
        address = ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        if not _HOST_NAME.fullmatch(name):
            raise ValueError(
                f"--allowed-host {text[:100]!r} is not a host name or address (give it without "
                "scheme, port or wildcard, e.g. --allowed-host tacocat.lan)"
            ) from None
        return name
    return f"[{address}]" if address.version == 6 else str(address)


def answered_hosts(host: str, allowed_hosts: Sequence[str]) -> list[str]:
    """The Host header names a server on `host` answers: this machine's local names, and the
    `allowed_hosts`. A server open to the network (`host` not loopback) needs them: without a
    Host check a page of any site could reach it through DNS rebinding, so ValueError."""
    names = [host_name(text) for text in allowed_hosts]
    if not is_local(host) and not names:
        raise ValueError(
            f"--host {host} opens the server to the network: name the host names its users type with "
            "--allowed-host NAME (repeatable), so that pages of other sites cannot reach it through "
            "DNS rebinding"
        )
    return [*LOCAL_HOSTS, *([host] if is_local(host) else []), *names]


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


def served_agents(policies: Sequence[Path]) -> ServedAgents:
    """The agents served, loading policy files from `policies` (folders; none: the defaults
    of `ServedAgents`); ValueError naming a value that is not a folder."""
    for folder in policies:
        if not folder.is_dir():
            raise ValueError(f"--policies {folder}: not a folder")
    return ServedAgents(policies or None)


def _server(app: Starlette) -> uvicorn.Server:
    """The uvicorn server of `app`. `log_config=None`: uvicorn leaves the process's logging
    alone (its default `dictConfig` closes every handler of the process, and absl's closes the
    stream it was given: a test's captured stderr, a user's log file); its warnings reach
    Python's last-resort handler on stderr."""
    return uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, log_config=None))


def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    policies: Sequence[Path] = (),
    allowed_hosts: Sequence[str] = (),
    echo: Callable[[str], object] = print,
) -> None:
    """Serve the app on host:port until Ctrl-C, saying where and who can reach it. The
    settings are checked before the port is taken (ValueError)."""
    app = create_app(allowed_hosts=answered_hosts(host, allowed_hosts), agents=served_agents(policies))
    sock = bind(host, port)
    url = url_of(sock)
    if is_local(host):
        echo(
            f"Tacocat in the browser: open {url}/  (local only: other machines cannot reach it; "
            "--host 0.0.0.0 --allowed-host NAME opens it to the network)"
        )
    else:
        echo(
            f"Tacocat in the browser: open {url}/  (listening on {host}: other machines can reach it by the names "
            f"{', '.join(allowed_hosts)}; the policy files they may load are those of "
            f"{', '.join(str(f) for f in app.state.agents.folders)})"
        )
    echo("Ctrl-C stops the server.")
    try:
        _server(app).run(sockets=[sock])
    finally:
        sock.close()


class BackgroundServer:
    """The app served on a free local port in a thread: `with BackgroundServer() as url: ...`
    (`app`: this app instead of the default one, which answers local names only)."""

    def __init__(self, host: str = "127.0.0.1", app: Starlette | None = None) -> None:
        self.sock = bind(host, 0)
        self.url = url_of(self.sock)
        self.app = app if app is not None else create_app(allowed_hosts=answered_hosts(host, ()))
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
