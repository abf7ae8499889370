"""Redaction: the one-pass check that text may hold a secret never changes what is redacted."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from inspector.engines import redact

SPACES = [chr(i) for i in range(0x3001) if chr(i).isspace()]  # str.isspace() has none above U+3000


def _every_pattern(text: str) -> str:
    """The patterns applied one by one, as if no text could be ruled out."""
    for pattern, replacement in redact._PATTERNS:
        text = pattern.sub(replacement, text)
    return text


_PIECES = ["sk-", "sk-proj-", "ant-", "abcdefghij", "ABCDEFGHIJ", "0123456789", "_", "-", "risk-", "ghp_", "github_pat_",
           "xoxb-", "AKIA", "AIza", "Bearer", "bEaReR", "api_key", "API-KEY", "apikey", "secret", "to\u212aen", "token",
           "pa\u017fsword", "passwd", "=", ":", "'", '"', ",", ";", "-----BEGIN RSA PRIVATE KEY-----", "\n",
           "-----END RSA PRIVATE KEY-----", "é", "\ud800", *SPACES]


@given(st.lists(st.sampled_from(_PIECES), max_size=40))
def test_text_ruled_out_by_the_one_pass_check_is_text_no_pattern_changes(pieces):
    text = "".join(pieces)
    assert redact.redact_sensitive_text(text) == _every_pattern(text)


def test_a_secret_after_any_kind_of_space_is_redacted():
    for space in SPACES:
        text = f"export token{space}={space}'abcdef123456' done"
        assert redact.redact_sensitive_text(text) == _every_pattern(text) != text, repr(space)


def test_text_with_no_secret_is_returned_as_it_is():
    text = "token_1 = stream(42, 'cache')\n" * 1000
    assert redact.redact_sensitive_text(text) is text
