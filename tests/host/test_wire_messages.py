"""The replay's engine-facing message forms: one object per message while it is played, none after."""

from __future__ import annotations

from inspector.host import responders
from inspector.host.replay import replay
from inspector.host.responders import WireMessages

from .conftest import CountingEngine, coding_session


def test_a_form_is_the_same_object_until_released_then_an_equal_new_one():
    s = coding_session(2)
    wire = WireMessages(s)
    form = wire[1]
    assert wire[1] is form
    wire.release(range(1, 3))
    again = wire[1]
    assert again == form and again is not form


def test_releasing_a_form_drops_its_measured_key_with_it():
    s = coding_session(2)
    wire = WireMessages(s)
    _, key = wire.sent_form(1)
    form = wire[1]
    assert wire.measured[id(form)][0] == key
    wire.release(range(1, 2))
    assert id(form) not in wire.measured  # a later form with the same id must not find it


def test_a_replay_keeps_no_form_of_a_turn_it_has_played(config, nocache, monkeypatch):
    made: list[WireMessages] = []
    init = WireMessages.__init__
    monkeypatch.setattr(responders.WireMessages, "__init__", lambda self, session: made.append(self) or init(self, session))
    s = coding_session(4)
    trace = replay(s, CountingEngine(), config, simulator=nocache)
    assert len(trace.requests) == 8 and len(made) == 1
    played = {i for t in s.turns for i in range(t.start, t.end)}
    assert played and not played & set(made[0]._forms)
    assert not made[0].measured.keys() - {id(f) for f in made[0]._forms.values()}
