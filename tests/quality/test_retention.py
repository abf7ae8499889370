"""Retention: the share of the compacted part's facts the next request still makes available."""

from __future__ import annotations

from fractions import Fraction

from inspector.quality.analysis import compute
from inspector.quality.retention import CARRIED, LOST, SUMMARY

from .conftest import KeepLastTwo, Lossless, url


def only(points):
    assert len(points) == 1
    return points[0]


def test_an_engine_that_drops_known_facts_scores_exactly_the_constructed_retention(run):
    class TwoOfFive(KeepLastTwo):
        keep = (url(1), url(3))

    analysis = compute(run(TwoOfFive()))
    point = only(analysis.retention.compactions)
    # the compaction took out turns 0-4 (five URLs) and its summary repeats two of them
    assert sorted(f.fact.text for f in point.facts) == [url(k) for k in range(5)]
    assert Fraction(point.count(SUMMARY) + point.count(CARRIED), point.total) == Fraction(2, 5)
    assert point.retention == 2 / 5
    assert sorted(f.fact.text for f in point.lost) == [url(0), url(2), url(4)]
    assert {f.fact.text: f.status for f in point.facts}[url(1)] == SUMMARY
    assert analysis.run_retention == 2 / 5  # nothing came back later


def test_an_engine_that_keeps_everything_scores_100_percent(run):
    analysis = compute(run(Lossless()))
    point = only(analysis.retention.compactions)
    assert point.total == 5 and point.retention == 1.0
    assert all(f.status == SUMMARY for f in point.facts)  # available, but only in the engine's summary
    assert analysis.run_retention == 1.0


def test_a_summary_that_writes_nothing_loses_every_fact_it_took_out(run):
    class Nothing(KeepLastTwo):
        summary = False

    point = only(compute(run(Nothing())).retention.compactions)
    assert point.total == 5 and point.retention == 0.0
    assert all(f.status == LOST for f in point.facts)


def test_facts_are_found_normalised_as_well_as_verbatim(run):
    class Shouting(KeepLastTwo):
        def rewrite(self, messages):
            body = " ".join(str(m.get("content")).upper() for m in messages[:-2] if m.get("role") == "user")
            return [{"role": "user", "content": "[SUMMARY] " + body}, *messages[-2:]]

    point = only(compute(run(Shouting())).retention.compactions)
    assert point.retention == 1.0
    assert all(f.normalised for f in point.facts)  # only the case-folded form matches


def test_facts_made_ahead_from_the_session_are_the_ones_the_analysis_would_extract(run, monkeypatch):
    from inspector.host.replay import wire_form
    from inspector.quality import facts as fx
    from inspector.quality.analysis import facts_ahead, forget_facts_ahead
    from inspector.trace.model import message_key

    from .conftest import url_session

    session = url_session()
    trace = run(KeepLastTwo(), session)
    fresh = compute(trace).to_json({})
    forget_facts_ahead()
    fx.prepare_facts((message_key(wire_form(m)), wire_form(m)) for m in session.messages)
    extracted: list[int] = []
    real = fx.message_facts
    monkeypatch.setattr(fx, "message_facts", lambda message, origin: extracted.append(origin) or real(message, origin))
    try:
        assert compute(trace).to_json({}) == fresh  # the same analysis, every fact
        assert extracted == []  # ... and no session message extracted again: all were keyed as the trace keys them
    finally:
        forget_facts_ahead()
    with facts_ahead(session.messages):  # the command's way: on a thread while the replay runs
        pass
    forget_facts_ahead()


def test_a_text_searched_through_its_pieces_answers_every_lookup_as_a_scan_does():
    import random

    from inspector.quality.retention import _Pieces

    rng = random.Random(20)
    alphabet = "ab c\u00e9\u241e\n,1"  # few letters: most pieces of a needle are in the text, so the scan decides
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 400)))
        pieces = _Pieces(text)
        for _ in range(40):
            start = rng.randint(0, len(text))
            needle = text[start:start + rng.randint(1, 30)]
            if needle and rng.random() < 0.5:  # one character changed: usually absent
                at = rng.randrange(len(needle))
                needle = needle[:at] + rng.choice(alphabet) + needle[at + 1:]
            assert (needle in pieces) == (needle in text), (needle, text)


def test_many_facts_looked_up_through_pieces_get_the_statuses_scans_give(run, monkeypatch):
    from inspector.quality import retention

    from .conftest import url_session

    class Half(KeepLastTwo):
        after = 30
        keep = tuple(url(k) for k in range(0, 40, 2))

    trace = run(Half(), url_session(40))
    monkeypatch.setattr(retention, "PIECES_FROM_FACTS", 10**9)
    scanned = compute(trace).to_json({})
    monkeypatch.setattr(retention, "PIECES_FROM_FACTS", 1)
    searched = compute(trace).to_json({})
    assert searched == scanned
    statuses = [s[3] for s in scanned["retention"]["compactions"][0]["facts"]]
    assert statuses.count(SUMMARY) >= 10 and statuses.count(LOST) >= 10  # both answers were looked up
