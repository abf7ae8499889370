"""Save and reopen a comparison as one file."""

from __future__ import annotations

import json

import pytest

from inspector.compare import load_comparison, parse_specs, run_comparison, save_comparison, summary_table
from inspector.trace.io import TraceFormatError, save_bundle, save_trace

from .conftest import make_session, synthetic_trace


@pytest.fixture(scope="module")
def comparison(plugin_dir):
    from inspector.config import load_config

    cfg = load_config(None, {"model": {"default": "claude-opus-4-5"}})
    specs = parse_specs(["cmp_tail:compression.threshold=0.6,label=tail", "cmp_broken", "cmp_never",
                         "cmp_never:auxiliary.compression.api_key=sk-secret"])
    return run_comparison(make_session(), specs, cfg, plugin_dirs=[str(plugin_dir)])


@pytest.mark.parametrize("name", ["cmp.json", "cmp.json.gz"])
def test_round_trip(comparison, tmp_path, name):
    path = tmp_path / name
    save_comparison(comparison, path)
    back = load_comparison(path)
    assert back.labels == comparison.labels
    assert [r.spec.engine for r in back.runs] == [r.spec.engine for r in comparison.runs]
    assert back.runs[0].spec.overrides == (("compression.threshold", 0.6),)
    assert [r.status for r in back.runs] == [r.status for r in comparison.runs]
    assert back.runs[1].trace is None and back.runs[1].error == comparison.runs[1].error
    assert back.session == comparison.session
    assert back.alignment.rows == comparison.alignment.rows
    assert back.alignment.index == comparison.alignment.index
    old, new = summary_table(comparison), summary_table(back)
    assert [r.values for r in new.rows] == [r.values for r in old.rows]
    for a, b in zip(comparison.traces, back.traces):
        if a is None:
            assert b is None
            continue
        assert [r.selected for r in a.requests] == [r.selected for r in b.requests]
        assert [a.request_messages(r) for r in a.requests] == [b.request_messages(r) for r in b.requests]


def test_secrets_in_overrides_are_not_saved(comparison, tmp_path):
    path = tmp_path / "cmp.json"
    save_comparison(comparison, path)
    assert "sk-secret" not in path.read_text(encoding="utf-8")


def test_plain_bundle_opens_as_comparison(tmp_path):
    a, b = synthetic_trace([1, 2]), synthetic_trace([2, 1])
    a.meta["label"] = b.meta["label"] = "same"
    path = tmp_path / "plain.json"
    save_bundle([a, b], path)
    back = load_comparison(path)
    assert back.labels == ["same", "same #2"]
    assert len(back.alignment.rows) == 4


def test_a_single_trace_is_refused_clearly(tmp_path):
    path = tmp_path / "one.json"
    save_trace(synthetic_trace([1]), path)
    with pytest.raises(TraceFormatError, match="single trace"):
        load_comparison(path)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "nope"}), encoding="utf-8")
    with pytest.raises(TraceFormatError):
        load_comparison(bad)
