"""Our ``hermes_cli.plugins`` stand-in knows exactly Hermes 0.19.0's plugin hook names, so a plugin
registering any of them is accepted as Hermes accepts it, and any other name is called unknown."""

from __future__ import annotations

from inspector.engines.compat.plugins import VALID_HOOKS
from tests.differential.hermes_env import run_in_hermes


def test_valid_hooks_are_hermes():
    answer = run_in_hermes("hermes_hooks_driver.py", {})
    assert answer["refused"] == []
    assert sorted(VALID_HOOKS) == answer["valid_hooks"]
