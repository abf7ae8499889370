"""The one secret scrubber: every configured key masked, whatever its variable's name, its
encoding or the pieces it arrives in."""

from __future__ import annotations

import base64

import pytest

from inspector.config import load_config
from inspector.llm import secrets
from inspector.llm.secrets import MASK, StreamScrubber, key_env_names, mask_known, scrub_text

KEY = "lk-4f9b2c7d1e8a6f3b"


@pytest.fixture(autouse=True)
def _fresh_registry(monkeypatch):
    monkeypatch.setattr(secrets, "_KEY_ENVS", set())
    monkeypatch.setattr(secrets, "_CONFIG_KEYS", set())


def test_a_variable_named_by_any_api_key_env_setting_is_masked_whatever_its_name(monkeypatch):
    monkeypatch.setenv("LOCALTOKENX", KEY)  # a name no convention recognises
    monkeypatch.setenv("AUXVAR", "aux-9d8c7b6a5f4e3d2c")
    assert KEY in scrub_text(f"env: {KEY}")  # not known yet
    load_config(None, {"inspector": {"live": {"api_key_env": "LOCALTOKENX"}},
                       "auxiliary": {"compression": {"api_key_env": "AUXVAR"}}})
    assert scrub_text(f"env: {KEY} and aux-9d8c7b6a5f4e3d2c") == f"env: {MASK} and {MASK}"


def test_key_env_names_are_found_at_any_depth():
    config = {"a": {"b": {"api_key_env": "ONE"}}, "token_env": "TWO", "list": [{"secret_env": "THREE"}],
              "base_url_env": "NOT_A_KEY"}
    assert sorted(key_env_names(config)) == ["ONE", "THREE", "TWO"]


@pytest.mark.parametrize("prefix", ["", "x", "xy", "Basic user:", '{"key": "'])
def test_base64_and_hex_forms_are_masked_at_any_alignment(monkeypatch, prefix):
    monkeypatch.setenv("SERVICE_API_KEY", KEY)
    blob = base64.b64encode((prefix + KEY + " tail").encode()).decode()
    urlsafe = base64.urlsafe_b64encode((prefix + KEY).encode()).decode()
    hexed = (prefix + KEY).encode().hex()
    for encoded in (blob, urlsafe, hexed, hexed.upper()):
        out = scrub_text(f"stored: {encoded}")
        assert MASK in out
        # all but the two or three bytes at its edges (which depend on what surrounds it) is gone
        left = len(out) - len("stored: ") - len(MASK)
        assert left <= len(encoded) - (len(KEY) - 4) * 4 // 3


def test_auth_headers_are_masked_whatever_the_scheme():
    for header in ("Authorization: Basic dXNlcjpodW50ZXIy", "authorization=Token abcdef123456",
                   "Proxy-Authorization: Bearer abc.def.ghi123", "Authorization: rawcredential99"):
        out = scrub_text(f"sent {header} to the proxy")
        assert MASK in out or "[REDACTED]" in out
        assert header.split()[-1].split("=")[-1] not in out


def test_mask_known_replaces_only_known_values(monkeypatch):
    monkeypatch.setenv("SERVICE_API_KEY", KEY)
    assert mask_known(f"a {KEY} b sk-notknown-but-keyshaped") == f"a {MASK} b sk-notknown-but-keyshaped"


@pytest.mark.parametrize("cut", [1, 5, 10, len(KEY) - 1])
def test_a_key_split_over_streamed_pieces_is_never_shown(monkeypatch, cut):
    monkeypatch.setenv("SERVICE_API_KEY", KEY)
    scrubber = StreamScrubber()
    pieces = ["Here is the key: ", KEY[:cut], KEY[cut:], " and more text", " to follow."]
    shown = [scrubber.feed(p) for p in pieces] + [scrubber.flush()]
    assert "".join(shown) == f"Here is the key: {MASK} and more text to follow."
    assert not any(KEY[:cut] in s and len(KEY[:cut]) > 3 for s in shown)
    assert shown[0] == "Here is the key: "  # text before the key is not held back


def test_a_very_long_word_streams_without_waiting_for_a_space(monkeypatch):
    monkeypatch.setenv("SERVICE_API_KEY", KEY)
    scrubber = StreamScrubber()
    shown = scrubber.feed("x" * 10_000)
    assert len(shown) == 10_000  # nothing there can start a key
    assert scrubber.feed("y" * 5000 + KEY[:6]).endswith("y") and scrubber.feed(KEY[6:] + " ") == MASK + " "
