"""Which sessions a batch finds in files, folders and state.db files."""

from __future__ import annotations

from inspector.batch.sources import discover


def test_a_folder_is_searched_recursively_and_a_state_db_gives_every_session(corpus):
    found = discover([str(corpus)])
    specs = sorted(ref.spec for ref in found.sessions)
    assert specs == sorted([
        str(corpus / "a.json"), str(corpus / "b.json"), str(corpus / "deep" / "c.json"),
        f"{corpus / 'state.db'}#db-session-0", f"{corpus / 'state.db'}#db-session-1",
    ])
    assert {ref.format for ref in found.sessions} >= {"hermes-db"}
    # The note is never opened; the JSON that is no transcript is skipped with its reason.
    assert [p for p, _ in found.skipped] == [str(corpus / "junk.json")]
    assert found.errors == []


def test_a_session_named_twice_is_replayed_once(corpus):
    found = discover([str(corpus / "a.json"), str(corpus), f"{corpus / 'state.db'}#db-session-1"])
    specs = [ref.spec for ref in found.sessions]
    assert specs.count(str(corpus / "a.json")) == 1
    assert sum(1 for s in specs if s.endswith("#db-session-1")) == 1


def test_a_named_file_that_is_no_transcript_is_an_error(corpus, tmp_path):
    found = discover([str(corpus / "junk.json"), str(tmp_path / "missing.json")])
    assert found.sessions == []
    assert [p for p, _ in found.errors] == [str(corpus / "junk.json"), str(tmp_path / "missing.json")]
