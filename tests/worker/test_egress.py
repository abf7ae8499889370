"""The sandbox's one way out reaches the configured endpoint and nothing else.

Two HTTP servers on 127.0.0.1 stand in for the world: one is the configured endpoint, the other
any host an engine should not reach. The proxy's rules are checked directly (anywhere), and then
from inside a real bubblewrap worker, by an engine that tries every way out it can.
"""

from __future__ import annotations

import io
import json
import os
import socket
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from inspector.worker import sandbox
from inspector.worker.egress import EgressProxy, endpoint_hosts

BWRAP = sandbox.choose({}).kind == "bubblewrap"


def _server(body: bytes) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server API
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


@pytest.fixture
def hosts() -> Iterator[tuple[int, int]]:
    """(endpoint port, other port)."""
    endpoint, other = _server(b"endpoint"), _server(b"other")
    try:
        yield endpoint.server_address[1], other.server_address[1]
    finally:
        for srv in (endpoint, other):
            srv.shutdown()
            srv.server_close()


@pytest.fixture(params=["short", "long"])
def folder(request: pytest.FixtureRequest) -> Iterator[str]:
    """The worker's folder; a long one cannot hold a Unix socket (107 bytes at most)."""
    with tempfile.TemporaryDirectory(prefix="egress-") as d:
        if request.param == "long":
            d = os.path.join(d, "x" * 120)
            os.mkdir(d)
        yield d


def _ask(path: str, request: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(path)
        s.sendall(request)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
            if request.startswith(b"CONNECT") and b"\r\n\r\n" in out and b" 200 " in out.split(b"\r\n")[0]:
                s.sendall(b"GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                request = b""
        return out


def test_endpoint_hosts_take_the_scheme_port_when_none_is_written():
    assert endpoint_hosts(["https://API.example.com/v1", "http://127.0.0.1:8080/v1", "localhost:9", "::nonsense"]) == [
        ("127.0.0.1", 8080), ("api.example.com", 443), ("localhost", 9)]


def test_the_proxy_connects_only_to_the_endpoint(hosts, folder):
    endpoint, other = hosts
    proxy = EgressProxy(folder, [("127.0.0.1", endpoint)]).start()
    try:
        tunnel = _ask(proxy.path, f"CONNECT 127.0.0.1:{endpoint} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert tunnel.startswith(b"HTTP/1.1 200 Connection established") and tunnel.endswith(b"endpoint")
        plain = _ask(proxy.path, f"GET http://127.0.0.1:{endpoint}/v1/models HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert plain.startswith(b"HTTP/1.1 200") and plain.endswith(b"endpoint")
        for request in (f"CONNECT 127.0.0.1:{other} HTTP/1.1\r\n\r\n", f"GET http://127.0.0.1:{other}/ HTTP/1.1\r\n\r\n",
                        f"CONNECT localhost:{endpoint} HTTP/1.1\r\n\r\n"):  # the name is not the endpoint's
            refused = _ask(proxy.path, request.encode())
            assert refused.startswith(b"HTTP/1.1 403 Forbidden") and b"only the configured endpoint" in refused
        assert _ask(proxy.path, b"GET /relative HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 400")
        assert proxy.refused == [f"127.0.0.1:{other}", f"localhost:{endpoint}"]
    finally:
        proxy.stop()
    assert not Path(proxy.path).exists()
    moved = Path(proxy.path).parent.name.startswith("ci-net-")  # a long folder: a short private one was used
    assert moved == (len(folder) > 100) and not (moved and Path(proxy.path).parent.exists())


PROBE = textwrap.dedent('''
    import json, os, socket, urllib.error, urllib.request
    from agent.context_engine import ContextEngine

    def _try(fn):
        try:
            return fn()
        except urllib.error.HTTPError as exc:
            return exc.code
        except OSError as exc:
            return f"errno {{exc.errno}}"

    def _get(port):
        return urllib.request.urlopen(f"http://127.0.0.1:{{port}}/v1/x", timeout=10).read().decode()

    def _tunnel(port):
        proxy = os.environ["HTTPS_PROXY"].rsplit(":", 1)
        with socket.create_connection((proxy[0][7:], int(proxy[1])), timeout=10) as s:
            s.sendall(f"CONNECT 127.0.0.1:{{port}} HTTP/1.1\\r\\n\\r\\n".encode())
            return s.recv(100).split(b"\\r\\n")[0].decode()

    found = {{
        "endpoint": _try(lambda: _get({endpoint})),
        "other": _try(lambda: _get({other})),
        "tunnel_endpoint": _try(lambda: _tunnel({endpoint})),
        "tunnel_other": _try(lambda: _tunnel({other})),
        "direct_endpoint": _try(lambda: socket.create_connection(("127.0.0.1", {endpoint}), 2) and "connected"),
        "direct_far": _try(lambda: socket.create_connection(("10.255.255.1", 9), 2) and "connected"),
        "dns": _try(lambda: socket.getaddrinfo("example.com", 443) and "resolved"),
    }}
    print("PROBE " + json.dumps(found), flush=True)


    class Probe(ContextEngine):
        name = "egress_probe"

        def update_from_response(self, usage):
            pass

        def should_compress(self, prompt_tokens=None):
            return False

        def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
            return messages
''')


@pytest.mark.skipif(not BWRAP, reason="no bubblewrap here: workers reach every host (the README states this limit)")
def test_from_inside_a_worker_only_the_endpoint_answers(hosts, tmp_path):
    from inspector.config import load_config
    from inspector.worker.replays import RunRequest, replay_in_workers
    from tests.host.conftest import coding_session

    endpoint, other = hosts
    plugin = tmp_path / "plugins" / "context_engine" / "egress_probe"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text(PROBE.format(endpoint=endpoint, other=other), encoding="utf-8")
    config = load_config(None, {"inspector": {"live": {"base_url": f"http://127.0.0.1:{endpoint}/v1"}}})
    echo = io.StringIO()
    outcome = replay_in_workers(coding_session(2), [RunRequest("egress_probe", config, "probe")],
                                [tmp_path / "plugins"], echo=echo)[0]
    assert outcome.ok, outcome.describe()
    assert outcome.isolation["network"].startswith(f"only 127.0.0.1:{endpoint} (the configured endpoint)")
    line = next(x for x in echo.getvalue().splitlines() if x.startswith("PROBE "))
    found = json.loads(line[len("PROBE "):])
    assert found["endpoint"] == "endpoint"  # through the proxy the sandbox's variables name
    assert found["tunnel_endpoint"] == "HTTP/1.1 200 Connection established"
    assert found["other"] == 403 and found["tunnel_other"] == "HTTP/1.1 403 Forbidden"
    assert found["direct_endpoint"] == "errno 111"  # the host's loopback is not the sandbox's
    assert found["direct_far"] == "errno 101"  # no route out of the namespace
    assert found["dns"] != "resolved"
    assert outcome.isolation["refused"] == [f"127.0.0.1:{other}"]  # said in the trace (meta.worker) and on stderr
    assert outcome.trace.meta["worker"]["refused"] == [f"127.0.0.1:{other}"]
    assert any(f"refused connections to 127.0.0.1:{other}" in n for n in outcome.notes)
