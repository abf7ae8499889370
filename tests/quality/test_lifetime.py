"""Message lifetimes on hand-built runs (summarised, dropped, left out and restored, returned by a
tool), through a save and reload, and on the corpus against an independent recomputation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from inspector.quality import lifetime as lt
from inspector.quality.analysis import analyse, compute
from inspector.quality.lifetime import message_lifetimes
from inspector.trace.io import load_trace, save_trace
from inspector.trace.model import EV_COMPRESS, EV_TOOL
from inspector.trace.summary import is_committed_compression

from .conftest import KeepLastTwo, Lossless, OnceEngine, Recaller, url, url_session

# next to the repo (as tests/sessions/conftest.py finds it); INSPECTOR_CORPUS names another place
CORPUS = Path(os.environ.get("INSPECTOR_CORPUS") or Path(__file__).resolve().parents[2].parent / "shared" / "corpus")


def kinds(life):
    return [e.kind for e in life.events]


def by_text(trace, lifetimes, text):
    return next(m for m in lifetimes.messages if trace.store.messages[m.key].get("content") == text)


def test_a_summarised_message_names_the_compaction_and_the_summary_it_went_into(run):
    class Keep(KeepLastTwo):
        keep = (url(1),)

    trace = run(Keep())
    life = message_lifetimes(trace)
    compress = next(e.index for e in trace.events if e.kind == EV_COMPRESS)
    first = by_text(trace, life, url(0))
    assert kinds(first) == [lt.FIRST, lt.SUMMARISED]
    ev = first.removed
    assert ev.event == compress and ev.summary == 0
    assert trace.store.messages[life.summary_keys[0]]["content"].startswith("[SUMMARY]")
    assert first.sent == list(range(0, ev.request))  # sent in every request until the compaction
    late = by_text(trace, life, url(7))
    assert kinds(late) == [lt.FIRST] and late.sent == [7]



def test_the_analysis_is_made_with_automatic_collection_paused_and_restored(run, monkeypatch):
    import gc

    from inspector.quality import analysis

    trace = run(KeepLastTwo())
    seen = []
    lifetimes = analysis.message_lifetimes
    monkeypatch.setattr(analysis, "message_lifetimes", lambda t: seen.append(gc.isenabled()) or lifetimes(t))
    assert compute(trace).lifetimes.messages and seen == [False]
    assert gc.isenabled()

def test_a_compaction_that_writes_nothing_drops(run):
    class Nothing(KeepLastTwo):
        summary = False

    trace = run(Nothing())
    life = message_lifetimes(trace)
    assert kinds(by_text(trace, life, url(2))) == [lt.FIRST, lt.DROPPED]
    assert life.summary_keys == []


class Skipping(OnceEngine):
    """Leaves the first user message out of requests 3 and 4, then sends it again."""

    name = "skipping"
    after = 10**9  # never compresses

    def select_context(self, request_messages, *, conversation_messages=None, incoming_message=None, budget_tokens=0):
        if self.responses in (3, 4):
            return [m for m in request_messages if m.get("content") != url(0)]
        return None


def test_select_context_leaving_a_message_out_and_bringing_it_back(run):
    trace = run(Skipping())
    life = message_lifetimes(trace)
    first = by_text(trace, life, url(0))
    assert kinds(first) == [lt.FIRST, lt.LEFT_OUT, lt.RESTORED]
    assert first.sent == [0, 1, 2, 5, 6, 7]
    assert [e.request for e in first.events] == [0, 3, 5]
    cells = dict(lt.life_cells(first, life.requests))
    assert [cells[r] for r in range(8)] == [lt.CELL_SENT] * 3 + [lt.CELL_LEFT_OUT] * 2 + [lt.CELL_RESTORED] * 3


def test_an_engine_tool_quoting_a_dropped_message_returns_it(run, config):
    session = url_session(8)
    last = session.messages[-1]
    last["content"] = None
    last["tool_calls"] = [{"id": "call_r", "type": "function", "function": {"name": "recall_all", "arguments": "{}"}}]
    session.messages.append({"role": "tool", "tool_call_id": "call_r", "content": "(engine answers)"})
    session.messages.append({"role": "assistant", "content": "Recovered."})
    trace = run(Recaller(), session)
    tool_event = next(e.index for e in trace.events if e.kind == EV_TOOL)
    life = message_lifetimes(trace)
    returned = by_text(trace, life, url(1))
    assert kinds(returned) == [lt.FIRST, lt.DROPPED, lt.TOOL_RETURN]
    assert returned.events[-1].event == tool_event and returned.events[-1].detail == "recall_all"


def test_lifetimes_survive_a_save_and_reload(run, tmp_path):
    trace = run(KeepLastTwo())
    before = analyse(trace)
    path = tmp_path / "run.trace.json"
    save_trace(trace, path)
    again = load_trace(path)
    assert "quality" in again.derived
    loaded = analyse(again)
    assert loaded.lifetimes.to_json() == before.lifetimes.to_json()
    assert loaded.retention.to_json() == before.retention.to_json()
    assert compute(again).lifetimes.to_json() == before.lifetimes.to_json()  # and recomputing agrees


def _corpus_files():
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob("*") if p.is_file() and not p.name.endswith(".source.txt"))


@pytest.mark.parametrize("path", _corpus_files() or [None], ids=lambda p: p.name if p else "no-corpus")
def test_corpus_lifetimes_match_an_independent_recomputation(path, config):
    """Recomputed with nothing but exact keys: a message is sent in a request when its first key is
    in the request; a compaction removes the messages whose keys its input has and its output lacks.
    Messages whose key a prune or compaction rewrote, and texts the session repeats, are left out
    of this comparison (the hand-built tests cover both)."""
    if path is None:
        pytest.skip(f"corpus not found at {CORPUS} (read-only shared transcripts)")
    from inspector.engines.discovery import load_engine
    from inspector.host.replay import replay
    from inspector.sessions import load_session, require_conversation
    from inspector.sessions.model import ReaderError

    try:
        session = require_conversation(load_session(str(path)))
    except ReaderError as exc:
        pytest.skip(f"not a conversation: {exc}")
    small = dict(config, compression={"threshold_tokens": 4000, "context_timeout_seconds": 5})  # compacts often
    trace = replay(session, load_engine("compressor", small), small)
    life = message_lifetimes(trace)
    rewritten = {v for k, v in life.forms.items() if life.messages[v].key != k}
    repeated = {k for k, ids in life.instances.items() if len(ids) > 1}  # the hand-built test covers these
    checked = 0
    for m in life.messages:
        if m.index in rewritten or m.key in repeated:
            continue
        sent = [r.index for r in trace.requests if m.key in trace.store.get_list(r.selected)]
        assert m.sent == sent, m.index
        checked += 1
    assert checked or not life.messages
    for comp, ev in zip(life.compactions, [e for e in trace.events if is_committed_compression(e)]):
        before = trace.store.get_list(ev.args["messages"]["$list"])
        after = set(trace.store.get_list(ev.result["$list"]))
        # (a key of no session message in the input is an earlier summary, itself replaced)
        expected = sorted(life.forms[k] for k in before if k not in after and k in life.forms
                          and life.forms[k] not in rewritten and k not in repeated)
        unique = {life.forms[k] for k in life.forms if k not in repeated}
        assert [i for i in comp.removed if i not in rewritten and i in unique] == expected


def test_the_same_text_twice_is_two_messages_and_a_compaction_takes_the_old_one(run):
    session = url_session(8)
    for t in (0, 6):  # turn t's user message (after the system prompt, two messages per turn)
        session.messages[1 + 2 * t]["content"] = "Carry on."
    trace = run(KeepLastTwo(), session)
    life = message_lifetimes(trace)
    copies = [m for m in life.messages if trace.store.messages[m.key].get("content") == "Carry on."]
    assert len(copies) == 2 and copies[0].key == copies[1].key
    old, new = copies
    assert kinds(old) == [lt.FIRST, lt.SUMMARISED] and old.sent == list(range(0, old.removed.request))
    assert kinds(new) == [lt.FIRST] and new.sent == [6, 7]


def test_a_comparison_bundle_keeps_each_runs_analysis(run, tmp_path):
    from inspector.trace.io import load_bundle, save_bundle

    traces = [run(KeepLastTwo()), run(Lossless())]
    figures = [analyse(t).run_retention for t in traces]
    save_bundle(traces, tmp_path / "both.json.gz")
    loaded, _meta = load_bundle(tmp_path / "both.json.gz")
    assert [analyse(t).run_retention for t in loaded] == figures == [0.0, 1.0]
    assert all("quality" in t.derived for t in loaded)


def test_lcm_expand_of_the_real_lcm_engine_returns_the_messages_of_its_node(config):
    """The bundled lcm plugin compacts a long session; the model then calls ``lcm_expand`` on the
    first leaf node, whose result quotes the compacted messages back."""
    import json as _json

    from inspector.engines.discovery import load_engine
    from inspector.host.replay import replay
    from tests.host.conftest import NoCache, coding_session

    session = coding_session(34, tool_chars=8000, engine_tool="lcm_expand")
    session.messages[-3]["tool_calls"][0]["function"]["arguments"] = _json.dumps({"node_id": "L0-0001"})
    trace = replay(session, load_engine("lcm", config), config, simulator=NoCache())
    [tool] = [e for e in trace.events if e.kind == EV_TOOL]
    assert '"node_id": "L0-0001"' in trace.store.messages[tool.result["$msg"]]["content"]
    life = message_lifetimes(trace)
    returned = [m for m in life.messages if any(e.kind == lt.TOOL_RETURN for e in m.events)]
    assert returned
    for m in returned:
        ev = m.first(lt.TOOL_RETURN)
        assert ev.event == tool.index and ev.detail == "lcm_expand"
        assert m.removed is not None and m.removed.event < tool.index  # it had left the context
    asks = {trace.store.messages[m.key]["content"] for m in returned if m.role == "user"}
    assert {f"Please look at module {t} and fix the bug." for t in range(1, 5)} <= asks


@pytest.mark.parametrize("damage", [{"version": 1, "fingerprint": None, "lifetimes": "x"}, "not an object",
                                    {"quality": {"lifetimes": [1, 2]}}], ids=["stale", "not-object", "garbage"])
def test_a_damaged_saved_analysis_is_recomputed_and_the_trace_still_opens(run, tmp_path, damage):
    import json as _json

    trace = run(KeepLastTwo())
    expected = compute(trace).lifetimes.to_json()
    path = tmp_path / "run.trace.json"
    save_trace(trace, path)
    doc = _json.loads(path.read_text())
    doc["derived"] = damage if not isinstance(damage, dict) or "quality" in damage else {"quality": damage}
    if isinstance(damage, dict) and "quality" in damage:
        doc["derived"]["quality"]["fingerprint"] = {"events": len(trace.events), "requests": len(trace.requests)}
        doc["derived"]["quality"]["version"] = 1
    path.write_text(_json.dumps(doc))
    assert analyse(load_trace(path)).lifetimes.to_json() == expected
