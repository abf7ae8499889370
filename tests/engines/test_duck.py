"""What a duck-typed engine gives Hermes: FAIL only for what Hermes calls unguarded, WARN for the rest."""

from __future__ import annotations

from inspector.engines.contract import ContextEngine
from inspector.engines.duck import FAIL, FORWARDED, MISSING, OWN, WARN, describe, resolve


class Inner(ContextEngine):
    name = "inner"

    def update_from_response(self, usage):
        pass

    def should_compress(self, prompt_tokens=None):
        return False

    def should_compress_info(self, prompt_tokens=None):
        return False, "inner reason"

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        return list(messages)


class Forwarding:
    """Defines what Hermes calls unguarded; everything else reaches ``Inner`` through ``__getattr__``."""

    name = "forwarding"

    def __init__(self, inner=None):
        self._inner = inner or Inner()

    def __getattr__(self, attr):
        if attr.startswith("__") or attr == "_inner":
            raise AttributeError(attr)
        return getattr(self._inner, attr)

    def update_model(self, model, context_length, **kwargs):
        pass

    def get_tool_schemas(self):
        return []

    def update_from_response(self, usage):
        pass

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, **kwargs):
        return list(messages)

    def on_session_reset(self):
        pass


class Bare:
    """No __getattr__, and neither update_model nor on_session_reset."""

    name = "bare"

    def update_from_response(self, usage):
        pass

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, **kwargs):
        return list(messages)

    def get_tool_schemas(self):
        return []


def _texts(findings, status):
    return [text for s, text in findings if s == status]


def test_resolve_tells_own_from_forwarded_from_missing():
    engine = Forwarding()
    assert resolve(engine, "compress").how == OWN
    assert resolve(engine, "select_context").how == FORWARDED and resolve(engine, "select_context").owner == "Inner"
    assert resolve(engine, "last_prompt_tokens").how == FORWARDED
    assert resolve(Bare(), "select_context").how == MISSING


def test_a_forwarding_wrapper_that_defines_the_unguarded_hooks_is_at_most_a_warning():
    findings = describe(Forwarding())
    assert not _texts(findings, FAIL)
    warns = " | ".join(_texts(findings, WARN))
    assert "Forwarding is not a ContextEngine subclass" in warns and "without a type check" in warns
    assert "resolve only through __getattr__ (to Inner)" in warns and "select_context" in warns


def test_the_skip_check_outcome_of_each_forwarded_hook_is_named():
    warns = " | ".join(_texts(describe(Forwarding()), WARN))
    # Inner does not override select_context/on_turn_complete: they reach the base-class no-op.
    assert "select_context and on_turn_complete reach Inner's base-class no-op, so Hermes' skip check skips them" in warns
    assert "should_compress_info runs Inner's override, against its own state" in warns

    class Selecting(Inner):
        def select_context(self, request_messages, **kwargs):
            return None

    warns = " | ".join(_texts(describe(Forwarding(Selecting())), WARN))
    assert "select_context reach an override on Selecting, so Hermes' skip check lets them run" in warns


def test_host_writes_to_forwarded_attributes_are_said_to_stay_on_the_wrapper():
    warns = " | ".join(_texts(describe(Forwarding()), WARN))
    assert "attributes read through __getattr__: last_prompt_tokens" in warns
    assert "land on Forwarding and hide Inner's values" in warns


def test_missing_unguarded_hooks_fail_and_missing_guarded_ones_warn():
    findings = describe(Bare())
    (fail,) = _texts(findings, FAIL)
    assert "update_model (at agent init)" in fail and "on_session_reset (on /new" in fail and "AttributeError" in fail
    assert "compress (" not in fail
    warns = " | ".join(_texts(findings, WARN))
    assert "does not define" in warns and "select_context" in warns and "get_status" in warns
    assert "Hermes reads threshold_tokens, protect_first_n, protect_last_n, last_prompt_tokens directly" in warns
