"""Task keys: equal exactly when everything that decides a result is equal."""

from __future__ import annotations

import shutil

import pytest

from inspector.batch.sources import SessionRef
from inspector.batch.tasks import (
    files_hash,
    make_task,
    parse_sweeps,
    session_hash,
    setting_config,
    setting_label,
    source_files,
    task_key,
)
from inspector.config import ConfigError, load_config
from inspector.sessions import load_session
from tests.batch.conftest import write_session

ENGINE = {"name": "compressor", "version": "", "code": ""}


def test_sweeps_give_every_combination_of_their_values():
    settings = parse_sweeps(["compression.threshold=0.5,0.7", "compression.protect_last_n=10,20,30"])
    assert len(settings) == 6
    assert settings[0] == {"compression.threshold": 0.5, "compression.protect_last_n": 10}
    assert setting_label(settings[-1]) == "compression.threshold=0.7 compression.protect_last_n=30"
    assert parse_sweeps([]) == [{}] and setting_label({}) == "default"
    for bad in ("compression.threshold", "=1,2", "k="):
        with pytest.raises(ConfigError, match="--sweep"):
            parse_sweeps([bad])


def test_a_setting_overrides_only_its_key():
    base = load_config(None, {"compression": {"target_ratio": 0.3}})
    config = setting_config(base, {"compression.threshold": 0.7})
    assert config["compression"]["threshold"] == 0.7 and config["compression"]["target_ratio"] == 0.3
    assert base["compression"]["threshold"] == 0.5  # the base is not changed


def test_the_session_hash_follows_content_not_path(tmp_path):
    a = write_session(tmp_path / "a.json", 4, seed=1)
    moved = tmp_path / "elsewhere" / "a.json"
    moved.parent.mkdir()
    shutil.copy(a, moved)
    assert session_hash(load_session(str(a))) == session_hash(load_session(str(moved)))
    write_session(moved, 4, seed=2)
    assert session_hash(load_session(str(a))) != session_hash(load_session(str(moved)))


def test_the_key_changes_with_the_engine_its_code_and_the_config():
    config = load_config(None)
    key = task_key("s", ENGINE, config)
    assert key == task_key("s", dict(ENGINE), load_config(None))
    assert key != task_key("t", ENGINE, config)
    assert key != task_key("s", {**ENGINE, "name": "recall"}, config)
    assert key != task_key("s", {**ENGINE, "version": "0.2"}, config)
    assert key != task_key("s", {**ENGINE, "code": "abc"}, config)
    assert key != task_key("s", ENGINE, setting_config(config, {"compression.threshold": 0.6}))
    assert key != task_key("s", ENGINE, setting_config(config, {"inspector.cache_profile": "openai"}))


def test_an_engines_code_hash_changes_when_a_file_of_it_changes(tmp_path):
    engine = tmp_path / "my_engine"
    engine.mkdir()
    (engine / "__init__.py").write_text("X = 1\n")
    (engine / "helper.py").write_text("Y = 1\n")
    before = files_hash(source_files(engine))
    assert before == files_hash(source_files(engine))
    (engine / "helper.py").write_text("Y = 2\n")
    assert files_hash(source_files(engine)) != before


def test_a_task_is_plain_json_and_names_its_trace_by_its_key(tmp_path):
    import json

    ref = SessionRef(spec="s.json", path="s.json")
    task = make_task(ref, "digest", ENGINE, {"compression.threshold": 0.6}, load_config(None), [], str(tmp_path))
    assert json.loads(json.dumps(task)) == task
    assert task["trace_path"] == str(tmp_path / f"{task['key']}.json.gz")
    assert task["setting_label"] == "compression.threshold=0.6"
