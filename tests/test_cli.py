"""The command line as a process: a terminated replay cleans up after itself, a closed pipe is quiet."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "resources" / "demo" / "demo_session.json"


def _run(args: list[str], tmp_path: Path, **kw) -> subprocess.Popen:
    env = dict(os.environ, TMPDIR=str(tmp_path), PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "inspector.cli", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


@pytest.mark.skipif(not hasattr(signal, "SIGTERM") or sys.platform == "win32", reason="POSIX signals")
def test_sigterm_during_a_replay_removes_the_sandbox_home(tmp_path):
    proc = _run(["replay", str(DEMO), "--engine", "compressor", "--engine", "compressor"], tmp_path)
    deadline = time.monotonic() + 60
    while not any(tmp_path.glob("context-inspector-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any(tmp_path.glob("context-inspector-*")), "the replay made its sandbox"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and b"interrupted" in err
    assert not list(tmp_path.glob("context-inspector-*"))


def test_a_reader_that_closes_the_pipe_gets_no_traceback(tmp_path):
    proc = _run(["replay", str(DEMO), "--json", "--quiet"], tmp_path)
    assert proc.stdout is not None
    proc.stdout.read(100)
    proc.stdout.close()  # as `| head -c 100` does
    proc.wait(timeout=120)
    err = proc.stderr.read() if proc.stderr is not None else b""
    assert b"Traceback" not in err and b"BrokenPipeError" not in err
