"""What a token count is: the one vocabulary the window's panels and the HTML report label counts with.

A request has several token counts that differ by design (the tokenizer's count of what the
engine sent, the usage the host synthesised for ``update_from_response`` or the provider
reported, Hermes' rough estimate the gates compare, ...); a figure shown without saying which
it is cannot be checked against another. Every count a panel or the report shows names one of
:data:`COUNT_KINDS`.
"""

from __future__ import annotations

from collections.abc import Sequence

from inspector.trace.model import Trace

SENT = "sent"  # the tokenizer's count of the request the engine produced (messages + tool schemas)
MESSAGES_ONLY = "messages only"  # the tokenizer's count of the messages, without tool schemas
PROVIDER = "provider-reported"  # usage the provider returned (recorded in the transcript, or live)
SIMULATED = "simulated"  # usage the host synthesised for update_from_response during a replay
HIDDEN_PREFIX = "hidden prefix"  # provider-reported minus what the messages account for
ROUGH = "rough"  # Hermes' chars/4 estimate (what the gates compare)
ANCHORED = "anchored"  # last reported prompt + rough estimate of the messages appended since
COUNT_KINDS = (SENT, MESSAGES_ONLY, PROVIDER, SIMULATED, HIDDEN_PREFIX, ROUGH, ANCHORED)


def is_live(trace: Trace) -> bool:
    """A live chat's trace: its usage came from a real provider, not from the host's tokenizer."""
    return trace.meta.get("mode") == "live" or (trace.meta.get("session") or {}).get("format") == "live"


def usage_kind(trace: Trace) -> str:
    """What the usage handed to ``update_from_response`` is in this trace."""
    return PROVIDER if is_live(trace) else SIMULATED


# The summary table's token rows (inspector.trace.summary.SUMMARY_ROWS): what each sums, and whether
# it is the run's usage (simulated in a replay, provider-reported live) or the cache simulator's.
_USAGE_ROWS = {
    "tokens_sent": "sum of the usage prompt tokens given to update_from_response (in a replay the host's "
                   "tokenizer count of what the engine sent, with tool schemas)",
    "peak_prompt": "largest usage prompt tokens of one request",
}
_CACHE_ROWS = {
    "cache_read": "simulated prompt cache: tokens read from cache",
    "cache_write": "simulated prompt cache: tokens written to cache",
    "hit_rate": "simulated prompt cache: read ÷ (read + written + uncached)",
    "cost": "priced from the simulated cache figures with the provider's table",
}


def summary_row_kind(key: str, traces: Sequence[Trace | None]) -> str | None:
    """The count kind of a summary row over these runs' traces (None: the row is not a token count)."""
    if key in _CACHE_ROWS:
        return SIMULATED
    if key in _USAGE_ROWS:
        kinds = {usage_kind(t) for t in traces if t is not None}
        return kinds.pop() if len(kinds) == 1 else f"{SIMULATED} or {PROVIDER}"
    return None


def summary_row_tip(key: str) -> str:
    """What a summary row counts, in a sentence (a tooltip; empty for rows that are not counts)."""
    return _USAGE_ROWS.get(key) or _CACHE_ROWS.get(key) or ""
