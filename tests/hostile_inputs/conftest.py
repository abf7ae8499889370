"""Running the command line on hostile inputs, in a process of its own, with its bounds measured.

Each case runs ``context-inspector`` as a user would, with a fake ``HOME`` and its own temporary
folder, and gets back what a user would see (exit code, stdout, stderr) plus what the process
cost (wall time, peak RSS sampled from ``/proc``). The case then asserts the error is one clear line
naming the file, within its time and memory bounds, and that no input and nothing in ``HOME``
changed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Result:
    code: int
    out: str
    err: str
    seconds: float
    peak_mib: float

    def one_line_error(self, *names: str) -> str:
        """The error line, asserting it is the only line on stderr, has no traceback, and names ``names``."""
        lines = [ln for ln in self.err.splitlines() if ln.strip()]
        assert "Traceback" not in self.err, self.err[-3000:]
        assert len(lines) == 1 and lines[0].startswith("error: "), self.err[-3000:]
        for name in names:
            assert name in lines[0], (name, lines[0])
        return lines[0]


def digest_tree(root: Path) -> dict[str, str]:
    """Every file (and symlink) under ``root`` with a digest of its content (or its link target)."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif not path.is_dir():
            out[rel] = "special"
    return out


def _hwm_mib(pid: int) -> float:
    """The process's peak resident memory so far (``VmHWM``). Not ``wait4``'s ``ru_maxrss``: on
    Linux that also counts the parent's memory at the moment of the fork, so a child of a large
    test process would seem to take gigabytes."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


@pytest.fixture
def cli(tmp_path: Path):
    """``cli(*args, timeout=…, env={…})``: run a command; asserts it ended within ``timeout`` and
    left the fake home and the given inputs unchanged."""
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    (home / ".bashrc").write_text("export PS1='$ '\n", encoding="utf-8")
    scratch = tmp_path / "tmp"
    scratch.mkdir()

    def run(*args: str, timeout: float = 60.0, env: dict[str, str] | None = None,
            inputs: tuple[Path, ...] = ()) -> Result:
        before_home = digest_tree(home)
        before_inputs = {p: digest_tree(p.parent).get(p.name) for p in inputs}
        environ = {k: v for k, v in os.environ.items() if k not in ("HERMES_HOME",)}
        # Our own token cache (inspector.tokens.persistent) lives outside the home, so any change
        # in the home is one the command must not make.
        environ.update({"HOME": str(home), "TMPDIR": str(scratch), "PYTHONPATH": str(REPO),
                        "XDG_CACHE_HOME": str(tmp_path / "user-cache"),
                        "QT_QPA_PLATFORM": "offscreen", **(env or {})})
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "inspector.cli", *args], cwd=tmp_path, env=environ,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        chunks: dict[str, list[bytes]] = {"out": [], "err": []}
        readers = [threading.Thread(target=lambda s=stream, k=key: chunks[k].extend(iter(lambda: s.read(65536), b"")),
                                    daemon=True) for key, stream in (("out", proc.stdout), ("err", proc.stderr))]
        for reader in readers:
            reader.start()
        peak = 0.0
        while True:  # reaped here, sampling the child's own high-water mark while it runs
            peak = max(peak, _hwm_mib(proc.pid))
            pid, status, _usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - started > timeout:
                proc.kill()
                os.wait4(proc.pid, 0)
                proc.returncode = -9
                pytest.fail(f"{' '.join(args)} did not end within {timeout:g} s")
            time.sleep(0.01)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - started
        for reader in readers:
            reader.join(timeout=10)
        out = b"".join(chunks["out"]).decode("utf-8", "replace")
        err = b"".join(chunks["err"]).decode("utf-8", "replace")
        assert digest_tree(home) == before_home, "the command changed the user's home"
        for path, digest in before_inputs.items():
            assert digest_tree(path.parent).get(path.name) == digest, f"{path} was changed"
        return Result(proc.returncode, out, err, seconds, peak)

    run.scratch = scratch  # type: ignore[attr-defined]
    return run
