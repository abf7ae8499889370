"""``lcm``: lossless context management as a Hermes context engine.

Instead of one lossy rolling summary, every message goes into an append-only store and the
context holds a DAG of summaries over it: leaf nodes summarise spans of messages, condensed
nodes summarise runs of leaves once enough accumulate. Each node records its sources, so the
model (through ``lcm_expand``) or a person can always get the originals back. ``lcm_grep``
searches raw and summarised history alike; ``lcm_describe`` shows the DAG.

Hermes compatibility: this package imports only ``agent.context_engine`` (and, lazily,
``agent.auxiliary_client.call_llm`` and ``hermes_constants``) plus the standard library, and its
siblings use relative imports, so Hermes' loader can run it unmodified.

Threading (docs/host-contract.md §4.3): one instance may serve several sessions at once and
``compress`` may arrive on any pool thread. Per-session state lives in ``_SessionState`` behind a
per-session lock; SQLite connections are per thread; a compaction computes everything privately
and publishes (one DB transaction, then the in-memory counters) only after it is sure the result
shrinks the context.
"""

from __future__ import annotations

import contextvars
import json
import os
import re
import threading
from pathlib import Path
from typing import Any

from agent.context_engine import ContextEngine

from .layout import (
    NODE_HEADER,
    NODE_KEY,
    SUMMARY_FLAG,
    NodeRef,
    align_to_unit,
    digest,
    parse_node,
    rough_tokens,
    rough_total,
    safe_session_label,
    unit_starts,
)
from .store import LcmStore, Node
from .summarize import (
    collapse,
    fallback_condensed,
    fallback_leaf,
    llm_summary,
    render_for_llm,
)

__all__ = ["LcmEngine", "register"]

TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "name": "lcm_grep",
        "description": (
            "Search the whole conversation history kept by the lcm context engine, including turns "
            "that were compacted into summaries. Returns matching messages (with the summary nodes "
            "that now stand for them) and matching summary nodes."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Text to look for (case-insensitive)."},
                "regex": {"type": "boolean", "description": "Treat query as a regular expression.", "default": False},
                "scope": {"type": "string", "enum": ["all", "messages", "summaries"], "default": "all"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 20},
            },
            "required": ["query"],
        },
    },
    {
        "name": "lcm_describe",
        "description": (
            "Describe the summary DAG of this conversation: every node with its level, the message "
            "range it covers and its parents; or one node in full when node_id is given."
        ),
        "parameters": {
            "type": "object",
            "properties": {"node_id": {"type": "string", "description": "A node id such as L0-0003."}},
        },
    },
    {
        "name": "lcm_expand",
        "description": (
            "Expand a summary node back into the original messages it was made from (recursively "
            "through condensed nodes), page by page."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "node_id": {"type": "string", "description": "The node to expand, e.g. L1-0007."},
                "offset": {"type": "integer", "minimum": 0, "default": 0},
                "limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50},
            },
            "required": ["node_id"],
        },
    },
]
TOOL_NAMES = frozenset(s["name"] for s in TOOL_SCHEMAS)
MAX_TOOL_RESULT_CHARS = 60_000


class ToolError(Exception):
    """A tool call the model got wrong; reported to it as ``{"error": ...}``."""


def _hermes_home() -> Path:
    """``hermes_constants.get_hermes_home()`` when available, else Hermes' own env rule."""
    try:
        from hermes_constants import get_hermes_home

        return Path(get_hermes_home())
    except Exception:
        env = os.environ.get("HERMES_HOME")
        return Path(env).expanduser() if env else Path.home() / ".hermes"


def _load_call_llm() -> Any:
    try:
        from agent.auxiliary_client import call_llm
    except Exception:
        return None
    return call_llm


def _resolve_threshold(model: str, thresholds: dict, default: float, provider: str = "") -> float:
    """Longest matching model substring wins; ``provider:substr`` keys only on that route.

    Only used when the host's ABC predates per-model thresholds (Hermes 0.19); newer ABCs do
    this in their own ``update_model``.
    """
    route = (provider or "").strip().lower()
    best: tuple[int, int] | None = None
    value: Any = default
    for key, pct in (thresholds or {}).items():
        key = str(key)
        scoped = 0
        if ":" in key:
            scope, _, key = key.partition(":")
            if scope.strip().lower() != route:
                continue
            scoped = 1
        if key and model and key in model and (best is None or (len(key), scoped) > best):
            best, value = (len(key), scoped), pct
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


_SAFE_FILE = re.compile(r"[^A-Za-z0-9_.-]+")


class _SessionState:
    """Everything lcm knows about one session; guarded by ``lock``."""

    def __init__(self, session_id: str, store: LcmStore) -> None:
        self.session_id = session_id
        self.store = store
        self.lock = threading.RLock()
        self.compression_count = 0
        # Fast path for re-ingesting a transcript that only grew since last time.
        self.memo_len = 0
        self.memo_checks: list[tuple[int, str]] = []
        self.memo_seqs: list[int | None] = []
        self.memo_pointer = 0
        self.last_compaction: dict[str, Any] | None = None


class LcmEngine(ContextEngine):
    """Lossless context management: immutable store + summary DAG + retrieval tools."""

    threshold_percent = 0.75
    protect_first_n = 1
    protect_last_n = 6
    # Read-only searches the inspector may call in a dry run (``--probe-tools``): tool → the
    # argument that takes the text to look for (inspector/quality/probes.py).
    retrieval_tools = {"lcm_grep": "query"}

    def __init__(
        self,
        *,
        leaf_tokens: int = 12_000,
        fanout: int = 4,
        tail_ratio: float = 0.25,
        max_summary_chars: int = 4_000,
        use_llm: bool = True,
        hermes_home: str | os.PathLike[str] | None = None,
    ) -> None:
        self.leaf_tokens = max(500, int(leaf_tokens))
        self.fanout = max(2, int(fanout))
        self.tail_ratio = min(0.8, max(0.05, float(tail_ratio)))
        self.max_summary_chars = max(400, int(max_summary_chars))
        self.use_llm = use_llm
        self._home_override = Path(hermes_home) if hermes_home else None
        self._config = {
            "leaf_tokens": self.leaf_tokens, "fanout": self.fanout, "tail_ratio": self.tail_ratio,
            "max_summary_chars": self.max_summary_chars, "use_llm": use_llm, "hermes_home": hermes_home,
        }
        self._sessions: dict[str, _SessionState] = {}
        self._aliases: dict[str, str] = {}
        self._fingerprints: dict[str, str] = {}
        self._registry_lock = threading.Lock()
        self._token_lock = threading.Lock()
        self._current: contextvars.ContextVar[str | None] = contextvars.ContextVar(
            f"lcm_session_{id(self)}", default=None
        )
        self._last_compression_made_progress = False
        self._last_summary_fallback_used = False
        self._last_summary_error: str | None = None

    def __deepcopy__(self, memo: dict) -> LcmEngine:
        """Hermes deep-copies registry engines per agent; locks cannot be copied, so start fresh."""
        clone = type(self)(**self._config)
        for attr in ("context_length", "threshold_tokens", "threshold_percent", "model_thresholds"):
            if attr in vars(self):
                setattr(clone, attr, vars(self)[attr])
        return clone

    @property
    def name(self) -> str:
        return "lcm"

    # -- sessions ------------------------------------------------------------------------
    def _root(self, session_id: str) -> str:
        seen = set()
        while session_id in self._aliases and session_id not in seen:
            seen.add(session_id)
            session_id = self._aliases[session_id]
        return session_id

    def _state(self, session_id: str, home: str | os.PathLike[str] | None = None) -> _SessionState:
        with self._registry_lock:
            sid = self._root(session_id or "default")
            state = self._sessions.get(sid)
            if state is None:
                base = Path(home) if home else (self._home_override or _hermes_home())
                fname = (_SAFE_FILE.sub("_", sid) or "default")[:150] + ".db"
                state = _SessionState(sid, LcmStore(base / "lcm" / fname))
                self._sessions[sid] = state
            return state

    def _resolve(self, messages: list | None = None, session_id: str | None = None) -> _SessionState:
        """Which session a call belongs to, for a host that does not say.

        In order: an explicit id; the session named in a summary node already in the transcript
        (the most specific evidence); the session bound in this context by ``on_session_start``
        (Hermes propagates context variables to its compression workers); a transcript we have
        seen before (fingerprint of its first message); the only session we know; "default".
        """
        sid = session_id or None
        if not sid and messages:
            for msg in messages[:400]:
                if isinstance(msg, dict):
                    ref = parse_node(msg)
                    if ref is not None:
                        sid = self._label_to_session(ref.session)
                        break
        if not sid:
            sid = self._current.get()
        fp = _fingerprint(messages) if messages else None
        if not sid and fp:
            sid = self._fingerprints.get(fp)
        if not sid:
            with self._registry_lock:
                if len(self._sessions) == 1:
                    sid = next(iter(self._sessions))
        state = self._state(sid or "default")
        if fp:
            with self._registry_lock:
                self._fingerprints.setdefault(fp, state.session_id)
        return state

    def _label_to_session(self, label: str) -> str:
        with self._registry_lock:
            for sid in self._sessions:
                if safe_session_label(sid) == label:
                    return sid
        return label

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        """Bind this context to the session and open its store (idempotent: Hermes repeats it)."""
        if not session_id:
            return
        old = kwargs.get("old_session_id")
        if old and old != session_id and kwargs.get("boundary_reason") == "compression":
            # Rotation: the child session continues the same history, so it shares the store.
            with self._registry_lock:
                self._aliases[session_id] = self._root(old)
        state = self._state(session_id, kwargs.get("hermes_home"))
        self._current.set(state.session_id)

    def bind_session_state(self, session_db: Any = None, session_id: str = "") -> None:
        """Hermes calls this at init and when ``/new`` or ``/resume`` switch the session id."""
        if session_id:
            self._current.set(self._state(session_id).session_id)

    def on_session_end(self, session_id: str, messages: list) -> None:
        """Make sure the store holds the complete transcript, then release connections.

        Hermes also calls this right after each compaction (with the pre-compression list), so
        the session stays usable: connections reopen on demand.
        """
        state = self._state(session_id) if session_id else self._resolve(messages)
        with state.lock:
            if messages:
                self._ingest(state, [m for m in messages if isinstance(m, dict)])
            state.store.close()

    def on_session_reset(self) -> None:
        """``/new``, ``/resume``: zero the counters; the stored history is never discarded."""
        super().on_session_reset()
        sid = self._current.get()
        if sid:
            state = self._state(sid)
            with state.lock:
                state.compression_count = 0
                state.memo_len = 0
                state.memo_checks = []
                state.memo_seqs = []
                state.last_compaction = None

    def on_turn_complete(self, messages: list, usage: dict | None = None, **kwargs: Any) -> None:
        """Store the finished turn right away, so nothing depends on a later compaction."""
        if not messages:
            return
        state = self._resolve(messages, kwargs.get("session_id"))
        with state.lock:
            self._ingest(state, [m for m in messages if isinstance(m, dict)])

    # -- tokens and thresholds --------------------------------------------------------------
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

    def update_model(
        self,
        model: str,
        context_length: int,
        base_url: str = "",
        api_key: str = "",
        provider: str = "",
        api_mode: str = "",
    ) -> None:
        """Defer to the ABC; apply ``model_thresholds`` ourselves only if it does not."""
        if "_lcm_configured_percent" not in vars(self):
            self._lcm_configured_percent = self.threshold_percent
        super().update_model(model, context_length, base_url=base_url, api_key=api_key,
                             provider=provider, api_mode=api_mode)
        if "_base_threshold_percent" not in vars(self):
            pct = _resolve_threshold(model, getattr(self, "model_thresholds", None) or {},
                                     self._lcm_configured_percent, provider)
            self.threshold_percent = pct
            self.threshold_tokens = int(context_length * pct)

    def get_status(self) -> dict:
        status = super().get_status()
        status["engine"] = "lcm"
        with self._registry_lock:
            status["sessions"] = len(self._sessions)
        return status

    # -- ingest ----------------------------------------------------------------------------
    def _ingest(self, state: _SessionState, messages: list[dict[str, Any]]) -> list[int | None]:
        """Store new raw messages; return the store seq of each position (None for nodes)."""
        parsed: list[NodeRef | None] = [parse_node(m) for m in messages]
        start, prior, pointer = 0, None, 0
        if 0 < state.memo_len <= len(messages) and all(
            i < len(messages) and digest(messages[i]) == d for i, d in state.memo_checks
        ):
            start, prior, pointer = state.memo_len, state.memo_seqs, state.memo_pointer
        seqs, _inserted, pointer = state.store.ingest(messages, parsed, start, pointer, prior)
        n = len(messages)
        state.memo_len = n
        state.memo_seqs = seqs
        state.memo_pointer = pointer
        state.memo_checks = [(i, digest(messages[i])) for i in sorted({0, n // 2, n - 1})] if n else []
        return seqs

    # -- compaction ------------------------------------------------------------------------
    def has_content_to_compress(self, messages: list) -> bool:
        body = [m for m in messages if isinstance(m, dict) and m.get("role") != "system"]
        raw = [m for m in body if parse_node(m) is None]
        nodes = len(body) - len(raw)
        return len(raw) > self.protect_first_n + self.protect_last_n or nodes >= 2

    def compress(
        self,
        messages: list,
        current_tokens: int = None,  # type: ignore[assignment]
        focus_topic: str = None,  # type: ignore[assignment]
        force: bool = False,
        memory_context: str = "",
    ) -> list:
        """Replace the oldest unprotected span with DAG nodes; return the input when that cannot shrink it."""
        self._last_compression_made_progress = False
        self._last_summary_fallback_used = False
        if not messages:
            return messages
        state = self._resolve(messages)
        with state.lock:
            plan = _Compaction(self, state, messages, focus_topic)
            output = plan.run()
            if output is None or rough_total(output) >= rough_total(messages):
                return messages
            # Publish: nodes first (one transaction), then counters. Until here nothing that a
            # discarded compaction could leave behind has been made visible.
            state.store.commit_nodes(plan.new_nodes)
            state.compression_count += 1
            state.last_compaction = plan.report()
            self.compression_count = state.compression_count
            self._last_compression_made_progress = True
            self._last_summary_fallback_used = plan.used_fallback
            self._last_summary_error = plan.llm_error
            return output

    # -- tools -----------------------------------------------------------------------------
    def get_tool_schemas(self) -> list[dict]:
        return [json.loads(json.dumps(s)) for s in TOOL_SCHEMAS]

    def handle_tool_call(self, name: str, args: dict, **kwargs: Any) -> str:
        if name not in TOOL_NAMES:
            return json.dumps({"error": f"Unknown context engine tool: {name}"})
        try:
            if isinstance(args, str):
                args = json.loads(args or "{}")
            if not isinstance(args, dict):
                raise ToolError("arguments must be a JSON object")
            messages = kwargs.get("messages")
            messages = [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else None
            state = self._resolve(messages, kwargs.get("session_id"))
            with state.lock:
                if messages:
                    self._ingest(state, messages)
                result = getattr(self, "_tool_" + name)(state, args, messages)
            return json.dumps(result, ensure_ascii=False, default=str)
        except ToolError as exc:
            return json.dumps({"error": str(exc)})
        except ValueError as exc:
            return json.dumps({"error": f"{name}: invalid arguments: {exc}"})
        except Exception as exc:  # a tool must answer the model, never crash the turn
            return json.dumps({"error": f"{name} failed: {type(exc).__name__}: {exc}"})

    @staticmethod
    def _int_arg(args: dict, key: str, default: int, lo: int, hi: int) -> int:
        value = args.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ToolError(f"'{key}' must be an integer")
        try:
            return max(lo, min(hi, int(value)))
        except ValueError as exc:
            raise ToolError(f"'{key}' must be an integer") from exc

    def _ancestry(self, store: LcmStore, kind: str, ref: str) -> list[str]:
        """Node ids above a message or node, nearest first (all parents, breadth-first)."""
        out: list[str] = []
        frontier = store.parents_of(kind, ref)
        while frontier:
            nxt: list[str] = []
            for nid in frontier:
                if nid not in out:
                    out.append(nid)
                    nxt.extend(store.parents_of("node", nid))
            frontier = nxt
        return out

    def _tool_lcm_grep(self, state: _SessionState, args: dict, messages: list | None) -> dict:
        query = args.get("query", args.get("pattern"))
        if not isinstance(query, str) or not query.strip():
            raise ToolError("'query' must be a non-empty string")
        regex = bool(args.get("regex", False))
        scope = args.get("scope", "all")
        if scope not in ("all", "messages", "summaries"):
            raise ToolError("'scope' must be one of all, messages, summaries")
        limit = self._int_arg(args, "limit", 20, 1, 200)
        if regex:
            try:
                rx = re.compile(query, re.IGNORECASE)
            except re.error as exc:
                raise ToolError(f"invalid regular expression: {exc}") from exc
        else:
            rx = re.compile(re.escape(query), re.IGNORECASE)
        store = state.store
        results: list[dict[str, Any]] = []
        msg_total = node_total = 0
        if scope in ("all", "messages"):
            hits, msg_total = store.grep_messages(query, regex, limit)
            for seq, role, text in hits:
                covered = self._ancestry(store, "message", str(seq))
                results.append({"type": "message", "seq": seq, "role": role,
                                "snippet": _snippet(text, rx), "covered_by": covered,
                                "compacted": bool(covered)})
        if scope in ("all", "summaries"):
            hits, node_total = store.grep_nodes(query, regex, limit)
            for node_id, level, summary in hits:
                results.append({"type": "summary", "node_id": node_id, "level": level,
                                "snippet": _snippet(summary, rx),
                                "parents": self._ancestry(store, "node", node_id)})
        return {"session": state.session_id, "query": query, "message_matches": msg_total,
                "summary_matches": node_total, "results": results,
                "truncated": msg_total > limit or node_total > limit,
                "hint": "lcm_expand(node_id) returns the original messages behind a summary node."}

    def _node_json(self, store: LcmStore, node: Node, full: bool) -> dict[str, Any]:
        data: dict[str, Any] = {
            "node_id": node.node_id, "level": node.level, "messages": f"{node.first_seq}-{node.last_seq}",
            "message_count": node.message_count, "sources": len(node.sources), "method": node.method,
            "parents": store.parents_of("node", node.node_id),
        }
        if full:
            data["summary"] = node.summary
            data["focus"] = node.focus
            data["source_refs"] = [{"kind": k, "ref": int(r) if k == "message" else r} for k, r in node.sources]
        return data

    def _tool_lcm_describe(self, state: _SessionState, args: dict, messages: list | None) -> dict:
        store = state.store
        node_id = args.get("node_id")
        if node_id:
            node = store.node(str(node_id))
            if node is None:
                raise ToolError(f"no such node: {node_id}")
            return {"session": state.session_id, "node": self._node_json(store, node, True)}
        nodes = store.all_nodes()
        levels: dict[str, int] = {}
        for n in nodes:
            levels[str(n.level)] = levels.get(str(n.level), 0) + 1
        in_context = [r.node_id for r in (parse_node(m) for m in messages or []) if r is not None]
        roots = [n.node_id for n in nodes if not store.parents_of("node", n.node_id)]
        listing = [self._node_json(store, n, False) for n in nodes[-200:]]
        return {"session": state.session_id, "messages_stored": store.message_count(),
                "node_count": len(nodes), "levels": levels, "roots": roots, "in_context": in_context,
                "nodes": listing, "truncated": len(nodes) > 200}

    def _tool_lcm_expand(self, state: _SessionState, args: dict, messages: list | None) -> dict:
        node_id = args.get("node_id")
        if not isinstance(node_id, str) or not node_id:
            raise ToolError("'node_id' must be a node id such as L0-0001")
        store = state.store
        node = store.node(node_id)
        if node is None:
            raise ToolError(f"no such node: {node_id}")
        offset = self._int_arg(args, "offset", 0, 0, 10**9)
        limit = self._int_arg(args, "limit", 50, 1, 500)
        seqs = store.leaf_seqs(node_id)
        page: list[dict[str, Any]] = []
        used = 0
        index = offset
        for seq in seqs[offset:offset + limit]:
            msg = store.message(seq)
            size = len(json.dumps(msg, ensure_ascii=False, default=str))
            if page and used + size > MAX_TOOL_RESULT_CHARS:
                break
            page.append({"seq": seq, "message": msg})
            used += size
            index += 1
        children = [
            {"node_id": ref, "summary": collapse(getattr(store.node(ref), "summary", ""), 300)}
            for kind, ref in node.sources if kind == "node"
        ]
        return {"session": state.session_id, "node_id": node_id, "level": node.level,
                "children": children, "total_messages": len(seqs), "offset": offset,
                "messages": page, "next_offset": index if index < len(seqs) else None}


def _snippet(text: str, rx: re.Pattern[str], width: int = 100) -> str:
    match = rx.search(text)
    if not match:
        return collapse(text, 2 * width)
    a, b = max(0, match.start() - width), min(len(text), match.end() + width)
    return ("…" if a else "") + " ".join(text[a:b].split()) + ("…" if b < len(text) else "")


def _fingerprint(messages: list | None) -> str | None:
    for msg in messages or []:
        if isinstance(msg, dict) and msg.get("role") != "system" and parse_node(msg) is None:
            return digest(msg)
    return None


class _Compaction:
    """One compress call, planned privately: nothing here touches shared state until committed."""

    def __init__(self, engine: LcmEngine, state: _SessionState, messages: list, focus: str | None) -> None:
        self.engine = engine
        self.state = state
        self.messages = [m for m in messages if isinstance(m, dict)]
        self.focus = focus.strip() if isinstance(focus, str) and focus.strip() else None
        self.new_nodes: list[Node] = []
        self._pending: dict[str, Node] = {}
        self.used_fallback = False
        self.llm_error: str | None = None
        self._llm = _load_call_llm() if engine.use_llm else None
        self._counter = state.store.next_node_number()
        self.span_count = 0

    # -- plan --------------------------------------------------------------------------------
    def run(self) -> list | None:
        msgs = self.messages
        seqs = self.engine._ingest(self.state, msgs)
        parsed = [parse_node(m) for m in msgs]
        head: list[int] = [0] if msgs and msgs[0].get("role") == "system" else []
        body = [i for i in range(len(msgs)) if i not in head]
        pinned: list[int] = []
        for i in body[: self.engine.protect_first_n]:
            if parsed[i] is None and msgs[i].get("role") == "user" and not any(parsed[j] for j in body if j < i):
                pinned.append(i)
            else:
                break
        node_idx = [i for i in body if parsed[i] is not None]
        raw_idx = [i for i in body if parsed[i] is None and i not in pinned]
        top: list[Node | dict] = []
        for i in node_idx:
            node = self.state.store.node(parsed[i].node_id)  # type: ignore[union-attr]
            top.append(node if node is not None else msgs[i])  # an unknown node stays verbatim

        budget = self._tail_budget()
        # Normal tail first; if that leaves nothing to summarise, shrink the tail down to the
        # latest user turn, and only then into it (compress must make progress when it can).
        raw = [msgs[i] for i in raw_idx]
        for min_tail, tail_budget, keep_user in ((self.engine.protect_last_n, budget, "soft"),
                                                 (1, 0, "always"), (1, 0, "never")):
            cut = self._tail_cut(raw, min_tail, tail_budget, keep_user)
            if cut > 0:
                break
        span, tail = raw_idx[:cut], raw_idx[cut:]
        self.span_count = len(span)
        if span:
            top.extend(self._leaves(span, seqs))
        self._condense(top, everything=not span)
        if not span and all(isinstance(t, dict) for t in top):
            return None
        out = [msgs[i] for i in head] + [msgs[i] for i in pinned]
        out += [t if isinstance(t, dict) else self._node_message(t) for t in top]
        out += [msgs[i] for i in tail]
        return out

    def _tail_budget(self) -> int:
        threshold = int(self.engine.threshold_tokens or 0)
        if threshold <= 0:
            ctx = int(self.engine.context_length or 0)
            threshold = int(ctx * (self.engine.threshold_percent or 0.75)) if ctx else 96_000
        return int(threshold * self.engine.tail_ratio)

    @staticmethod
    def _tail_cut(raw: list[dict[str, Any]], min_tail: int, budget: int, keep_user: str = "soft") -> int:
        """Index into ``raw`` where the verbatim tail starts (never between a call and its results)."""
        n = len(raw)
        if n == 0:
            return 0
        acc, cut = 0, n
        for i in range(n - 1, -1, -1):
            t = rough_tokens(raw[i])
            if n - cut >= min_tail and acc + t > budget:
                break
            acc += t
            cut = i
        cut = align_to_unit(raw, cut)
        # Keep the latest user instruction verbatim: "soft" when that costs at most one more
        # tail budget, "always" when it still leaves something to summarise.
        last_user = max((i for i, m in enumerate(raw) if m.get("role") == "user"), default=None)
        if last_user is not None and last_user < cut and keep_user != "never":
            if keep_user == "always" or sum(rough_tokens(m) for m in raw[last_user:]) <= 2 * max(budget, 1):
                cut = last_user
        return cut

    # -- nodes -------------------------------------------------------------------------------
    def _next_id(self, level: int) -> str:
        node_id = f"L{level}-{self._counter:04d}"
        self._counter += 1
        return node_id

    def _leaves(self, span: list[int], seqs: list[int | None]) -> list[Node]:
        msgs = self.messages
        sub = [msgs[i] for i in span]
        starts = set(unit_starts(sub))
        chunks: list[list[int]] = []
        current: list[int] = []
        acc = 0
        for k, i in enumerate(span):
            if k in starts and current and acc >= self.engine.leaf_tokens:
                chunks.append(current)
                current, acc = [], 0
            current.append(i)
            acc += rough_tokens(msgs[i])
        if current:
            if chunks and acc < self.engine.leaf_tokens // 4:
                chunks[-1].extend(current)  # a tiny remainder is not worth its own node
            else:
                chunks.append(current)
        return [self._leaf([msgs[i] for i in chunk], [int(seqs[i]) for i in chunk]) for chunk in chunks]

    def _existing(self, key: str) -> Node | None:
        return self._pending.get(key) or self.state.store.find_node_by_sources(key)

    def _leaf(self, chunk: list[dict[str, Any]], chunk_seqs: list[int]) -> Node:
        probe = Node("", 0, "", 0, 0, 0, [("message", str(s)) for s in chunk_seqs])
        found = self._existing(probe.sources_key)
        if found is not None:  # a retried (e.g. timed-out) compaction reuses its nodes
            return found
        source_chars = sum(len(str(m)) for m in chunk)
        budget = max(300, min(source_chars // 5, self.engine.max_summary_chars))
        text, method = self._summarise(render_for_llm(chunk), 0, budget, source_chars)
        if text is None:
            text, method = fallback_leaf(chunk, self.focus, budget), "fallback"
        node = Node(self._next_id(0), 0, text, min(chunk_seqs), max(chunk_seqs), len(chunk_seqs),
                    probe.sources, method, self.focus, (len(text) + 3) // 4)
        self._remember(node)
        return node

    def _condensed(self, children: list[Node]) -> Node:
        sources = [("node", c.node_id) for c in children]
        level = max(c.level for c in children) + 1
        probe = Node("", level, "", 0, 0, 0, sources)
        found = self._existing(probe.sources_key)
        if found is not None:
            return found
        child_chars = sum(len(c.summary) for c in children)
        budget = max(300, min(child_chars // 2, self.engine.max_summary_chars))
        source_text = "\n\n".join(f"[{c.node_id}] {c.summary}" for c in children)
        text, method = self._summarise(source_text, level, budget, child_chars)
        if text is None:
            text, method = fallback_condensed([(c.node_id, c.summary) for c in children], self.focus, budget), "fallback"
        node = Node(self._next_id(level), level, text, min(c.first_seq for c in children),
                    max(c.last_seq for c in children), sum(c.message_count for c in children),
                    sources, method, self.focus, (len(text) + 3) // 4)
        self._remember(node)
        return node

    def _remember(self, node: Node) -> None:
        self._pending[node.sources_key] = node
        self.new_nodes.append(node)

    def _summarise(self, source_text: str, level: int, budget_chars: int, source_chars: int) -> tuple[str | None, str]:
        if self._llm is None:
            self.used_fallback = True
            return None, "fallback"
        try:
            text = llm_summary(self._llm, source_text, level=level, focus_topic=self.focus,
                               target_tokens=max(64, budget_chars // 4))
        except Exception as exc:  # no provider, transport error: fall back for the rest of this call
            self.llm_error = f"{type(exc).__name__}: {exc}"
            self._llm = None
            text = None
        if text is None or len(text) >= max(200, source_chars // 2):
            self.used_fallback = True
            return None, "fallback"
        return text, "llm"

    def _condense(self, top: list[Node | dict], everything: bool) -> None:
        """Fold ``fanout`` same-level nodes into one above them, lowest level first, until none remain.

        With ``everything`` (nothing new to summarise) the remaining nodes are folded into one,
        which is the last way left to shrink.
        """
        fanout = self.engine.fanout
        while True:
            nodes = [t for t in top if isinstance(t, Node)]
            counts: dict[int, int] = {}
            for n in nodes:
                counts[n.level] = counts.get(n.level, 0) + 1
            ready = sorted(level for level, c in counts.items() if c >= fanout)
            if not ready:
                break
            group = [n for n in nodes if n.level == ready[0]][:fanout]
            self._replace(top, group, self._condensed(group))
        if everything:
            nodes = [t for t in top if isinstance(t, Node)]
            if len(nodes) >= 2:
                self._replace(top, nodes, self._condensed(nodes))

    @staticmethod
    def _replace(top: list[Node | dict], group: list[Node], node: Node) -> None:
        ids = {id(g) for g in group}
        first = min(k for k, t in enumerate(top) if id(t) in ids)
        top[:] = [t for t in top[:first]] + [node] + [t for t in top[first:] if id(t) not in ids]

    def _node_message(self, node: Node) -> dict[str, Any]:
        header = NODE_HEADER.format(
            node_id=node.node_id, level=node.level, first=node.first_seq, last=node.last_seq,
            count=node.message_count, session=safe_session_label(self.state.session_id),
        )
        hint = f'Earlier conversation, summarised. lcm_expand("{node.node_id}") returns the original messages.'
        return {"role": "user", "content": f"{header}\n{hint}\n\n{node.summary}",
                NODE_KEY: node.node_id, SUMMARY_FLAG: True}

    def report(self) -> dict[str, Any]:
        return {"summarised_messages": self.span_count, "new_nodes": [n.node_id for n in self.new_nodes],
                "fallback": self.used_fallback, "focus": self.focus}


def register(ctx: Any) -> None:
    """Hermes calls ``register(ctx)`` first; the class scan is only its fallback."""
    ctx.register_context_engine(LcmEngine())
