"""The helpers of Hermes' ContextCompressor that subclasses call or override, under Hermes' names,
and the places the compressor itself calls them (so an override is seen where Hermes would call it)."""

from __future__ import annotations

import time

import pytest

from inspector.engines.compressor import END_MARKER, LEGACY_SUMMARY_PREFIX, SUMMARY_PREFIX, ContextCompressor
from inspector.engines.compressor_summary import MERGED_PRIOR_CLOSE, MERGED_PRIOR_OPEN
from inspector.engines.run_context import RunContext, running
from tests.engines.compressor_fakes import NO_PROVIDER, FakeAux, hermetic, install_aux  # noqa: F401


def cooldown_left(c, **kwargs):
    """Seconds left in the engine's summary-failure cooldown (Hermes' dict), or None."""
    state = c.get_active_compression_failure_cooldown(**kwargs)
    return state["remaining_seconds"] if state else None


OLDER_HERMES_PREFIX = (
    "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below. "
    "Your current task is identified in the '## Active Task' section of the summary — resume exactly from there. "
    "The current session state (files, config, etc.) may reflect work described here — avoid repeating it:"
)


class Clock:
    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def engine(cls: type = ContextCompressor, **kw) -> ContextCompressor:
    kw.setdefault("quiet_mode", True)
    kw.setdefault("now", "2026-03-14")
    return cls("test-model", config_context_length=200_000, **kw)


def u(content, **extra) -> dict:
    return {"role": "user", "content": content, **extra}


def a(text: str = "", **extra) -> dict:
    return {"role": "assistant", "content": text, **extra}


def chat(n: int) -> list[dict]:
    return [u(f"user {i}") if i % 2 == 0 else a(f"reply {i}") for i in range(n)]


def summary_message(out: list[dict]) -> dict:
    return next(m for m in out if m.get("_compressed_summary"))


# ---------------------------------------------------------------------------------------------
# summary prefix
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "## Goal\nship it",
    SUMMARY_PREFIX + "\n## Goal\nship it",
    LEGACY_SUMMARY_PREFIX + " ## Goal\nship it",
    OLDER_HERMES_PREFIX + "\n## Goal\nship it",
    "  \n## Goal\nship it\n\n" + END_MARKER,
    MERGED_PRIOR_OPEN + "the old tail row" + MERGED_PRIOR_CLOSE + SUMMARY_PREFIX + "\n## Goal\nship it\n\n" + END_MARKER,
])
def test_with_summary_prefix_gives_any_summary_text_the_current_prefix_once(text):
    assert ContextCompressor._with_summary_prefix(text) == SUMMARY_PREFIX + "\n## Goal\nship it"
    assert engine()._with_summary_prefix(text) == SUMMARY_PREFIX + "\n## Goal\nship it"


def test_with_summary_prefix_of_nothing_is_the_bare_prefix():
    assert ContextCompressor._with_summary_prefix("") == SUMMARY_PREFIX
    assert ContextCompressor._with_summary_prefix(None) == SUMMARY_PREFIX  # type: ignore[arg-type]


def test_strip_summary_prefix_returns_the_body():
    strip = ContextCompressor._strip_summary_prefix
    assert strip(SUMMARY_PREFIX + "\n## Goal\nx\n\n" + END_MARKER) == "## Goal\nx"
    # a user-leading summary carries the live request after the end marker: not part of the body
    assert strip(SUMMARY_PREFIX + "\n## Goal\nx\n\n" + END_MARKER + "\n\nplease continue") == "## Goal\nx"
    assert strip("  no prefix at all  ") == "no prefix at all"
    assert strip(None) == ""  # type: ignore[arg-type]


def test_with_summary_prefix_strips_with_the_subclass_strip():
    class Custom(ContextCompressor):
        @staticmethod
        def _strip_summary_prefix(summary: str) -> str:
            return summary.replace("[VENDOR]", "").strip()

    assert Custom._with_summary_prefix("[VENDOR] body") == SUMMARY_PREFIX + "\nbody"


class Marked(ContextCompressor):
    @classmethod
    def _with_summary_prefix(cls, summary: str) -> str:
        return "[MARKED] " + super()._with_summary_prefix(summary)


def test_llm_summaries_go_through_with_summary_prefix(monkeypatch):
    install_aux(monkeypatch, FakeAux("## Goal\nfrom the model"))
    out = engine(Marked).compress(chat(40))
    assert summary_message(out)["content"].startswith("[MARKED] " + SUMMARY_PREFIX + "\n## Historical Task Snapshot")


def test_fallback_summaries_go_through_with_summary_prefix():
    out = engine(Marked).compress(chat(40))
    assert summary_message(out)["content"].startswith("[MARKED] " + SUMMARY_PREFIX + "\n## Historical Task Snapshot")


def test_build_static_fallback_summary_names_the_reason_and_keeps_the_running_summary():
    c = engine()
    c._previous_summary = "## Goal\nearlier"
    text = c._build_static_fallback_summary(chat(6), reason="quota exhausted")
    assert text.startswith(SUMMARY_PREFIX + "\n## Historical Task Snapshot\n")
    assert "quota exhausted" in text
    assert c._previous_summary == "## Goal\nearlier"


def test_compress_falls_back_through_build_static_fallback_summary():
    seen = []

    class Own(ContextCompressor):
        def _build_static_fallback_summary(self, turns_to_summarize, reason=None):
            seen.append((len(turns_to_summarize), reason))
            return self._with_summary_prefix("## Goal\nown fallback")

    out = engine(Own).compress(chat(40))
    assert seen and seen[0][1] == "no auxiliary LLM provider configured"
    assert summary_message(out)["content"] == SUMMARY_PREFIX + "\n## Goal\nown fallback\n\n" + END_MARKER


# ---------------------------------------------------------------------------------------------
# failure cooldown
# ---------------------------------------------------------------------------------------------


class Store:
    """A session store that keeps cooldowns, as Hermes' SessionDB does."""

    def __init__(self):
        self.calls: list[tuple] = []

    def record_compression_failure_cooldown(self, session_id, cooldown_until, error):
        self.calls.append(("record", session_id, cooldown_until, error))

    def clear_compression_failure_cooldown(self, session_id):
        self.calls.append(("clear", session_id))


def test_record_compression_failure_cooldown_blocks_for_its_seconds_and_keeps_the_error():
    clock = Clock()
    c = engine(clock=clock)
    c._record_compression_failure_cooldown(45, "summary endpoint said 503")
    assert cooldown_left(c) == 45
    assert cooldown_left(c, refresh=True) == 45
    assert c._last_summary_error == "summary endpoint said 503"
    assert c.should_compress_info(150_000) == (False, "cooldown:45")
    clock.t += 45
    assert c.should_compress_info(150_000) == (True, None)


def test_the_cooldown_is_handed_to_a_bound_session_store():
    store = Store()
    c = engine(clock=Clock())
    c.bind_session_state(store, "sid-1")
    before = time.time()
    c._record_compression_failure_cooldown(60, "boom")
    c._clear_compression_failure_cooldown()
    (record, clear) = store.calls
    assert record[:2] == ("record", "sid-1") and record[3] == "boom"
    assert before + 60 <= record[2] <= time.time() + 60  # the wall-clock end, as Hermes stores it
    assert clear == ("clear", "sid-1")


def test_a_session_store_without_the_methods_or_failing_is_ignored():
    class Broken:
        def record_compression_failure_cooldown(self, *args):
            raise OSError("database is locked")

    for store in (object(), Broken()):
        c = engine(clock=Clock())
        c.bind_session_state(store, "sid")
        c._record_compression_failure_cooldown(30, "x")
        c._clear_compression_failure_cooldown()
        assert cooldown_left(c) is None


def test_clear_compression_failure_cooldown_also_resets_the_error_and_timeout_ladder():
    c = engine(clock=Clock())
    c.record_timeout_failure("slow")
    c.record_timeout_failure("slower")
    assert cooldown_left(c) == 300
    c._clear_compression_failure_cooldown()
    assert cooldown_left(c) is None
    assert c._last_summary_error is None and c._summary_failure_kind is None
    c.record_timeout_failure("again")
    assert cooldown_left(c) == 60  # the ladder starts over


class Recording(ContextCompressor):
    def __init__(self, *args, **kw):
        self.cooldown_calls: list[tuple] = []
        super().__init__(*args, **kw)

    def _record_compression_failure_cooldown(self, cooldown_seconds, error):
        self.cooldown_calls.append(("record", cooldown_seconds, error))
        super()._record_compression_failure_cooldown(cooldown_seconds, error)

    def _clear_compression_failure_cooldown(self):
        self.cooldown_calls.append(("clear",))
        super()._clear_compression_failure_cooldown()


def test_summary_failures_record_through_record_compression_failure_cooldown():
    c = engine(Recording, clock=Clock(), offline_stand_in=False)
    assert c._generate_summary(chat(6)) is None
    assert c.cooldown_calls == [("record", 600.0, "no auxiliary LLM provider configured")]


@pytest.mark.parametrize("trigger", ["force", "route change", "healthy summary"])
def test_cooldowns_end_through_clear_compression_failure_cooldown(monkeypatch, trigger):
    clock = Clock()
    c = engine(Recording, clock=clock)
    c._record_compression_failure_cooldown(600, "earlier failure")
    c.cooldown_calls.clear()
    install_aux(monkeypatch, FakeAux("## Goal\nfine"))
    if trigger == "force":
        c.compress(chat(40), force=True)
    elif trigger == "route change":
        c.update_model("test-model", 200_000, base_url="http://elsewhere")
    else:
        clock.t += 600
        c._generate_summary(chat(6))
    assert ("clear",) in c.cooldown_calls
    assert cooldown_left(c) is None


def test_code_comparing_the_cooldown_with_time_monotonic_agrees_with_the_runs_clock():
    """compresr writes ``self._summary_failure_cooldown_until = time.monotonic() + 60`` and checks
    ``time.monotonic() < self._summary_failure_cooldown_until``, as Hermes' own code does."""

    class MonotonicStyle(ContextCompressor):
        def _generate_summary(self, turns, focus_topic=None, memory_context=""):
            if time.monotonic() < self._summary_failure_cooldown_until:
                return None
            self._summary_failure_cooldown_until = time.monotonic() + 60
            return None

    clock = Clock(50_000.0)  # a transcript clock, hours ahead of the wall clock
    c = engine(MonotonicStyle)
    with running(RunContext(clock=clock)):
        c._generate_summary(chat(6))
        assert cooldown_left(c) == pytest.approx(60, abs=0.5)
        assert c.should_compress(150_000) is False
        assert time.monotonic() < c._summary_failure_cooldown_until  # the subclass's own check agrees
        clock.t += 61  # a minute of transcript later (a few milliseconds of replay)
        assert cooldown_left(c) is None
        assert c.should_compress(150_000) is True
        assert not time.monotonic() < c._summary_failure_cooldown_until
        c.record_timeout_failure("stalled")  # a cooldown the class itself records on the run's clock
        assert c._summary_failure_cooldown_until - time.monotonic() == pytest.approx(60, abs=0.5)
        c._summary_failure_cooldown_until = 0.0
        assert cooldown_left(c) is None


# ---------------------------------------------------------------------------------------------
# the user ask the tail keeps, and the automatic focus
# ---------------------------------------------------------------------------------------------


def test_find_last_user_message_idx_names_the_newest_user_row_that_is_not_a_summary():
    image_only = u([{"type": "image_url", "image_url": {"url": "http://x/shot.png"}}])
    msgs = [
        {"role": "system", "content": "sys"},
        u("fix the parser"),                                     # 1
        a("on it"),                                              # 2
        image_only,                                              # 3
        a("looking"),                                            # 4
        u("   "),                                                # 5: a blank row counts, as in Hermes
        u(SUMMARY_PREFIX + "\nbody", _compressed_summary=True),  # 6: a summary does not
        a("done"),                                               # 7
    ]
    c = engine()
    assert c._find_last_user_message_idx(msgs, 0) == 5
    assert c._find_last_user_message_idx(msgs[:5], 2) == 3
    assert c._find_last_user_message_idx(msgs[:5], 4) == -1
    assert c._find_last_user_message_idx([a("x")], 0) == -1


def test_the_tail_keeps_the_message_find_last_user_message_idx_names():
    class KeepsAnOlderAsk(ContextCompressor):
        def _find_last_user_message_idx(self, messages, head_end):
            return 20

    assert [m["content"] for m in engine().compress(chat(40))[4:5]] == ["user 32"]
    out = engine(KeepsAnOlderAsk).compress(chat(40))
    assert [m["content"] for m in out[4:]] == [m["content"] for m in chat(40)[20:]]


def test_derive_auto_focus_topic_lists_the_newest_asks_oldest_first():
    msgs = [u("fix the parser"), a("ok"), u(SUMMARY_PREFIX + "\nold", _compressed_summary=True), u("  and   the\nlexer ")]
    assert ContextCompressor._derive_auto_focus_topic(msgs) == "Recent user focus:\n- fix the parser\n- and the lexer"
    assert ContextCompressor._derive_auto_focus_topic([a("no asks")]) is None


def test_compress_takes_its_automatic_focus_from_derive_auto_focus_topic(monkeypatch):
    fake = install_aux(monkeypatch, FakeAux("## Goal\nx"))

    class Focused(ContextCompressor):
        @classmethod
        def _derive_auto_focus_topic(cls, messages):
            return "the billing module"

    engine(Focused).compress(chat(40))
    assert 'FOCUS TOPIC: "the billing module"' in fake.prompts[0]


# ---------------------------------------------------------------------------------------------
# thresholds
# ---------------------------------------------------------------------------------------------


def test_threshold_helpers_under_hermes_names():
    assert ContextCompressor._effective_threshold_percent(200_000, 0.5) == 0.75
    assert ContextCompressor._effective_threshold_percent(1_000_000, 0.5) == 0.5
    assert ContextCompressor._effective_threshold_percent(0, 0.5) == 0.5
    assert ContextCompressor._compute_threshold_tokens(64_000, 0.75) == 54_400
    assert ContextCompressor._compute_threshold_tokens(200_000, 0.75, 32_000) == 126_000


def test_a_subclass_trigger_holds_at_construction_and_after_a_model_switch():
    class Earlier(ContextCompressor):
        @staticmethod
        def _compute_threshold_tokens(context_length, threshold_percent, max_tokens=None):
            return context_length // 2

    c = engine(Earlier)
    assert c.threshold_tokens == 100_000
    c.update_model("test-model", 128_000)
    assert c.threshold_tokens == 64_000
