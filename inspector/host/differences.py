"""What the host does differently from the Hermes it plays, for every trace's ``meta.host_differences``.

A reader of a trace must know what was simulated or bent (provider calls, the session database,
the failure-cooldown clock, watchdogs); the profile adds its own rows
(:attr:`inspector.host.profiles.HostProfile.differences`).
"""

from __future__ import annotations

HOST_DIFFERENCES = [
    "Provider calls are simulated: the transcript's assistant and tool messages are replayed as recorded "
    "(teacher forcing); what changes with the engine is the history and the request the provider would have seen.",
    "Usage passed to update_from_response (inspector.usage): calibrated (the default when the transcript has usage) "
    "is the recorded usage where the engine's request is the one the agent sent, else a count calibrated on the "
    "recorded calls (an unrecorded head of system prompt and tool schemas plus the provider's tokenizer ratio); "
    "tokenizer is our count of the request (plus tool schemas) with cache read/write from the cache simulator; "
    "the transcript's recorded usage is kept beside it.",
    "No SessionDB: bind_session_state gets session_db=None, and compaction is emulated in place the way Hermes "
    "compacts with a session database (on_session_end, then on_session_start with boundary_reason='compression'; "
    "without a database Hermes 0.19.0 calls only on_session_start); no session rotation, no durable cooldowns "
    "or locks.",
    "No memory provider, todo store, MoA or ephemeral system prompt; the system prompt never changes on compaction.",
    "Engine tool calls found in the transcript are dispatched to the engine; the transcript's recorded result "
    "stays in the history and the engine's result is recorded beside it.",
    "Compaction summaries written by the original agent are not replayed into the history; they appear as markers.",
    "With no auxiliary provider at all, the deterministic summary of every ContextCompressor (the built-in, and "
    "those plugins subclass or build inside themselves) stands in for the LLM summary Hermes' "
    "`auxiliary.compression: auto` would obtain from the main model: no no-provider cooldown, no fallback streak "
    "(inspector.offline_fallback_counts: true restores Hermes' strict rule).",
    "During a replay, the failure-cooldown clock of every ContextCompressor (the built-in, and those plugins "
    "subclass or build inside themselves) follows the transcript's timestamps (30 s per request without them); "
    "_summary_failure_cooldown_until is translated so code comparing it with time.monotonic() agrees. Other "
    "time.monotonic() or time.time() readings in plugin code are the wall clock.",
    "Inline hooks run under a watchdog (inspector.hook_timeout_seconds); Hermes has no such timeout. A hook "
    "that times out twice is not called again in the run (treated as timed out).",
    "A compress that timed out keeps running in the background, as in Hermes; the next pass waits up to one "
    "more timeout for it (a replay reaches it in milliseconds, the agent after a provider call), and while it "
    "still runs every pass is skipped: two passes never overlap. What it changes in the engine when it "
    "finishes is undone.",
    "Each run has its own sandbox as Hermes' home (get_hermes_home); the HERMES_HOME environment variable "
    "points at one private folder shared by all runs of the process, so engines that read the variable "
    "directly share state across the runs of a comparison and their files there are not listed. For "
    "engine code, ~ is a private mirror of the home folder whose .hermes is the run's sandbox (code that "
    "reads $HOME directly sees the real home).",
    "The summariser's window for Hermes' first-compaction feasibility check comes only from "
    "auxiliary.compression.context_length (Hermes also looks it up from the provider); without it the "
    "check is skipped.",
    "The built-in compressor returns Hermes 0.19.0's lists (tests/differential), but the wording of its "
    "summary prompt, summary prefix, no-LLM fallback summary and system-prompt note is its own; where Hermes "
    "raises IndexError (a transcript of head rows and tool results only) it leaves the list unchanged.",
]
