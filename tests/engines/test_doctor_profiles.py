"""The doctor checks what the chosen Hermes would do (inspector.host_profile), and only the files it imports."""

from __future__ import annotations

from inspector.config import load_config
from inspector.engines.doctor import compress_kwargs, run_doctor
from inspector.engines.doctor_static import imported_sources
from inspector.host.host import supported_compress_kwargs

from .conftest import BASIC, GENERAL

DIRS = [str(BASIC), str(GENERAL)]

IN_PLACE = '''
from agent.context_engine import ContextEngine


class InPlace(ContextEngine):
    name = "in_place"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return bool(self.threshold_tokens) and (prompt_tokens or 0) >= self.threshold_tokens

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        self.compression_count += 1
        messages[:] = [{"role": "assistant", "content": "summary"}] + messages[last_user:]
        return messages


def register(ctx):
    ctx.register_context_engine(InPlace())
'''


def _config(profile):
    return load_config(None, {"inspector": {"host_profile": profile}})


def _has(report, status, check, text=""):
    return any(f.status == status and f.check.startswith(check) and text in f.message for f in report.findings)


def _doctor(name, profile, dirs=DIRS):
    return run_doctor(name, _config(profile), dirs, timeout=5.0, include_project=False, include_entry_points=False)


def test_an_in_place_compaction_passes_under_0_19_0_and_fails_under_main(tmp_path):
    folder = tmp_path / "context_engine" / "in_place"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(IN_PLACE, encoding="utf-8")
    report = _doctor("in_place", "hermes-0.19.0", [str(tmp_path)])
    assert report.profile == "hermes-0.19.0" and report.to_json()["host_profile"] == "hermes-0.19.0"
    assert not report.failed, [f.to_json() for f in report.findings if f.status == "fail"]
    assert _has(report, "pass", "hook:compress", "hermes-0.19.0 commits that")
    assert not _has(report, "pass", "thread:pool")  # 0.19.0 compresses on the agent's thread
    report = _doctor("in_place", "hermes-main", [str(tmp_path)])
    assert _has(report, "fail", "hook:compress", "returned its own (changed) input list")


def test_under_0_19_0_no_shared_instance_check_and_no_post_release_hooks():
    report = _doctor("fixture_thread_unsafe", "hermes-0.19.0")
    assert _has(report, "pass", "thread:concurrent", "each agent has its own copy")
    assert not _has(report, "fail", "thread:concurrent")
    assert _has(report, "pass", "hook:select_context", "hermes-0.19.0 has no select_context")
    report = _doctor("fixture_thread_unsafe", "hermes-main")
    assert _has(report, "fail", "thread:concurrent", "results crossed")


def test_a_repo_root_plugin_is_checked_only_in_the_files_its_package_imports(tmp_path):
    root = tmp_path / "myengine"
    (root / "scripts").mkdir(parents=True)
    (root / "benchmarks").mkdir()
    (root / "core").mkdir()
    (root / "__init__.py").write_text("from .engine import Engine\nfrom .core import util\n")
    (root / "engine.py").write_text("import json\nfrom myengine.core.store import Store\n")
    (root / "core" / "__init__.py").write_text("")
    (root / "core" / "util.py").write_text("import os\n")
    (root / "core" / "store.py").write_text("def load():\n    from . import util\n")
    (root / "scripts" / "bench.py").write_text("import numpy_that_is_not_installed\n")
    (root / "benchmarks" / "run.py").write_text("import matplotlib_missing\n")
    names = sorted(str(p.relative_to(root)) for p in imported_sources(root))
    assert names == ["__init__.py", "core/__init__.py", "core/store.py", "core/util.py", "engine.py"]


def test_the_doctor_and_the_host_filter_compress_keywords_with_one_rule():
    class Old:
        def compress(self, messages, current_tokens=None):
            return messages

    class Any_:
        def compress(self, messages, **kwargs):
            return messages

    for engine in (Old(), Any_()):
        expected = supported_compress_kwargs(engine.compress, {"current_tokens": 5, "focus_topic": None, "force": False,
                                                               "memory_context": "m"})
        assert compress_kwargs(engine, 5, memory_context="m") == expected
    # An empty memory context is not offered at all (Hermes adds it only when non-empty).
    assert "memory_context" not in compress_kwargs(Any_(), 5)
    assert compress_kwargs(Old(), 5, memory_context="m") == {"current_tokens": 5}
