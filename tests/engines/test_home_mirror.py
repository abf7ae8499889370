"""``~`` for engine code: the real home with ``.hermes`` swapped for the run's sandbox."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

from inspector.engines import home_mirror


def test_inside_a_run_the_home_is_the_mirror_and_hermes_is_the_sandbox(tmp_path, monkeypatch):
    home, sandbox = tmp_path / "home", tmp_path / "sandbox"
    (home / ".hermes").mkdir(parents=True)
    (home / ".config").mkdir()
    (home / ".config" / "tool.toml").write_text("x = 1")
    sandbox.mkdir()
    monkeypatch.setenv("HOME", str(home))
    mirror = home_mirror.make_mirror(sandbox)
    try:
        with home_mirror.using(mirror):
            assert Path.home() == mirror
            assert os.path.expanduser("~/.hermes/state.db") == f"{mirror}/.hermes/state.db"
            assert Path("~/.hermes").expanduser().resolve() == sandbox.resolve()
            assert (Path.home() / ".config" / "tool.toml").read_text() == "x = 1"
            assert os.path.expanduser(b"~/x") == os.fsencode(f"{mirror}/x")
            assert os.path.expanduser("~root") == home_mirror._real_expanduser("~root")
            assert os.path.expanduser("/abs/~/x") == "/abs/~/x"
            assert home_mirror.real_home() == home
        assert Path.home() == home  # outside the run, nothing changed
    finally:
        shutil.rmtree(mirror)  # the mirror holds links only: removing it leaves their targets
    assert (home / ".config" / "tool.toml").exists() and (home / ".hermes").is_dir()


def test_threads_outside_a_run_get_the_process_mirror_and_the_main_thread_the_real_home(tmp_path, monkeypatch):
    """A thread an engine starts does not inherit the run's context; it must still not see the real home."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setitem(home_mirror._process_mirror, "path", str(tmp_path / "process-mirror"))
    seen = {}
    with home_mirror.using(tmp_path / "run-mirror"):
        t = threading.Thread(target=lambda: seen.update(home=Path.home()))
        t.start()
        t.join()
        assert Path.home() == tmp_path / "run-mirror"
    assert seen["home"] == tmp_path / "process-mirror"
    assert Path.home() == tmp_path  # the inspector's own code on the main thread


def test_a_mirror_is_registered_for_removal_before_it_is_filled(tmp_path, monkeypatch):
    """An interrupt (SIGTERM) while the links are made must not leave the folder behind."""
    import pytest

    (tmp_path / "a").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path))

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "symlink", interrupted)
    registry: set[Path] = set()
    with pytest.raises(KeyboardInterrupt):
        home_mirror.make_mirror(tmp_path, registry)
    (mirror,) = registry
    assert mirror.is_dir()
    shutil.rmtree(mirror)
