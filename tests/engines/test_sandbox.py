from __future__ import annotations

import yaml

from inspector.engines.sandbox import create_sandbox, list_written_files


def test_sandbox_holds_config_and_lists_writes(config):
    with create_sandbox(config) as sb:
        assert yaml.safe_load(sb.config_path.read_text())["compression"]["threshold"] == config["compression"]["threshold"]
        assert list_written_files(sb) == []
        (sb.path / "engine").mkdir()
        (sb.path / "engine" / "state.db").write_bytes(b"x" * 10)
        assert list_written_files(sb) == [("engine/state.db", 10)]
        path = sb.path
    assert not path.exists()


def test_real_home_only_when_asked_and_never_deleted(config, tmp_path):
    (tmp_path / "old.txt").write_text("keep")
    sb = create_sandbox(config, real_home=tmp_path)
    (tmp_path / "new.txt").write_text("n")
    assert list_written_files(sb) == [("new.txt", 1)]
    sb.cleanup()
    assert (tmp_path / "old.txt").exists()
