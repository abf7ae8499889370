"""Which Hermes the host plays: profiles as data (a hook table and gate rules).

A profile says, for one Hermes version, which engine hooks the agent loop calls, how each is
called (checked for first or skipped unless overridden, on the host thread or a pool thread,
which arguments the trace records) and the rules of the compaction gates (which token figure each
gate uses, what ``compress`` is handed, whether an in-place compaction commits). The host reads
only these rows, so the same engine can be replayed under two Hermes versions and compared.

- ``hermes-0.19.0``: the release, read from the hermes-agent 0.19.0 wheel (file:line below) and
  checked by running its ``AIAgent`` (``tests/differential/test_agent_*.py``).
- ``hermes-main``: the contract of Hermes' development line after 0.19.0 as the project's
  reference describes it (``docs``: hermes-host.md [M]): ``select_context`` before every request,
  ``on_turn_complete``, ``should_compress_info``, ``prune_tool_results_only``, ``compress`` on a
  pool thread over a deep copy with a timeout, the usage anchor at the gates.
"""

from __future__ import annotations

import functools
import importlib.metadata
from dataclasses import dataclass, field
from typing import Any

from inspector.trace.model import (
    EV_COMPRESS,
    EV_DEFER,
    EV_PRUNE,
    EV_RESPONSE,
    EV_SELECT,
    EV_SESSION_END,
    EV_SESSION_START,
    EV_SHOULD,
    EV_SHOULD_INFO,
    EV_TOOL,
    EV_TOOL_SCHEMAS,
    EV_TURN_COMPLETE,
    EV_UPDATE_MODEL,
)

# How the host decides whether to call a hook at all.
REQUIRED = "required"  # called unchecked (Hermes would raise without it)
CHECKED = "checked"  # called when the engine has it (getattr/hasattr in Hermes)
OVERRIDDEN = "overridden"  # skipped unless the engine overrides the base class's no-op

INLINE = "inline"
POOL = "pool"


class ProfileError(ValueError):
    """``inspector.host_profile`` names no profile; the message lists the ones there are."""


@dataclass(frozen=True)
class HookRow:
    """One engine hook as a profile's host calls it."""

    hook: str
    event: str  # the trace event kind a call is recorded as
    call: str = REQUIRED  # REQUIRED, CHECKED or OVERRIDDEN: whether the host calls it at all
    thread: str = INLINE  # INLINE (the host's thread) or POOL (a pooled daemon thread)
    records: tuple[str, ...] = ()  # the arguments the trace records (the recorder keeps no others)


@dataclass(frozen=True)
class GateRules:
    """The compaction gates' token figures and what a compress result means."""

    # Pre-API gate: "rough" = estimate of the assembled request plus tool schemas
    # (agent/conversation_loop.py:1087-1090); "usage_anchor" = last real prompt plus the rough
    # size of what was appended since ([M] turn_request_assembly).
    pre_api_tokens: str
    # After a tool round: "last_prompt" = engine.last_prompt_tokens (0 after a compaction, the
    # rough request estimate when 0), passed on as current_tokens (conversation_loop.py:5121-5147);
    # "usage_anchor" as above.
    post_tool_tokens: str
    # Skip the post-tool check while awaiting_real_usage_after_compression is set ([M]).
    post_tool_waits_for_usage: bool
    # compress gets the live list ("live", conversation_compression.py:1060) or a deep copy ("snapshot").
    compress_input: str
    # An engine that edits the list in place and returns it: commits (0.19.0 compares with a deep
    # copy taken before, conversation_compression.py:1059,1104) or is a no-op ([M] worker).
    in_place_commits: bool
    # The host may read get_status() after hooks (it is side-effect free) or only at the start and end.
    status_in_loop: bool
    # In a tool batch, each result joins the history before the next engine tool call
    # (agent/tool_executor.py:1028 sequential path) or all after the batch.
    tool_results_each: bool
    # Repair the live history's role sequence before each request (inspector/host/repair.py).
    repair_history: bool = False


@dataclass(frozen=True)
class HostProfile:
    name: str
    hermes_version: str
    description: str
    hooks: tuple[HookRow, ...]
    gates: GateRules
    differences: tuple[str, ...] = field(default=())

    def row(self, hook: str) -> HookRow | None:
        for row in self.hooks:
            if row.hook == hook:
                return row
        return None

    def has(self, hook: str) -> bool:
        return self.row(hook) is not None

    def on_pool(self, hook: str) -> bool:
        row = self.row(hook)
        return row is not None and row.thread == POOL

    def as_meta(self) -> dict[str, Any]:
        """What a trace records of its profile."""
        return {"name": self.name, "hermes_version": self.hermes_version, "hooks": [r.hook for r in self.hooks]}


# Hooks both versions call, in the order an agent first calls them.
_COMMON = (
    HookRow("update_model", EV_UPDATE_MODEL, REQUIRED, INLINE,
            ("model", "context_length", "base_url", "provider", "api_mode", "model_thresholds", "reason")),
    HookRow("bind_session_state", "bind_session_state", CHECKED, INLINE, ("session_id",)),
    HookRow("get_tool_schemas", EV_TOOL_SCHEMAS, REQUIRED, INLINE),
    HookRow("on_session_start", EV_SESSION_START, CHECKED, INLINE,
            ("session_id", "platform", "model", "context_length", "hermes_home", "boundary_reason")),
    HookRow("should_defer_preflight_to_real_usage", EV_DEFER, OVERRIDDEN, INLINE, ("rough_tokens",)),
    HookRow("should_compress", EV_SHOULD, REQUIRED, INLINE, ("prompt_tokens", "site", "figure")),
    HookRow("update_from_response", EV_RESPONSE, REQUIRED, INLINE, ("usage",)),
    HookRow("handle_tool_call", EV_TOOL, REQUIRED, INLINE, ("name", "args", "call_id")),
    HookRow("on_session_end", EV_SESSION_END, CHECKED, INLINE, ("session_id", "messages", "reason")),
)

HERMES_0_19_0 = HostProfile(
    name="hermes-0.19.0",
    hermes_version="0.19.0",
    description="the hermes-agent 0.19.0 release (verified against its AIAgent)",
    hooks=_COMMON + (
        # compress runs on the agent's thread with the live list (agent/conversation_compression.py:1034-1060).
        HookRow("compress", EV_COMPRESS, REQUIRED, INLINE,
                ("messages", "site", "kwargs", "tokens_before", "host_thread")),
    ),
    gates=GateRules(pre_api_tokens="rough", post_tool_tokens="last_prompt", post_tool_waits_for_usage=False,
                    compress_input="live", in_place_commits=True, status_in_loop=False, tool_results_each=True,
                    repair_history=True),
    differences=(
        "Host profile hermes-0.19.0: the hooks and gates of the hermes-agent 0.19.0 release (no select_context, "
        "on_turn_complete, should_compress_info or prune_tool_results_only; compress on the agent's thread with "
        "the live list, no timeout but the inspector's hook watchdog).",
        "With a session database Hermes 0.19.0 stamps `_db_persisted: True` on every row it has written, and its "
        "rough token estimates (preflight, pre-API, post-tool fallback) count the marker, about 6 tokens a row; the "
        "host models no database, so its rough figures for such a session are lower by about that much.",
        "An engine's own get_status() is never called (Hermes 0.19.0's loop never calls it); events show the token "
        "attributes, and the status of engines that keep the base class's get_status (side-effect free).",
    ),
)

HERMES_MAIN = HostProfile(
    name="hermes-main",
    hermes_version="main after 0.19.0",
    description="Hermes' development line after 0.19.0 (the seed's documented contract)",
    hooks=_COMMON + (
        HookRow("select_context", EV_SELECT, OVERRIDDEN, INLINE, ("request_messages", "budget_tokens")),
        HookRow("should_compress_info", EV_SHOULD_INFO, OVERRIDDEN, INLINE, ("prompt_tokens",)),
        HookRow("prune_tool_results_only", EV_PRUNE, OVERRIDDEN, INLINE, ("messages", "current_tokens")),
        HookRow("on_turn_complete", EV_TURN_COMPLETE, OVERRIDDEN, INLINE,
                ("messages", "usage", "api_call_count", "turn_exit_reason")),
        HookRow("compress", EV_COMPRESS, REQUIRED, POOL, ("messages", "site", "kwargs", "tokens_before", "host_thread")),
    ),
    gates=GateRules(pre_api_tokens="usage_anchor", post_tool_tokens="usage_anchor", post_tool_waits_for_usage=True,
                    compress_input="snapshot", in_place_commits=False, status_in_loop=True, tool_results_each=False),
    differences=(
        "Host profile hermes-main: Hermes' development line after 0.19.0 as documented (select_context, "
        "on_turn_complete, should_compress_info, prune_tool_results_only; compress on a pool thread over a deep "
        "copy with compression.context_timeout_seconds); not checked against a running agent.",
        "All engine tool calls of one batch run before the batch's recorded results join the history.",
        "The host reads get_status() after hooks to show it (only when a token attribute changed, for engines that "
        "keep the base class's); Hermes itself does not call it during a turn.",
    ),
)

PROFILES: dict[str, HostProfile] = {p.name: p for p in (HERMES_0_19_0, HERMES_MAIN)}
DEFAULT_PROFILE = HERMES_MAIN.name


@functools.lru_cache(maxsize=1)
def installed_hermes_version() -> str | None:
    """The version of hermes-agent installed beside the inspector, without importing it (read once)."""
    try:
        return importlib.metadata.version("hermes-agent")
    except importlib.metadata.PackageNotFoundError:
        return None
    except Exception:
        return None


def default_profile_name() -> str:
    """The installed Hermes' profile when we have one for its version, else ``hermes-main``."""
    version = installed_hermes_version()
    for profile in PROFILES.values():
        if version and profile.hermes_version == version:
            return profile.name
    return DEFAULT_PROFILE


def profile_named(name: str) -> HostProfile:
    profile = PROFILES.get(str(name).strip())
    if profile is None:
        raise ProfileError(f"unknown host profile {name!r} (inspector.host_profile); profiles: "
                           + ", ".join(f"{p.name} ({p.description})" for p in PROFILES.values()))
    return profile


def profile_for(config: dict[str, Any]) -> HostProfile:
    """The profile ``config`` chooses (``inspector.host_profile``), else the default."""
    insp = config.get("inspector") if isinstance(config, dict) else None
    name = insp.get("host_profile") if isinstance(insp, dict) else None
    return profile_named(name) if name else profile_named(default_profile_name())
