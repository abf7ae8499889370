"""Where our stand-ins of Hermes' modules differ in public API from hermes-agent 0.19.0: ONE list.

The stand-ins (``agent.context_engine``, ``agent.context_compressor``, ``agent.error_classifier``)
expose Hermes 0.19.0's public names with its signatures (parameters, defaults, return annotations), so a plugin that
probes for a name or introspects a signature sees what it would see under that Hermes. The
exceptions are the seed contract's names, which later Hermes versions add and engines written
for them use (docs/host-contract.md §1); they are listed here, and the API snapshot test
(``tests/differential/test_api_snapshot.py``) fails on any other difference, either way.
"""

from __future__ import annotations

HERMES_VERSION = "0.19.0"

# Names ours has and Hermes 0.19.0 has not (scope: module, or module.Class).
ADDITIONS: dict[str, frozenset[str]] = {
    "agent.context_engine": frozenset({"automatic_compaction_status_message"}),
    "agent.context_engine.ContextEngine": frozenset({
        "select_context", "on_turn_complete", "should_compress_info", "prune_tool_results_only",
        "pending_compression_operation", "get_automatic_compaction_status_message",
        "emit_automatic_compaction_status",
    }),
    "agent.context_compressor": frozenset({"resolve_model_threshold"}),
    "agent.context_compressor.ContextCompressor": frozenset({
        "select_context", "on_turn_complete", "should_compress_info", "prune_tool_results_only",
        "pending_compression_operation", "get_automatic_compaction_status_message",
        "emit_automatic_compaction_status", "model_thresholds", "offline_stand_in", "record_timeout_failure",
    }),
}

# Names Hermes 0.19.0 has and ours has not, with the reason: none.
OMISSIONS: dict[str, dict[str, str]] = {}

# Members whose signature differs, with how: only keyword-only parameters with defaults (or a
# ``**kwargs``) are added after Hermes' own.
SIGNATURE_EXTRAS: dict[str, str] = {
    "agent.context_compressor.call_llm": "**extra: keywords of newer Hermes versions are accepted (and recorded)",
    "agent.context_compressor.get_model_context_length": "**_ignored: keywords of newer Hermes versions",
    "agent.context_compressor.ContextCompressor.__init__": (
        "keyword-only now, clock, offline_stand_in (transcript clock, offline rule), model_thresholds, "
        "proactive_prune_*, threshold_tokens_cap, min_tail_user_messages, tail_mode (seed contract knobs)"
    ),
}
