"""The one way out of a bubblewrap sandbox: a proxy, run by the supervisor, that reaches only the endpoints the config names.

Bubblewrap can only take the network away or leave all of it; it cannot filter by host. So a
worker always runs in its own network namespace (``--unshare-net``: loopback only), and when the
config names an endpoint its one exit is this proxy:

- **Supervisor side** (:class:`EgressProxy`): listens on a Unix socket in the worker's own folder
  (a file, so it crosses the network namespace; a socket connects on a read-only mount too), speaks HTTP proxy — ``CONNECT host:port`` for
  https, an absolute-form request for plain http — and connects only to a ``host:port`` some
  configured ``base_url`` names; anything else gets ``403`` and is remembered in :attr:`refused`.
  It resolves the name itself (the sandbox has no DNS); TLS stays end to end.
- **Worker side** (:func:`serve_in_sandbox`): before any engine code runs, a loopback listener
  inside the namespace relays each connection to that socket, and ``HTTP(S)_PROXY`` /
  ``ALL_PROXY`` point at it (``NO_PROXY`` cleared), so the ``openai`` SDK (httpx), ``requests``
  and ``urllib`` — and subprocesses — go through it. A client that ignores proxy variables, or
  a raw socket, reaches nothing: there is no route out of the namespace.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterable
from urllib.parse import urlsplit

SOCKET_NAME = "net"
MAX_SOCKET_PATH = 100  # bytes; Linux allows 107 in a Unix socket's address
MAX_HEAD = 64 * 1024
MAX_CONNECTIONS = 64
CONNECT_TIMEOUT = 15.0
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
_HOP_HEADERS = (b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive")


def endpoint_hosts(urls: Iterable[str]) -> list[tuple[str, int]]:
    """``(host, port)`` of each endpoint URL (the scheme's port when none is written); unparsable ones are skipped."""
    out: set[tuple[str, int]] = set()
    for url in urls:
        try:
            parts = urlsplit(url if "://" in url else "http://" + url)
            host, port = parts.hostname, parts.port
        except ValueError:
            continue
        if not host:
            continue
        out.add((host.lower(), port or (443 if parts.scheme == "https" else 80)))
    return sorted(out)


def splice(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until both directions end, then close both (one thread per direction)."""

    def pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    back = threading.Thread(target=pump, args=(b, a), name="inspector-egress-pump", daemon=True)
    back.start()
    pump(a, b)
    back.join()
    for s in (a, b):
        with contextlib.suppress(OSError):
            s.close()


def _read_head(conn: socket.socket) -> tuple[bytes, bytes]:
    """The request head (through the blank line) and whatever followed it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError("the client closed before sending a request")
        data += chunk
        if len(data) > MAX_HEAD:
            raise ConnectionError("the request head is too large")
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


class EgressProxy:
    """The supervisor's end: an HTTP proxy on a Unix socket that reaches only ``allowed`` hosts."""

    def __init__(self, folder: str, allowed: Iterable[tuple[str, int]]) -> None:
        self.path = os.path.join(folder, SOCKET_NAME)
        self._own_folder: str | None = None
        if len(self.path.encode()) > MAX_SOCKET_PATH:  # a long TMPDIR: a short private folder instead (the
            self._own_folder = tempfile.mkdtemp(prefix="ci-net-", dir="/tmp")  # sandbox sees /tmp read-only,
            self.path = os.path.join(self._own_folder, SOCKET_NAME)  # and a socket connects there all the same)
        self.allowed = {(h.lower(), int(p)) for h, p in allowed}
        #: ``host:port`` the worker asked for and did not get, in order (each once)
        self.refused: list[str] = []
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def start(self) -> EgressProxy:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.path)
        os.chmod(self.path, 0o600)
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, name="inspector-egress", daemon=True).start()
        return self

    def _accept(self) -> None:
        listener = self._listener
        while listener is not None:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with self._lock:
                if len(self._open) >= MAX_CONNECTIONS:
                    conn.close()
                    continue
                self._open.add(conn)
            threading.Thread(target=self._serve, args=(conn,), name="inspector-egress-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        upstream = None
        try:
            conn.settimeout(CONNECT_TIMEOUT)
            head, rest = _read_head(conn)
            line, _, headers = head.partition(b"\r\n")
            method, target, version = (line.decode("latin-1").split(" ") + ["", ""])[:3]
            if method.upper() == "CONNECT":
                host, _, port_text = target.rpartition(":")
                host, port, forward = host.strip("[]"), port_text, None
            else:
                parts = urlsplit(target)
                if parts.scheme != "http" or not parts.hostname:
                    return self._deny(conn, 400, f"not a proxy request: {target[:200]}")
                host, port = parts.hostname, str(parts.port or 80)
                path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
                kept = [h for h in headers.split(b"\r\n") if h and h.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS]
                # One request per connection: the next one may name another host, and it must be checked too.
                forward = b"\r\n".join([f"{method} {path} {version}".encode("latin-1"), *kept, b"Connection: close"])
                forward += b"\r\n\r\n" + rest
            try:
                wanted = (host.lower(), int(port))
            except ValueError:
                return self._deny(conn, 400, f"no port in {target[:200]}")
            if wanted not in self.allowed:
                name = f"{wanted[0]}:{wanted[1]}"
                with self._lock:
                    if name not in self.refused:
                        self.refused.append(name)
                return self._deny(conn, 403, f"the sandbox lets engines reach only the configured endpoint "
                                             f"({', '.join(f'{h}:{p}' for h, p in sorted(self.allowed))}), not {name}")
            try:
                upstream = socket.create_connection(wanted, timeout=CONNECT_TIMEOUT)
            except OSError as exc:
                return self._deny(conn, 502, f"cannot reach {wanted[0]}:{wanted[1]}: {exc.strerror or exc}")
            upstream.settimeout(None)
            conn.settimeout(None)
            if forward is None:
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if rest:
                    upstream.sendall(rest)
            else:
                upstream.sendall(forward)
            with self._lock:
                self._open.add(upstream)
            splice(conn, upstream)
        except (OSError, ConnectionError, UnicodeDecodeError):
            pass
        finally:
            with self._lock:
                self._open.discard(conn)
                if upstream is not None:
                    self._open.discard(upstream)
            for s in (conn, upstream):
                if s is not None:
                    with contextlib.suppress(OSError):
                        s.close()

    @staticmethod
    def _deny(conn: socket.socket, status: int, why: str) -> None:
        reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
        body = (why + "\n").encode("utf-8", "replace")
        with contextlib.suppress(OSError):
            conn.sendall(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                         f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)

    def stop(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.close()
        with self._lock:
            still = list(self._open)
            self._open.clear()
        for s in still:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        if self._own_folder is not None:
            shutil.rmtree(self._own_folder, ignore_errors=True)


def serve_in_sandbox(path: str) -> str:
    """Worker side: relay loopback connections to the supervisor's proxy at ``path``; point the proxy
    variables at the relay. Returns the proxy URL."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)

    def relay(conn: socket.socket) -> None:
        out = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            out.connect(path)
        except OSError:
            conn.close()
            out.close()
            return
        splice(conn, out)

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=relay, args=(conn,), name="inspector-egress-relay", daemon=True).start()

    threading.Thread(target=accept, name="inspector-egress-relay", daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    for name in _PROXY_VARS:
        os.environ[name] = url
    for name in ("NO_PROXY", "no_proxy"):
        os.environ.pop(name, None)
    return url
