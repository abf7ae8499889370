"""The supervisor's own promises: signals end everything at once, streamed traces are the trace,
the sandbox has no network of its own, and a session crosses the pipe unchanged."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inspector.worker import sandbox
from tests.worker.conftest import FAKE_KEY

BWRAP = sandbox.choose({}).kind == "bubblewrap"
ROOT = Path(__file__).resolve().parents[2]


def _leftovers(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith("context-inspector"))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_command_and_its_frozen_worker_within_a_second(sig, tmp_path, session_file, hostile_dir):
    """The engine is frozen in C; the command still ends at once and leaves no folder behind."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    config = tmp_path / "slow.yaml"
    config.write_text("inspector:\n  hook_timeout_seconds: 60\n", encoding="utf-8")
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": FAKE_KEY}
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from inspector.cli import main; sys.exit(main())",
                             "replay", str(session_file), "--engine", "regex_hook", "--plugin-dir", str(hostile_dir),
                             "--config", str(config), "--quiet"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until the worker is inside the frozen hook
            workers = [p for p in tmp.iterdir() if p.name.startswith("context-inspector-worker-")]
            if workers and any((w / "stack.txt").exists() for w in workers):
                break
            time.sleep(0.1)
        time.sleep(1.0)
        assert proc.poll() is None
        sent = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=10)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert took < 1.0 and proc.returncode == 130 and b"interrupted" in err
    assert _leftovers(tmp) == []
    assert FAKE_KEY.encode() not in out + err


@pytest.mark.skipif(not BWRAP, reason="no bubblewrap here: workers have the network (the README states this limit)")
def test_the_sandbox_has_no_network_of_its_own_endpoint_or_not(tmp_path):
    from inspector.worker.sandbox import choose, command

    probe = [sys.executable, "-c", "import socket\ntry:\n socket.create_connection(('10.255.255.1', 9), 0.5)\n"
             "except OSError as e: print(e.errno)"]
    off = choose({})
    on = choose({"auxiliary": {"compression": {"base_url": "http://127.0.0.1:9/v1"}}})
    assert off.network == "off" and off.hosts == ()
    assert on.hosts == (("127.0.0.1", 9),) and on.network.startswith("only 127.0.0.1:9 (the configured endpoint)")
    for isolation in (off, on):  # with an endpoint, the only way out is the egress proxy (tests/worker/test_egress.py)
        done = subprocess.run(command(isolation, probe, str(tmp_path)), capture_output=True, text=True, timeout=30)
        assert done.stdout.strip() == "101"  # ENETUNREACH: no interface but loopback


def test_the_streamed_trace_is_the_trace_the_host_made(tmp_path):
    """Batches cut after every turn rebuild, message for message, the trace a replay in process makes."""
    from inspector.config import load_config
    from inspector.engines.discovery import load_engine
    from inspector.host.replay import replay
    from inspector.trace.io import save_trace
    from inspector.worker.codec import TraceAssembler, TraceStreamer
    from inspector.worker.protocol import FrameReader, encode
    from tests.host.conftest import coding_session

    session = coding_session(8)
    config = load_config(None)
    loaded = load_engine("compressor", config)
    assembler: dict = {}

    def progress(done, total):
        if "a" not in assembler:
            assembler["s"] = TraceStreamer(watch.trace)
            assembler["a"] = TraceAssembler(watch.trace.meta)
        frame = FrameReader().feed(encode({"type": "batch", "batch": assembler["s"].batch()}))[0]
        assembler["a"].add(frame["batch"])

    from inspector.host.replay import StuckWatch

    watch = StuckWatch()
    trace = replay(session, loaded, config, progress=progress, watch=watch)
    loaded.close()
    frame = FrameReader().feed(encode({"type": "done", "batch": assembler["s"].batch(final=True)}))[0]
    rebuilt = assembler["a"].add(frame["batch"]).finish()
    save_trace(trace, tmp_path / "a.json")
    save_trace(rebuilt, tmp_path / "b.json")
    a, b = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json"))
    assert a == b
    assert assembler["a"].batches == len(session.turns) + 1


def test_a_session_crosses_the_pipe_unchanged():
    from inspector.worker.codec import session_from_json, session_to_json
    from inspector.worker.protocol import FrameReader, encode
    from tests.host.conftest import coding_session

    session = coding_session(5)
    session.warnings = ["w"]
    session.context_window = 258_400  # a Codex rollout's recorded window: the replay's default
    frame = FrameReader().feed(encode({"type": "job", "session": session_to_json(session)}))[0]
    assert session_from_json(frame["session"]) == session


def test_a_frame_too_large_or_not_json_is_a_protocol_error():
    from inspector.worker.protocol import HEADER, FrameReader, ProtocolError

    with pytest.raises(ProtocolError):
        FrameReader(max_frame=10).feed(HEADER.pack(11) + b"x" * 11)
    with pytest.raises(ProtocolError):
        FrameReader().feed(HEADER.pack(3) + b"{x}")


def test_frames_carry_what_only_the_standard_library_keeps_exactly():
    from inspector.worker.protocol import STDLIB_BODY, FrameReader, encode

    plain, exact = {"type": "note", "n": 2**63 - 1}, {"type": "note", "n": 2**70, "text": "a\udcff"}
    assert not int.from_bytes(encode(plain)[:4], "big") & STDLIB_BODY
    assert int.from_bytes(encode(exact)[:4], "big") & STDLIB_BODY
    frames = FrameReader().feed(encode(plain) + encode(exact))
    assert frames == [plain, exact] and type(frames[1]["n"]) is int


def test_a_frame_sent_to_the_worker_is_not_held_once_written():
    """The session's frame is tens of MB: the input thread must not keep it while it waits for the next."""
    import queue
    import threading
    import weakref
    from types import SimpleNamespace

    from inspector.worker.supervisor import Worker

    class Big(bytearray):
        pass

    written: list[int] = []
    stdin = SimpleNamespace(write=lambda b: written.append(len(b)), flush=lambda: None)
    outbox: queue.SimpleQueue = queue.SimpleQueue()
    body = Big(b"x" * 1000)
    alive = weakref.ref(body)
    outbox.put((b"head", body))
    del body
    thread = threading.Thread(target=Worker._send_frames, args=(SimpleNamespace(proc=SimpleNamespace(stdin=stdin),
                                                                                 _outbox=outbox),), daemon=True)
    thread.start()
    deadline = time.monotonic() + 5
    while len(written) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)  # the thread is back waiting on the queue
    assert written == [4, 1000]
    assert alive() is None, "the written frame is still referenced by the input thread"
    outbox.put(None)
    thread.join(5)
