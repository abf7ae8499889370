"""Usage as the provider counted it, for transcripts that do not hold everything that was sent.

Claude Code and Codex never write their system prompt and tool schemas into the transcript, and
the provider's tokenizer is not ours: counted with cl100k, a Claude Code request is a third of
what Anthropic reported. An engine fed that count sees a fraction of the real pressure, and the
cache simulator reasons about a prompt with no head. For a session whose calls carry recorded
usage this module estimates, from those calls, how the provider's count relates to ours:

    recorded prompt ≈ hidden + ratio × (our count of the request the agent sent)

**Fit.** ``ratio`` is the Theil–Sen slope (the median of the slopes between every pair of calls
with different counts, weighted by their distance; robust to the odd call whose transcript text
is incomplete), clamped to
[0.7, 1.6]; ``hidden`` is the median of ``recorded − ratio × ours`` (never below 0). With one
call, or all calls of one size, ``ratio`` is 1 and ``hidden`` the median difference. The request
the agent sent is rebuilt from the transcript: the system message, then every message before the
call since the agent's last compaction (its summary included), plus the recorded tool schemas.

**Warm head.** The first call's cache read cannot come from this session: it is a prefix other
sessions keep cached (the agent's own system prompt). Up to ``hidden`` of it is ``warm_tokens``,
which the cache simulator treats as always live (:meth:`CacheSimulator.keep_warm`).

**Modes** (``inspector.usage``): ``calibrated`` (the default when the source has usage): the
hidden prefix heads every request's count and cache simulation, and the engine is fed the
recorded usage where its request is the one the agent sent, the calibrated count otherwise;
``recorded``: the recorded usage whenever there is one, our count otherwise; ``tokenizer``: our
count and the simulator alone (the only mode for sources without usage).
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from inspector.sessions.model import Session, Usage, is_replayable, wire_message

MODES = ("calibrated", "tokenizer", "recorded")
RATIO_BOUNDS = (0.7, 1.6)
PAIRS_MAX = 400  # calls used for the pairwise slopes (evenly spread), so a long session fits fast
REPLY_PRIMING = 3  # tokens every request adds for the reply (counted by the host too)
# A fitted head this large is not a system prompt and tool schemas: the transcript lacks text the
# provider saw (a redacted or truncated source, or a compaction call whose input is elsewhere).
HIDDEN_PLAUSIBLE = 40_000


class UsageModeError(ValueError):
    """``inspector.usage`` names no mode."""


@dataclass
class Calibration:
    """The fitted relation between our count of a request and the provider's."""

    hidden_tokens: int
    ratio: float
    warm_tokens: int
    calls: int
    method: str
    median_error_pct: float = 0.0  # of the fit over the recorded calls
    p90_error_pct: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def provider_tokens(self, ours: int) -> int:
        """The provider's count of a request we count as ``ours`` (tools and reply priming included)."""
        return int(round(self.hidden_tokens + self.ratio * ours))

    def scaled(self, ours: int) -> int:
        """Our count of one part of a request in the provider's units (no head added)."""
        return int(round(self.ratio * ours))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def sent_form_of(form: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, int | None]]:
    """A message's engine-facing form (``wire_message``) as the host sends it (shaped and
    sanitised), and its ``measured_key``: (trace key, repr length).

    The key is the one the replay's message store gives the same form, so the counter and the
    persistent cache hold each message's count once, under one key, and the replay finds it
    counted already.
    """
    from inspector.host.shaping import sanitize_message, shape_message
    from inspector.trace.model import measured_key

    wire = sanitize_message(shape_message(form))
    return wire, measured_key(wire)


def _sent_form(message: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A transcript message as the host sends it, and its trace key (:func:`sent_form_of`)."""
    wire, measured = sent_form_of(wire_message(message))
    return wire, measured[0]


def message_tokens(counter: Any, message: dict[str, Any]) -> int:
    """Our count of one transcript message as the host sends it (shaped and sanitised)."""
    wire, key = _sent_form(message)
    return counter.count_message(wire, key=key)


SentForm = Callable[[int], tuple[dict[str, Any], str]]


def _message_counts(counter: Any, messages: list[dict[str, Any]], sent_form: SentForm | None = None) -> list[int]:
    """``message_tokens`` of each message, what the persistent cache knows looked up at once.

    ``sent_form``: the replay's own (:meth:`inspector.host.responders.WireMessages.sent_form`),
    which keeps each key for the replay to find instead of hashing the message again."""
    forms = [sent_form(i) for i in range(len(messages))] if sent_form else [_sent_form(m) for m in messages]
    recall = getattr(counter, "recall", None)
    if callable(recall):
        recall([key for _, key in forms])
    return [counter.count_message(wire, key=key) for wire, key in forms]


def _sent_by_agent(message: dict[str, Any]) -> bool:
    flags = message.get("x_flags") or {}
    return not (flags.get("inactive") or flags.get("harness"))


def request_counts(session: Session, counter: Any,
                   sent_form: SentForm | None = None) -> tuple[dict[int, int], dict[int, int]]:
    """Per recorded call (by message index): our count of the request the agent sent, and — only
    where a teacher-forced replay sends that same request — of the replay's request.

    Both include the system message, the recorded tool schemas and the reply priming.
    """
    msgs = session.messages
    counts = _message_counts(counter, msgs, sent_form)
    extra = (counter.count_tools(session.tools) if session.tools else 0) + REPLY_PRIMING
    first = 1 if msgs and msgs[0].get("role") == "system" else 0  # the host sends it as the system prompt
    system = counts[0] if first else 0
    starts = sorted(c.message_index for c in session.compactions)
    # prefix sums, so a long session costs one pass: replayable tokens, agent-sent tokens, and
    # agent-sent messages that a replay skips (summaries and copies)
    replay_sum, agent_sum, skipped = [0], [0], [0]
    for j, m in enumerate(msgs):
        counted = j >= first
        replayable = counted and is_replayable(m)
        agent = counted and _sent_by_agent(m)
        replay_sum.append(replay_sum[-1] + (counts[j] if replayable else 0))
        agent_sum.append(agent_sum[-1] + (counts[j] if agent else 0))
        skipped.append(skipped[-1] + (1 if agent and not replayable else 0))
    sent: dict[int, int] = {}
    same: dict[int, int] = {}
    for call in session.api_calls:
        i = call.message_index
        since = starts[bisect.bisect_right(starts, i) - 1] if starts and starts[0] <= i else None
        if since is None:
            sent[i] = system + replay_sum[i] + extra
            if not skipped[i]:  # summaries before any marked compaction: the agent's request is not the replay's
                same[i] = sent[i]
        else:
            sent[i] = system + agent_sum[i] - agent_sum[max(first, since)] + extra
    return sent, same


def _theil_sen(points: list[tuple[int, int]]) -> float | None:
    """The median of the pairwise slopes, each weighted by its baseline (|x2 − x1|).

    Two calls a few hundred tokens apart give a slope dominated by what we cannot count (a
    thinking block, a tool result the provider trims); weighting by distance lets the long
    baselines decide, while a single odd call still cannot drag the median.
    """
    if len(points) > PAIRS_MAX:
        step = len(points) / PAIRS_MAX
        points = [points[int(k * step)] for k in range(PAIRS_MAX)]
    pairs = sorted(((y2 - y1) / (x2 - x1), abs(x2 - x1)) for k, (x1, y1) in enumerate(points)
                   for x2, y2 in points[k + 1:] if x2 != x1)
    if not pairs:
        return None
    half, run = sum(w for _, w in pairs) / 2, 0.0
    for slope, weight in pairs:
        run += weight
        if run >= half:
            return slope
    return pairs[-1][0]


def fit(session: Session, counter: Any, sent: dict[int, int] | None = None) -> Calibration | None:
    """The calibration of ``session``'s recorded calls; None when none carries a reported prompt.

    ``sent`` is :func:`request_counts`' first map when the caller already has it.
    """
    if sent is None:
        sent, _ = request_counts(session, counter)
    recorded = [(c.message_index, c.usage) for c in session.api_calls
                if c.usage is not None and c.usage.prompt_tokens > 0 and c.usage.source == "reported"]
    if not recorded:
        return None
    points = [(sent[i], u.prompt_tokens) for i, u in recorded]
    slope = _theil_sen(points)
    if slope is None:
        ratio, method = 1.0, f"one size of call ({len(points)} call(s)): ratio 1, hidden = median difference"
    else:
        ratio = min(max(slope, RATIO_BOUNDS[0]), RATIO_BOUNDS[1])
        method = f"Theil–Sen over {len(points)} recorded calls"
        if ratio != slope:
            method += f" (slope {slope:.3f} clamped to {ratio:.2f})"
    hidden = max(0, int(round(statistics.median(y - ratio * x for x, y in points))))
    errors = sorted(abs(hidden + ratio * x - y) / y * 100 for x, y in points)
    first = recorded[0][1]
    cal = Calibration(hidden_tokens=hidden, ratio=round(ratio, 4), warm_tokens=min(first.cache_read_tokens, hidden),
                      calls=len(points), method=method, median_error_pct=round(statistics.median(errors), 2),
                      p90_error_pct=round(errors[min(len(errors) - 1, int(0.9 * len(errors)))], 2))
    biggest = max(y for _, y in points)
    if hidden > max(HIDDEN_PLAUSIBLE, biggest // 2):
        ours = max(x for x, _ in points)
        cal.warnings.append(
            f"the transcript's text is far smaller than its recorded usage (at most {ours:,} tokens counted against "
            f"{biggest:,} recorded): the source is redacted or truncated, or the input was elsewhere; the calibrated "
            f"figures rest on a fitted head of {hidden:,} tokens")
    return cal


def has_recorded_usage(session: Session) -> bool:
    return any(c.usage is not None and c.usage.prompt_tokens > 0 and c.usage.source == "reported" for c in session.api_calls)


class _Scaled(dict[int, int]):
    """``calibration.scaled(t)`` by count, each made once: a request's blocks are its messages'
    counts, the same few thousand values request after request, and scaling them one call at a
    time was a twelfth of a long replay's host loop (150 MB session; ``inspector.bench.large_session``)."""

    def __init__(self, calibration: Calibration) -> None:
        super().__init__()
        self.calibration = calibration

    def __missing__(self, ours: int) -> int:
        value = self[ours] = self.calibration.scaled(ours)
        return value


class UsageModel:
    """What the host asks for the usage of a request and its head in the provider's units.

    The host calls :meth:`usage` once per request (the dict ``update_from_response`` gets),
    :meth:`cache_view` for the cache simulator's view of the request, :attr:`hidden_tokens` for
    the pre-API gate before any usage is known, and :meth:`provider_tokens` for the window check.
    With no calibration every method is the identity, and usage is our count with the
    simulator's cache figures.
    """

    def __init__(self, mode: str = "tokenizer", calibration: Calibration | None = None,
                 same: dict[int, int] | None = None, simulator: Any = None,
                 head_changes: list[int] | None = None) -> None:
        if mode not in MODES:
            raise UsageModeError(f"inspector.usage: {mode!r} is not one of {', '.join(MODES)}")
        self.mode = mode
        self.calibration = calibration if mode == "calibrated" else None
        self._same = same or {}
        self._simulator = simulator
        self._warm_keys: set[str] = set()
        self._scaled = _Scaled(self.calibration) if self.calibration is not None else None
        # Transcript indices after which the agent's own head changed (its tool list reloaded).
        self._head_changes = sorted(head_changes or ())
        self.fed: list[str] = []  # per request: recorded | calibrated | tokenizer | provider
        # per request: is it the request the agent sent (so recorded and simulated figures compare)?
        self.same_request: list[bool] = []

    @property
    def hidden_tokens(self) -> int:
        return self.calibration.hidden_tokens if self.calibration else 0

    def provider_tokens(self, ours: int) -> int:
        return self.calibration.provider_tokens(ours) if self.calibration else ours

    def cache_view(self, tools_key: str, tools_tokens: int, block_tokens: list[int],
                   source_index: int | None = None) -> tuple[str, int, list[int]]:
        """The request as the provider's cache sees it: the hidden head joins the tool schemas
        (it is the agent's system prompt and tools, which come first), every part in its units.

        ``source_index`` (the transcript message the request answers with) tells which version
        of the head it carries: after the agent reloaded its tools, the head is new to the cache
        except for its warm part.
        """
        cal = self.calibration
        if cal is None:
            return tools_key, tools_tokens, block_tokens
        version = bisect.bisect_left(self._head_changes, source_index) if source_index is not None else 0
        # The head's identity, not its fitted size: a refit (follow mode) changes the estimate, not the prefix.
        key = f"{tools_key}+hidden:v{version}"
        if cal.warm_tokens and key not in self._warm_keys and self._simulator is not None:
            keep = getattr(self._simulator, "keep_warm", None)
            if callable(keep):
                keep(key, cal.warm_tokens)
            self._warm_keys.add(key)
        scaled = self._scaled
        if scaled is None or scaled.calibration is not cal:
            scaled = self._scaled = _Scaled(cal)
        return key, scaled[tools_tokens] + cal.hidden_tokens, list(map(scaled.__getitem__, block_tokens))

    def usage(self, response: Any, *, tik: int, tools_tokens: int, completion: int, cache: Any, write_1h: int) -> Usage:
        """The usage ``update_from_response`` gets for this request (recorded in :attr:`fed`)."""
        if response.usage is not None:  # a live provider's own figures
            self.fed.append("provider")
            self.same_request.append(True)
            return response.usage
        recorded = response.recorded
        index = response.source_index
        same = recorded is not None and index in self._same and self._same[index] == tik
        self.same_request.append(same)
        if recorded is not None and (self.mode == "recorded" or (self.mode == "calibrated" and same)):
            self.fed.append("recorded")
            return recorded
        out = recorded.completion_tokens if recorded is not None else completion
        prompt = self.provider_tokens(tik)
        read = min(cache.read, prompt)
        write = min(cache.write, max(0, prompt - read))
        self.fed.append("calibrated" if self.calibration else "tokenizer")
        return Usage(prompt_tokens=prompt, completion_tokens=out if self.calibration else completion,
                     cache_read_tokens=read, cache_write_tokens=write, cache_write_1h_tokens=min(write_1h, write),
                     source="calibrated" if self.calibration else "synthesised")

    def refit(self, config: dict[str, Any], session: Session, counter: Any) -> bool:
        """Fit again on the calls ``session`` holds now (follow mode: the source grows as the agent
        works); True when the mode or the fitted numbers changed. Requests already fed keep what
        they were fed; the ones after use the new fit."""
        mode, cal, same, changes = _fitted(config, session, counter)
        before = (self.mode, self.calibration.to_json() if self.calibration else None)
        self.mode, self.calibration, self._same, self._head_changes = mode, cal, same, changes
        return (mode, cal.to_json() if cal else None) != before

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for kind in self.fed:
            counts[kind] = counts.get(kind, 0) + 1
        return {"mode": self.mode, "calibration": self.calibration.to_json() if self.calibration else None,
                "fed": counts, "fed_per_request": list(self.fed), "same_request": list(self.same_request)}


def usage_mode(config: dict[str, Any], session: Session) -> str:
    """``inspector.usage`` from config, else ``calibrated`` when the source has usage."""
    chosen = (config.get("inspector") or {}).get("usage")
    if chosen in (None, ""):
        return "calibrated" if has_recorded_usage(session) else "tokenizer"
    if chosen not in MODES:
        raise UsageModeError(f"inspector.usage: {chosen!r} is not one of {', '.join(MODES)}")
    return str(chosen)


def _fitted(config: dict[str, Any], session: Session, counter: Any,
            sent_form: SentForm | None = None) -> tuple[str, Calibration | None, dict[int, int], list[int]]:
    """(mode in effect, calibration, the calls a replay sends as the agent did, head changes) for ``session``."""
    mode = usage_mode(config, session)
    if not has_recorded_usage(session):
        return ("tokenizer" if mode == "calibrated" else mode), None, {}, []
    sent, same = request_counts(session, counter, sent_form)
    cal = fit(session, counter, sent) if mode == "calibrated" else None
    changes = [i for i, m in enumerate(session.messages) if (m.get("x_flags") or {}).get("tools_changed")]
    return (mode if cal is not None or mode != "calibrated" else "tokenizer"), cal, same, changes


def usage_model_for(config: dict[str, Any], session: Session, counter: Any, simulator: Any = None,
                    sent_form: SentForm | None = None) -> UsageModel:
    """The usage model a replay of ``session`` uses (fitting the calibration when it needs one)."""
    mode, cal, same, changes = _fitted(config, session, counter, sent_form)
    return UsageModel(mode, cal, same, simulator, changes)
