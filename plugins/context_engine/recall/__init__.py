"""``recall``: choose what each request carries instead of rewriting the history.

Per request (``select_context``) the engine keeps the system prompt, anything the host put
before the first user turn, the last few turns and the current turn verbatim, and fills the rest
of a token budget with the earlier turns most relevant to the incoming message (BM25 over
turns; a turn too large to fit whole may come back as its skeleton, the user message and the
plain answers without the tool traffic). Turns are the unit, so a tool call never travels without
its result.

Cache behaviour is the point of comparison with compaction engines: when the request fits the
budget the engine returns ``None`` (byte-identical to no engine), and while the incoming message
stays the same (the tool rounds of one turn) it keeps exactly the same retrieved set, so the
prompt prefix only breaks when the routing changes, i.e. when a new user message arrives.

The persisted history is never touched: ``select_context`` only reads its inputs and returns a
new list of the same message objects. ``compress`` exists because the ABC requires it and acts
only at a hard ceiling, dropping the oldest whole units.

Hermes compatibility: imports ``agent.context_engine`` and the standard library only.
"""

from __future__ import annotations

import contextvars
import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any

from agent.context_engine import ContextEngine

from .index import FeatureCache, Turn, bm25_scores, message_chars, message_text, skeleton, split_turns, terms

__all__ = ["RecallEngine", "register"]


@dataclass
class _Route:
    """The retrieval decision for one incoming message, reused until the message changes."""

    route: str
    chosen: dict[str, str] = field(default_factory=dict)  # turn key -> "full" | "skeleton"
    scores: dict[str, float] = field(default_factory=dict)


class RecallEngine(ContextEngine):
    """Relevance-based per-request selection with a drop-oldest safety net."""

    threshold_percent = 0.95  # compress is a last resort: selection keeps requests small
    protect_first_n = 1
    protect_last_n = 6

    def __init__(
        self,
        *,
        budget_fraction: float = 0.5,
        tail_turns: int = 2,
        max_retrieved_turns: int = 16,
        recency_fill: bool = True,
        headroom_fraction: float = 0.1,
        drop_target_ratio: float = 0.6,
    ) -> None:
        self.budget_fraction = min(1.0, max(0.05, float(budget_fraction)))
        self.tail_turns = max(0, int(tail_turns))
        self.max_retrieved_turns = max(0, int(max_retrieved_turns))
        self.recency_fill = bool(recency_fill)
        self.headroom_fraction = min(0.5, max(0.0, float(headroom_fraction)))
        self.drop_target_ratio = min(0.95, max(0.1, float(drop_target_ratio)))
        self._config = {
            "recency_fill": self.recency_fill, "headroom_fraction": self.headroom_fraction,
            "budget_fraction": self.budget_fraction, "tail_turns": self.tail_turns,
            "max_retrieved_turns": self.max_retrieved_turns, "drop_target_ratio": self.drop_target_ratio,
        }
        self._features = FeatureCache()
        self._routes: dict[str, _Route] = {}
        self._routes_lock = threading.Lock()
        self._token_lock = threading.Lock()
        self._current: contextvars.ContextVar[str | None] = contextvars.ContextVar(
            f"recall_session_{id(self)}", default=None
        )
        self.last_selection: dict[str, Any] = {}

    def __deepcopy__(self, memo: dict) -> RecallEngine:
        """Hermes deep-copies registry engines per agent; locks cannot be copied, so start fresh."""
        clone = type(self)(**self._config)
        for attr in ("context_length", "threshold_tokens", "threshold_percent", "model_thresholds"):
            if attr in vars(self):
                setattr(clone, attr, vars(self)[attr])
        return clone

    @property
    def name(self) -> str:
        return "recall"

    # -- lifecycle ---------------------------------------------------------------------------
    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        if session_id:
            self._current.set(session_id)

    def bind_session_state(self, session_db: Any = None, session_id: str = "") -> None:
        if session_id:
            self._current.set(session_id)

    def on_session_reset(self) -> None:
        """Zero the counters and forget the routing of the bound session (all, if none is bound)."""
        super().on_session_reset()
        sid = self._current.get()
        with self._routes_lock:
            if sid:
                for key in [k for k in self._routes if k.startswith(sid + "|")]:
                    del self._routes[key]
            else:
                self._routes.clear()

    def on_session_end(self, session_id: str, messages: list) -> None:
        with self._routes_lock:
            for key in [k for k in self._routes if k.startswith((session_id or "") + "|")]:
                del self._routes[key]

    def on_turn_complete(self, messages: list, usage: dict | None = None, **kwargs: Any) -> None:
        """Index the finished turns now, so the next request only scores them."""
        if not isinstance(messages, list) or not messages:
            return
        msgs = [m for m in messages if isinstance(m, dict)]
        start = 1 if msgs and msgs[0].get("role") == "system" else 0
        _pre, turns = split_turns(msgs, start, len(msgs))
        for turn in turns:
            self._features.get(msgs, turn)

    # -- tokens --------------------------------------------------------------------------------
    def update_from_response(self, usage: dict) -> None:
        if not usage:
            return
        with self._token_lock:
            prompt = int(usage.get("prompt_tokens") or 0)
            completion = int(usage.get("completion_tokens") or 0)
            self.last_prompt_tokens = prompt
            self.last_completion_tokens = completion
            self.last_total_tokens = int(usage.get("total_tokens") or (prompt + completion))
            if hasattr(self, "awaiting_real_usage_after_compression"):
                self.awaiting_real_usage_after_compression = False

    def should_compress(self, prompt_tokens: int = None) -> bool:  # type: ignore[assignment]
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        return bool(self.threshold_tokens) and int(tokens or 0) >= self.threshold_tokens

    def get_status(self) -> dict:
        status = super().get_status()
        status["engine"] = "recall"
        status["last_selection"] = dict(self.last_selection)
        return status

    # -- selection -----------------------------------------------------------------------------
    def select_context(
        self,
        request_messages: list,
        *,
        conversation_messages: list | None = None,
        incoming_message: dict | None = None,
        budget_tokens: int = 0,
    ) -> list | None:
        req = request_messages
        if not isinstance(req, list) or not req or not all(isinstance(m, dict) for m in req):
            return None
        window = int(budget_tokens or self.context_length or 0)
        if window <= 0:
            return None
        budget = int(window * self.budget_fraction) * 4  # in Hermes' rough chars
        n = len(req)
        sys_end = 0
        while sys_end < n and req[sys_end].get("role") == "system":
            sys_end += 1
        cur = next((i for i in range(n - 1, sys_end - 1, -1) if req[i].get("role") == "user"), None)
        if cur is None:
            return None
        preamble, turns = split_turns(req, sys_end, cur)
        feats = [self._features.get(req, t) for t in turns]
        fixed = sum(message_chars(req[i]) for i in range(sys_end))
        fixed += sum(message_chars(req[i]) for i in preamble)
        fixed += sum(message_chars(req[i]) for i in range(cur, n))
        if fixed + sum(f.chars for f in feats) <= budget:
            return None  # fits: nothing to change, the host keeps its own list

        keep_tail = min(self.tail_turns, len(turns))
        while keep_tail > 0 and fixed + sum(f.chars for f in feats[len(turns) - keep_tail:]) > budget:
            keep_tail -= 1
        split = len(turns) - keep_tail
        tail, candidates, cand_feats = turns[split:], turns[:split], feats[:split]
        room = budget - fixed - sum(f.chars for f in feats[split:])

        route_id = hashlib.sha1(message_text(req[cur]).encode("utf-8", "surrogatepass")).hexdigest()
        skey = self._session_key(req, sys_end)
        with self._routes_lock:
            previous = self._routes.get(skey)
        if previous is not None and previous.route == route_id:
            route = self._refit(previous, candidates, cand_feats, room)
        else:
            # Leave headroom for the tool rounds still to come in this turn, so the same
            # selection keeps fitting (and the prompt prefix keeps hitting the cache).
            headroom = int(budget * self.headroom_fraction)
            route = self._route(route_id, req[cur], candidates, cand_feats, max(0, room - headroom))
        with self._routes_lock:
            self._routes[skey] = route

        picked: list[int] = []
        for turn in candidates:
            mode = route.chosen.get(turn.key)
            if mode == "full":
                picked.extend(range(turn.start, turn.end))
            elif mode == "skeleton":
                picked.extend(skeleton(req, turn))
        out = list(req[:sys_end]) + [req[i] for i in preamble] + [req[i] for i in picked]
        for turn in tail:
            out.extend(req[turn.start:turn.end])
        out.extend(req[cur:])
        self.last_selection = {
            "turns": len(turns), "tail_turns": len(tail), "retrieved": len(route.chosen),
            "skeletons": sum(1 for m in route.chosen.values() if m == "skeleton"),
            "messages_in": n, "messages_out": len(out), "budget_tokens": budget // 4,
        }
        return out

    def _session_key(self, req: list[dict[str, Any]], sys_end: int) -> str:
        """Bound session id if any, plus the transcript's first user message (shared-instance safety)."""
        first = next((m for m in req[sys_end:] if m.get("role") == "user"), None)
        fp = hashlib.sha1(message_text(first or {}).encode("utf-8", "surrogatepass")).hexdigest()[:16]
        return f"{self._current.get() or ''}|{fp}"

    def _route(self, route_id: str, incoming: dict[str, Any], candidates: list[Turn],
               feats: list[Any], room: int) -> _Route:
        """Fresh retrieval: best BM25 turns first, whole if they fit, else as skeletons.

        With ``recency_fill`` the room left after the relevant turns goes to the newest
        remaining turns, so a budget larger than what matches is not wasted.
        """
        scores = bm25_scores(terms(message_text(incoming)), feats)
        order = sorted(range(len(candidates)), key=lambda i: (-scores[i], -i))
        route = _Route(route_id)
        used = 0
        for i in order:
            if scores[i] <= 0 or len(route.chosen) >= self.max_retrieved_turns:
                break
            key = candidates[i].key
            if used + feats[i].chars <= room:
                route.chosen[key], used = "full", used + feats[i].chars
            elif used + feats[i].skeleton_chars <= room:
                route.chosen[key], used = "skeleton", used + feats[i].skeleton_chars
            else:
                continue
            route.scores[key] = scores[i]
        if self.recency_fill:
            for i in range(len(candidates) - 1, -1, -1):
                key = candidates[i].key
                if key in route.chosen:
                    continue
                if used + feats[i].chars > room:
                    break  # stop at the first misfit: a contiguous recent block, no holes
                route.chosen[key], used = "full", used + feats[i].chars
                route.scores[key] = scores[i]
        return route

    @staticmethod
    def _refit(previous: _Route, candidates: list[Turn], feats: list[Any], room: int) -> _Route:
        """Same incoming message: keep the same set, only dropping (lowest score first) to fit."""
        size = {t.key: (f.chars if previous.chosen.get(t.key) == "full" else f.skeleton_chars)
                for t, f in zip(candidates, feats, strict=True) if t.key in previous.chosen}
        chosen = {k: m for k, m in previous.chosen.items() if k in size}
        used = sum(size.values())
        for key in sorted(chosen, key=lambda k: previous.scores.get(k, 0.0)):
            if used <= room:
                break
            used -= size[key]
            del chosen[key]
        return _Route(previous.route, chosen, {k: previous.scores.get(k, 0.0) for k in chosen})

    # -- hard ceiling --------------------------------------------------------------------------
    def compress(
        self,
        messages: list,
        current_tokens: int = None,  # type: ignore[assignment]
        focus_topic: str = None,  # type: ignore[assignment]
        force: bool = False,
        memory_context: str = "",
    ) -> list:
        """Drop the oldest whole units until the transcript is well under the ceiling.

        Only reached when selection could not keep requests small (a huge current turn). Keeps
        the system message, the last ``protect_last_n`` messages, at least one user message,
        and never separates a tool call from its results.
        """
        if not messages:
            return messages
        head = 1 if messages[0].get("role") == "system" else 0
        body = messages[head:]
        if len(body) < 2:
            return messages
        ceiling = int(self.threshold_tokens or 0) or int(self.context_length * self.threshold_percent)
        target = int((ceiling or (sum(message_chars(m) for m in messages) // 4)) * self.drop_target_ratio) * 4
        suffix = [0] * (len(body) + 1)
        for i in range(len(body) - 1, -1, -1):
            suffix[i] = suffix[i + 1] + message_chars(body[i])
        head_chars = sum(message_chars(m) for m in messages[:head])
        latest = max(0, len(body) - self.protect_last_n)
        while latest > 0 and body[latest].get("role") == "tool":
            latest -= 1
        keep_from = latest
        for i in range(1, latest + 1):
            if body[i].get("role") != "tool" and head_chars + suffix[i] <= target:
                keep_from = i
                break
        if keep_from <= 0:
            return messages
        kept = list(body[keep_from:])
        if not any(m.get("role") == "user" for m in kept):
            last_user = next((m for m in reversed(body[:keep_from]) if m.get("role") == "user"), None)
            if last_user is not None:
                kept.insert(0, last_user)
        note = {"role": "user", "content": f"[recall] {keep_from} earlier messages were dropped at the context ceiling.",
                "_compressed_summary": True}
        result = list(messages[:head]) + [note] + kept
        if sum(message_chars(m) for m in result) >= sum(message_chars(m) for m in messages):
            return messages
        self.compression_count += 1
        return result


def register(ctx: Any) -> None:
    """Hermes calls ``register(ctx)`` first; the class scan is only its fallback."""
    ctx.register_context_engine(RecallEngine())
