"""Our built-in compressor is Hermes 0.19.0's ContextCompressor, output for output.

The same request (``compressor_cases.build_request``) runs against the real wheel in its own
interpreter and against ``inspector.engines.compressor`` here, through the same job code
(``wire.py``). Returned lists are compared position by position (role, content, tool calls,
tool call id, keys), with only our own summary prose normalised; the state the host and
subclasses read is compared after every compaction and every scripted call.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.differential import compressor_cases as cases
from tests.differential import wire
from tests.differential.hermes_env import FIGURES, HermesRun, hermes_python


def first_difference(hermes: Any, ours: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """Where two results first differ, as ``(path, hermes', ours)``, or None."""
    if type(hermes) is not type(ours):
        return path, hermes, ours
    if isinstance(hermes, dict):
        for key in [*hermes, *(k for k in ours if k not in hermes)]:
            found = first_difference(hermes.get(key, "<absent>"), ours.get(key, "<absent>"), f"{path}/{key}")
            if found:
                return found
        return None
    if isinstance(hermes, list):
        for i, (a, b) in enumerate(zip(hermes, ours, strict=False)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        return (f"{path}.len", len(hermes), len(ours)) if len(hermes) != len(ours) else None
    return None if hermes == ours else (path, hermes, ours)


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    hermes_python()  # skips the module with the install's reason
    request = cases.build_request()
    started = time.monotonic()
    run = HermesRun("hermes_driver.py", request)
    first = {k: j for k, j in request["jobs"].items() if j["kind"] != "replay"}
    with cases.our_side() as side:
        ours = wire.run_jobs(side, {"sessions": request["sessions"], "jobs": first})
        answer = run.result()
        hermes = answer["results"]
        replays = {k: j for k, j in request["jobs"].items() if j["kind"] == "replay"}
        adopt = {k: hermes[k].pop("outputs") for k in replays}
        ours.update(wire.run_jobs(side, {"sessions": request["sessions"], "jobs": replays}, adopt))
    for key in replays:
        ours[key].pop("outputs", None)
    FIGURES["seconds"] = round(time.monotonic() - started, 1)
    return {"request": request, "hermes": hermes, "ours": ours, "refused": answer["refused"]}


def _compare(results: dict[str, Any], kind: str) -> tuple[list[str], list[str]]:
    keys = [k for k, job in results["request"]["jobs"].items() if job["kind"] == kind]
    bad = []
    for key in keys:
        found = first_difference(results["hermes"][key], results["ours"][key])
        if found:
            bad.append(f"{key}: at {found[0]}: Hermes {str(found[1])[:300]!r}, ours {str(found[2])[:300]!r}")
    return keys, bad


def test_hermes_made_no_connection(results):
    assert results["refused"] == []


def test_compress_returns_what_hermes_returns_on_every_input(results):
    keys, bad = _compare(results, "compress")
    inputs = {k.rsplit("|", 1)[0] for k in keys}
    in_all_modes = sum(1 for i in inputs if all(f"{i}|{m}" in results["hermes"] for m in wire.MODES))
    compacted = sum(1 for k in keys if results["hermes"][k].get("state", {}).get("_last_compression_made_progress"))
    FIGURES.update(inputs=len(inputs), inputs_in_all_modes=in_all_modes, modes=len(wire.MODES),
                   compress_calls=len(keys), compacted=compacted,
                   compress_identical=f"{100 * (len(keys) - len(bad)) / len(keys):.1f} %")
    if cases.corpus_missing() is None:
        assert in_all_modes >= 500
    assert compacted > len(keys) // 4  # most inputs really compact: the comparison is not vacuous
    assert not bad, f"{len(bad)} of {len(keys)} differ; first ones:\n" + "\n".join(bad[:10])


def test_scripted_decisions_match_hermes_at_every_step(results):
    keys, bad = _compare(results, "script")
    steps = sum(len(results["hermes"][k]["steps"]) for k in keys)
    FIGURES.update(scripted_steps=steps, scripted_identical=f"{100 * (len(keys) - len(bad)) / len(keys):.1f} % of sequences")
    assert not bad, f"{len(bad)} of {len(keys)} sequences differ; first ones:\n" + "\n".join(bad[:10])


def test_host_like_replay_matches_hermes_turn_by_turn(results):
    keys, bad = _compare(results, "replay")
    steps = sum(len(results["hermes"][k]["steps"]) for k in keys)
    compactions = {k.split("|", 2)[2]: sum(s["op"].startswith("compress") for s in results["hermes"][k]["steps"])
                   for k in keys}
    FIGURES.update(replay_steps=steps, replay_compactions=compactions)
    assert any(n > 1 for n in compactions.values())  # the replays really compact repeatedly
    assert not bad, f"{len(bad)} of {len(keys)} replays differ; first ones:\n" + "\n".join(bad[:10])
