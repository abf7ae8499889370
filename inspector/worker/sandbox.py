"""The operating-system sandbox a worker runs in, where the machine has one.

On Linux with bubblewrap (``bwrap``, Debian package ``bubblewrap``) the worker sees the whole
file system read-only — the real home included — except its own work folder, and always runs in
a network namespace of its own, loopback only. When the config names an endpoint, its one way
out is the supervisor's proxy (:mod:`inspector.worker.egress`), which connects only to the
endpoints' ``host:port``: bubblewrap itself cannot filter by host. Elsewhere, or when user
namespaces are not available (bubblewrap then fails its own start), the worker runs without one:
engines are still in a separate process, and ``~/.hermes`` is still the run's sandbox through
the home mirror (:mod:`inspector.engines.home_mirror`), but ``$HOME``, a subprocess's ``~`` and
``pwd.getpwuid()`` reach the real home and every host on the network is reachable, whatever the
endpoint. ``inspector.sandbox: off`` (or ``CONTEXT_INSPECTOR_SANDBOX=off``) asks for that
fallback on purpose.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

ENV_SWITCH = "CONTEXT_INSPECTOR_SANDBOX"
MIRROR_LIMITS = ("engines run in a worker process; ~/.hermes is the run's sandbox through the home mirror, but "
                 "$HOME, a subprocess's ~ and pwd.getpwuid() reach the real home, and every host on the network is "
                 "reachable (narrowing it to the configured endpoint's host needs bubblewrap)")


@dataclass(frozen=True)
class Isolation:
    """How a worker is contained; recorded in the trace's meta as ``worker``."""

    kind: str  # "bubblewrap" | "process"
    why: str  # why this kind (bubblewrap's failure when it exists but cannot run)
    network: str = ""  # "off" | "only ..." (bubblewrap only)
    bwrap: str = ""
    hosts: tuple[tuple[str, int], ...] = ()  # what the egress proxy may reach (bubblewrap only)

    def to_json(self) -> dict[str, Any]:
        out = {"isolation": self.kind, "why": self.why}
        if self.network:
            out["network"] = self.network
        if self.kind != "bubblewrap":
            out["limits"] = MIRROR_LIMITS
        return out


@functools.lru_cache(maxsize=4)
def _probe(bwrap: str) -> str | None:
    """None when ``bwrap`` can make a sandbox here, else what it said."""
    try:
        done = subprocess.run([bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net",
                               "true"], capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if done.returncode != 0:
        return (done.stderr.decode("utf-8", "replace").strip() or f"exit status {done.returncode}")[:300]
    return None


def endpoints(config: dict[str, Any]) -> list[str]:
    """Every endpoint the config names (``base_url`` values at any depth)."""
    found: list[str] = []

    def walk(node: Any, depth: int = 0) -> None:
        if depth > 20:
            return
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("base_url", "api_base", "endpoint") and isinstance(value, str) and value.strip():
                    found.append(value.strip())
                else:
                    walk(value, depth + 1)
        elif isinstance(node, list):
            for value in node:
                walk(value, depth + 1)

    walk(config)
    return sorted(set(found))


def choose(config: dict[str, Any]) -> Isolation:
    """The isolation a worker for ``config`` gets on this machine."""
    wanted = str(os.environ.get(ENV_SWITCH) or ((config.get("inspector") or {}).get("sandbox")) or "auto").lower()
    if wanted in ("off", "false", "no", "0"):
        return Isolation("process", "the OS sandbox is off (inspector.sandbox / " + ENV_SWITCH + ")")
    if not sys.platform.startswith("linux"):
        return Isolation("process", f"no OS sandbox on {sys.platform} (bubblewrap is Linux only)")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return Isolation("process", "bubblewrap (bwrap) is not installed (Debian package bubblewrap)")
    problem = _probe(bwrap)
    if problem is not None:
        return Isolation("process", f"bubblewrap cannot make a sandbox here (user namespaces unavailable?): {problem}")
    from inspector.worker.egress import endpoint_hosts

    hosts = tuple(endpoint_hosts(endpoints(config)))
    network = ("only " + ", ".join(f"{h}:{p}" for h, p in hosts)[:200] + " (the configured endpoint), through the "
               "inspector's proxy; every other host is refused") if hosts else "off"
    return Isolation("bubblewrap", "bubblewrap: the real home and every other folder read-only, only the worker's "
                     "own folder writable", network, bwrap, hosts)


def command(isolation: Isolation, argv: list[str], writable: str) -> list[str]:
    """``argv`` wrapped in the sandbox (unchanged without one)."""
    if isolation.kind != "bubblewrap":
        return argv
    wrap = [isolation.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", writable, writable,
            "--die-with-parent", "--unshare-net"]  # the endpoint, if any, only through the egress proxy
    return wrap + ["--"] + argv
