"""Engine output: what an engine prints and logs during a hook call becomes part of that call's event."""

from __future__ import annotations

import logging
import sys
import threading
from pathlib import Path

from inspector.config import load_config
from inspector.engines.contract import ContextEngine
from inspector.engines.discovery import load_engine
from inspector.host import capture
from inspector.host.replay import replay
from inspector.trace.model import EV_COMPRESS, EV_NOTE, EV_RESPONSE, EV_SESSION_START, EV_SHOULD

from .conftest import CountingEngine, coding_session

BASIC = Path(__file__).resolve().parents[1] / "plugins_fixtures" / "basic"
CHATTY_LOGGER = "plugins.context_engine.fixture_chatty"


def outputs(trace, kind: str) -> list[str | None]:
    return [ev.output for ev in trace.events if ev.kind == kind]


def test_a_plugin_engine_prints_and_logs_into_the_event_of_the_hook_call(config, nocache, capsys):
    loaded = load_engine("fixture_chatty", config, plugin_dirs=[str(BASIC)])
    with loaded.activate():
        trace = replay(coding_session(10, tool_chars=24000), loaded, config, simulator=nocache)
    loaded.close()

    responses = [ev for ev in trace.events if ev.kind == EV_RESPONSE]
    assert responses and all(ev.output == f"usage: {ev.args['usage']['prompt_tokens']} prompt tokens\n"
                             for ev in responses)
    compress = [ev for ev in trace.events if ev.kind == EV_COMPRESS]
    assert compress and compress[0].thread.startswith("compress-ctx")  # ran on the pool, recorded all the same
    assert compress[0].output.splitlines() == [
        f"compress: {len(trace.store.get_list(compress[0].args['messages']['$list']))} messages in",
        f"INFO {CHATTY_LOGGER}: Compressed {compress[0].result['count_before'] - 3} messages into 1 summary",
        f"WARNING {CHATTY_LOGGER}: no memory context; summarising from the messages alone",
    ]
    assert "below the recorded level" not in "".join(ev.output or "" for ev in trace.events)  # DEBUG
    assert set(outputs(trace, EV_SHOULD)) == {None} and set(outputs(trace, EV_SESSION_START)) == {None}
    # Still shown on the terminal, as before.
    shown = capsys.readouterr()
    assert "usage: 29 prompt tokens" in shown.out and "compress: " in shown.err


class Tagged(CountingEngine):
    """Writes its tag twice per response, waiting in between for the other run to write too."""

    def __init__(self, tag: str, barrier: threading.Barrier) -> None:
        super().__init__()
        self.tag, self.barrier = tag, barrier

    def update_from_response(self, usage):
        super().update_from_response(usage)
        print(f"{self.tag} before")
        logging.getLogger(f"engine.{self.tag}").info("%s logged", self.tag)
        self.barrier.wait(timeout=10)  # both runs are inside a hook call at once
        sys.stderr.write(f"{self.tag} after\n")

    def should_compress(self, prompt_tokens=None):
        return self.compression_count == 0 and (prompt_tokens or 0) > 3000

    def compress(self, messages, **kwargs):
        print(f"{self.tag} compressing on {threading.current_thread().name}")
        self.barrier.wait(timeout=10)  # both pooled passes at once
        return super().compress(messages, **kwargs)


def test_two_replays_on_two_threads_at_once_each_record_only_their_own_output(config, nocache):
    barrier = threading.Barrier(2)
    traces = {}

    def run(tag: str) -> None:
        traces[tag] = replay(coding_session(6), Tagged(tag, barrier), config, simulator=nocache)

    threads = [threading.Thread(target=run, args=(tag,), name=f"run-{tag}") for tag in ("AAA", "BBB")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for tag, other in (("AAA", "BBB"), ("BBB", "AAA")):
        trace = traces[tag]
        assert not trace.fault_events
        responses = outputs(trace, EV_RESPONSE)
        assert len(responses) == 12
        assert set(responses) == {f"{tag} before\nINFO engine.{tag}: {tag} logged\n{tag} after\n"}
        compress = [ev for ev in trace.events if ev.kind == EV_COMPRESS]
        assert len(compress) == 1 and compress[0].output == f"{tag} compressing on {compress[0].thread}\n"
        assert other not in "".join(ev.output or "" for ev in trace.events)


class Helper(CountingEngine):
    """Prints from a thread of its own, started and joined inside the hook call."""

    def on_session_start(self, session_id, **kwargs):
        helper = threading.Thread(target=print, args=("from the engine's own thread",))
        helper.start()
        helper.join()
        print("from the hook itself")


def test_output_of_a_thread_the_engine_starts_is_not_recorded_but_still_shown(config, nocache, capsys):
    trace = replay(coding_session(1), Helper(), config, simulator=nocache)
    recorded = "".join(ev.output or "" for ev in trace.events)
    assert recorded == "from the hook itself\n"
    assert "from the engine's own thread" in capsys.readouterr().out


class Loud(CountingEngine):
    def __init__(self, per_response: int) -> None:
        super().__init__()
        self.per_response = per_response

    def update_from_response(self, usage):
        super().update_from_response(usage)
        sys.stdout.write("x" * self.per_response)


def test_an_event_keeps_at_most_its_limit_and_says_how_much_was_dropped(config, nocache):
    trace = replay(coding_session(1), Loud(10_000), config, simulator=nocache)
    out = outputs(trace, EV_RESPONSE)[0]
    assert out == "x" * capture.EVENT_CHARS + "\n… 6,000 more characters dropped (this event's limit of engine output)"


def test_a_run_keeps_at_most_its_limit_and_notes_what_it_dropped(config, nocache, monkeypatch):
    monkeypatch.setattr(capture, "TRACE_CHARS", 5_000)
    trace = replay(coding_session(3), Loud(2_000), config, simulator=nocache)
    out = outputs(trace, EV_RESPONSE)
    assert out[:2] == ["x" * 2_000] * 2
    assert out[2] == "x" * 1_000 + "\n… 1,000 more characters dropped (this run's limit of engine output)"
    assert out[3:] == ["… 2,000 more characters dropped (this run's limit of engine output)"] * 3
    assert sum(o.count("x") for o in out) == 5_000
    notes = [ev.note for ev in trace.events if ev.kind == EV_NOTE and "engine output" in (ev.note or "")]
    assert notes == ["engine output: 7,000 characters were not recorded once the run's 5,000 were "
                     "(each event that lost some says so)"]


class Leaky(CountingEngine):
    def on_session_start(self, session_id, **kwargs):
        import os

        print(f"key from the environment: {os.environ['FIXTURE_SERVICE_API_KEY']}")
        print(f"key from the config: {self.config_key}")
        logging.getLogger("leaky").warning("retrying with Authorization: Bearer abcdefghijklmnop1234")
        print("sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX and a terminal reset \x1b]0;title\x07\x1bc")


def test_secrets_are_masked_and_control_characters_made_visible(nocache, monkeypatch):
    monkeypatch.setenv("FIXTURE_SERVICE_API_KEY", "zq81-not-a-real-secret-77")
    config = load_config(None, {"model": {"context_length": 64000},
                                "auxiliary": {"compression": {"api_key": "cfg-secret-value-1234"}}})
    engine = Leaky()
    engine.config_key = "cfg-secret-value-1234"
    trace = replay(coding_session(1), engine, config, simulator=nocache)
    out = outputs(trace, EV_SESSION_START)[0]
    for secret in ("zq81-not-a-real-secret-77", "cfg-secret-value-1234", "abcdefghijklmnop1234",
                   "ABCDEFGHIJKLMNOPQRSTUVWX", "\x1b", "\x07"):
        assert secret not in out
    assert out.splitlines() == [
        "key from the environment: ***",
        "key from the config: ***",
        "WARNING leaky: retrying with Authorization: Bearer [REDACTED]",
        "[REDACTED] and a terminal reset \\x1b]0;title\\x07\\x1bc",
    ]


class Slow(CountingEngine):
    """A compress that outlives its timeout and prints after the host has moved on."""

    def __init__(self) -> None:
        super().__init__()
        self.release, self.printed = threading.Event(), threading.Event()

    def should_compress(self, prompt_tokens=None):
        return self.compression_count == 0 and (prompt_tokens or 0) > 3000

    def compress(self, messages, **kwargs):
        self.compression_count += 1
        print("started")
        self.release.wait(10)
        print("finished late")
        self.printed.set()
        return messages

    def on_session_end(self, session_id, messages):
        self.release.set()
        self.printed.wait(10)


def test_output_after_a_timed_out_compress_returned_is_counted_not_attributed(nocache):
    config = load_config(None, {"model": {"context_length": 64000}, "compression": {"context_timeout_seconds": 0.2}})
    trace = replay(coding_session(4), Slow(), config, simulator=nocache)
    compress = [ev for ev in trace.events if ev.kind == EV_COMPRESS]
    assert compress[0].fault.kind == "timeout" and compress[0].output == "started\n"
    assert "finished late" not in "".join(ev.output or "" for ev in trace.events)
    assert trace.events[-1].note == ("engine output: 14 characters written by a compress pass after it timed out "
                                     "were not recorded (shown on the terminal only)")


class Logging(CountingEngine):
    def on_session_start(self, session_id, **kwargs):
        logging.getLogger("inspector.host.anything").warning("the host's own words")
        logging.getLogger("inspector.engines.compressor").info("the built-in engine's words")
        own = logging.getLogger("engine.with_handler")
        handler = logging.StreamHandler(sys.stderr)  # an engine that sets up its own handler
        own.addHandler(handler)
        try:
            own.info("said once")
        finally:
            own.removeHandler(handler)


def test_the_inspectors_own_log_records_are_not_engine_output_and_none_is_recorded_twice(config, nocache):
    trace = replay(coding_session(1), Logging(), config, simulator=nocache)
    assert outputs(trace, EV_SESSION_START)[0] == ("INFO inspector.engines.compressor: the built-in engine's words\n"
                                                   "INFO engine.with_handler: said once\n")


def test_log_records_no_handler_takes_are_printed_as_python_prints_them(monkeypatch, capsys):
    """With only the router on the root logger the terminal shows what Python's last resort would."""
    capture.install()
    monkeypatch.setattr(logging.root, "handlers", [capture._ROUTER])
    log = logging.getLogger("engine.terminal")
    log.info("not shown: below WARNING, as before")
    log.warning("shown as before")
    err = capsys.readouterr().err
    assert "shown as before\n" in err and "not shown" not in err


def test_a_handler_an_engine_put_on_the_root_prints_only_what_it_printed_before(config, nocache, monkeypatch):
    """An engine's ``basicConfig(level=WARNING)`` keeps its terminal at WARNING; INFO is still recorded."""
    import io

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    monkeypatch.setattr(logging.root, "handlers", [handler])
    monkeypatch.setattr(logging.root, "level", logging.WARNING)

    class Chatty(ContextEngine):
        name = "chatty"

        def update_from_response(self, usage):
            logging.getLogger("chatty").info("info for the trace only")
            logging.getLogger("chatty").warning("a warning for both")

        def should_compress(self, prompt_tokens=None):
            return False

        def compress(self, messages, **kw):
            return messages

    trace = replay(coding_session(1), Chatty(), config, simulator=nocache)
    assert "info for the trace only" in outputs(trace, "update_from_response")[0]
    printed = stream.getvalue()
    assert "a warning for both" in printed and "info for the trace only" not in printed
