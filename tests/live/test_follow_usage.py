"""Follow mode feeds usage as a replay does: calibrated on the recorded calls seen so far, fitted
again as calls arrive, and it says so (a host note per fit, ``meta.usage_model.refits``)."""

from __future__ import annotations

from pathlib import Path

from inspector.config import load_config
from inspector.engines.discovery import load_engine
from inspector.host.calibration import usage_model_for
from inspector.host.replay import make_counter, replay
from inspector.live.follow import Follower
from inspector.sessions import load_session
from inspector.trace import model as tm
from tests.live.growing import CodexLog
from tests.live.helpers import NotesEngine

HEAD = 6_000  # what the provider counts that the rollout does not hold (Codex's own instructions)


def _turn(log: CodexLog, k: int) -> None:
    """One Codex turn: a question whose text grows with ``k``, the answer, the call's usage, task_complete."""
    log.prompt(f"t{k}", f"Question {k}: " + " ".join(f"module{k}_{i} needs a look" for i in range(40 * (k + 1))))
    log.say(f"Answer {k}: looked at every module.", "final_answer")
    log.usage(HEAD + 1_900 * (k + 1) + (37 * k) % 50)
    log.event("task_complete", turn_id=f"t{k}", last_agent_message=f"Answer {k}")


def _follower(path: Path, config: dict, engine: object = "compressor") -> Follower:
    return Follower(path, engine, config, interval=0.05, settle=0.5, counter=make_counter(config))


def test_follow_calibrates_on_the_calls_seen_so_far_and_refits_as_they_arrive(tmp_path: Path) -> None:
    config = load_config(None)
    log = CodexLog(tmp_path / "rollout.jsonl")
    follower = _follower(log.path, config)
    _turn(log, 0)
    assert follower.poll() == 1
    um = follower.trace.meta["usage_model"]
    assert um["mode"] == "calibrated" and um["calibration"]["calls"] == 1
    assert [r["recorded_calls"] for r in um["refits"]] == [1]
    notes = [ev.note for ev in follower.trace.events if ev.kind == tm.EV_NOTE and "follow: usage" in (ev.note or "")]
    assert notes and notes[0].startswith("follow: usage calibrated on the 1 recorded call(s) seen so far: head ")
    for k in range(1, 5):
        _turn(log, k)
        assert follower.poll() == 1
    um = follower.trace.meta["usage_model"]
    assert [r["recorded_calls"] for r in um["refits"]] == [1, 2, 3, 4, 5], "fitted again as each call arrived"
    notes = [ev.note for ev in follower.trace.events if ev.kind == tm.EV_NOTE and "refitted" in (ev.note or "")]
    assert len(notes) == 4 and "on the 5 recorded call(s) seen so far" in notes[-1]
    # the last fit is the one a replay of the same source makes
    session = load_session(str(log.path))
    expected = usage_model_for(config, session, make_counter(config)).calibration.to_json()
    assert um["calibration"] == expected
    assert um["calibration"]["method"].startswith("Theil–Sen over 5 recorded calls")
    assert um["fed_per_request"] == ["recorded"] * 5, "each call is the agent's request: fed its recorded usage"
    # and what the engine was fed matches a replay's, request by request
    replayed = replay(session, load_engine("compressor", config), config)
    assert [r.usage for r in follower.trace.requests] == [r.usage for r in replayed.requests]
    follower.close()


def test_a_request_that_is_not_the_agents_is_fed_the_fit_in_force_when_it_was_played(tmp_path: Path) -> None:
    config = load_config(None)
    log = CodexLog(tmp_path / "rollout.jsonl")
    follower = _follower(log.path, config, NotesEngine())  # its tool schemas make every request differ
    for k in range(3):
        _turn(log, k)
        follower.poll()
    um = follower.trace.meta["usage_model"]
    assert um["fed_per_request"] == ["calibrated"] * 3
    for request, fit in zip(follower.trace.requests, um["refits"]):
        ours = request.tokens["tiktoken"]
        assert request.usage["prompt_tokens"] == round(fit["hidden_tokens"] + fit["ratio"] * ours)
    assert len({(f["hidden_tokens"], f["ratio"]) for f in um["refits"]}) == 3, "each call moved the fit"
    follower.close()


def test_follow_keeps_the_usage_mode_the_config_names(tmp_path: Path) -> None:
    config = load_config(None, {"inspector": {"usage": "tokenizer"}})
    log = CodexLog(tmp_path / "rollout.jsonl")
    follower = _follower(log.path, config)
    for k in range(2):
        _turn(log, k)
        follower.poll()
    um = follower.trace.meta["usage_model"]
    assert um["mode"] == "tokenizer" and um["calibration"] is None
    assert um["fed_per_request"] == ["tokenizer", "tokenizer"]
    recorded = [r.recorded["prompt_tokens"] for r in follower.trace.requests]
    assert [r.usage["prompt_tokens"] for r in follower.trace.requests] != recorded, "our own count, not the recorded one"
    follower.close()


def test_a_follow_in_a_worker_shows_the_usage_fit_while_it_goes(tmp_path: Path) -> None:
    import threading

    from inspector.worker.commands import follow_in_worker

    log = CodexLog(tmp_path / "rollout.jsonl")
    _turn(log, 0)
    seen: list[dict] = []
    stop = threading.Event()

    def on_frame(worker, frame) -> None:  # noqa: ANN001 - a Worker and its frame
        if frame.get("type") == "update" and worker.assembler is not None:
            seen.append(worker.assembler.trace.meta.get("usage_model") or {})
            if len(seen) < 3:
                _turn(log, len(seen))  # the agent goes on while the follow shows what it has
            else:
                stop.set()

    job = {"source": str(log.path), "engine": "compressor", "interval": 0.05, "settle": 0.5, "max_seconds": 30}
    outcome = follow_in_worker(job, load_config(None), stop=stop, on_frame=on_frame)
    assert outcome.trace is not None and len(seen) == 3, "an update per turn while following"
    assert [um["calibration"]["calls"] for um in seen] == [1, 2, 3], "each update has the fit as of its poll"
    assert [len(um["fed_per_request"]) for um in seen] == [1, 2, 3]
