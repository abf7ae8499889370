"""Keyed structural diff of two message lists (docs/prompt-caching.md §7.3).

The inspector shows what ``select_context`` and ``compress`` did to a conversation. Diffing the
rendered text would be quadratic and unreadable on long sessions, so we diff *messages*:

1. Every message gets a key: (role, tool_call_id or id, hash of the whole message), plus an
   ordinal among identical keys (Foxglove's ``getDiff`` idea). The ordinal makes every key
   unique, so the LCS of the two key lists is a longest increasing subsequence: O(n log n)
   whatever the edit pattern. (``difflib.SequenceMatcher`` alone goes quadratic on repeated
   items with ``autojunk=False``, throws them away with ``autojunk=True``, and takes seconds
   on 5,000 messages when every other one was dropped.)
2. The common prefix and suffix are trimmed first. The prefix length is reported because it is
   also the prompt-cache prefix: a provider can only serve the messages before the first change.
3. The LCS runs on the middle only; difflib is used only on pieces small enough to be cheap.
4. Each run of removed + added messages is aligned a second time with a similarity score, so
   an edited tool result shows as *changed* (same role and tool_call_id, or similar text) and a
   compaction summary that replaced N messages shows as *summarised* with ``summarised_from=N``.
5. Text inside changed messages is refined line by line, then word by word inside changed
   lines; never character by character on long text (12 KiB char-level takes seconds).

The whole hash is used (not just the content) so that "equal" really means equal: a message that
only gained ``_compressed_summary`` or lost a tool call is reported, and :func:`apply_diff` can
rebuild ``after`` from ``before`` exactly.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

from inspector.trace.model import message_key
from inspector.trace.prefix import common_prefix_len

__all__ = [
    "DiffOp",
    "MessageDiff",
    "SUMMARY_PREFIXES",
    "apply_diff",
    "diff_messages",
    "is_summary",
    "message_text",
    "refine_messages",
    "refine_text",
    "stats",
]

OP_EQUAL = "equal"
OP_ADDED = "added"
OP_REMOVED = "removed"
OP_CHANGED = "changed"
OP_SUMMARISED = "summarised"
OP_KINDS = frozenset({OP_EQUAL, OP_ADDED, OP_REMOVED, OP_CHANGED, OP_SUMMARISED})

# How compaction summaries announce themselves (agent/context_compressor.py:87-267 of hermes-agent 0.19.0; docs/formats.md §2.1, §2.4): the
# current prefix, the legacy one (also the trajectory compressor's), and the merged form where
# the summary was folded into the first tail message.
SUMMARY_PREFIXES = ("[CONTEXT COMPACTION", "[CONTEXT SUMMARY]", "[PRIOR CONTEXT")

# Second-level alignment of a removed/added run costs one score per (removed, added) cell.
# Above this many cells we pair only by exact key or tool_call_id (linear), so a compression
# that drops 3,000 messages never builds a 3,000 x N table.
MAX_ALIGN_CELLS = 20_000
# Plain messages (no shared tool_call_id) are "changed" rather than removed+added when the
# Jaccard similarity of their word sets is at least this.
SIMILARITY_THRESHOLD = 0.5
# Characters of a message considered when judging similarity (enough to recognise an edit).
SIMILARITY_CHARS = 8_000
# Word-level refinement is skipped for blocks larger than this (they are shown as replaced).
MAX_WORD_REFINE_CHARS = 256_000
# A word-level refinement that keeps less than this fraction of characters is noise; show the
# lines as replaced instead.
MIN_WORD_REFINE_RATIO = 0.3


@dataclass(frozen=True, slots=True)
class DiffOp:
    """One step of the diff: a run of ``before[i:j]`` that became ``after[k:l]``.

    Ranges are half-open and contiguous: concatenating the ``before_range`` of all ops gives
    ``0..len(before)`` in order, and likewise for ``after_range``. ``removed`` has an empty
    after range (at the position where the messages were), ``added`` an empty before range.
    ``changed`` is always one message to one message; ``summarised`` is N removed messages to
    the summary message(s) that replaced them (``summarised_from == N``).
    """

    kind: str
    before_range: tuple[int, int]
    after_range: tuple[int, int]
    summarised_from: int | None = None

    @property
    def before_len(self) -> int:
        return self.before_range[1] - self.before_range[0]

    @property
    def after_len(self) -> int:
        return self.after_range[1] - self.after_range[0]


@dataclass
class MessageDiff:
    """The result of :func:`diff_messages`.

    ``before``/``after`` are shallow copies of the inputs (references to the same message
    dicts, no deep copy) so a panel can render any op without holding the inputs itself.
    """

    ops: list[DiffOp]
    common_prefix: int
    common_suffix: int
    before: list[dict[str, Any]] = field(repr=False)
    after: list[dict[str, Any]] = field(repr=False)
    keys_before: list[str] = field(repr=False)
    keys_after: list[str] = field(repr=False)

    @property
    def identical(self) -> bool:
        return all(op.kind == OP_EQUAL for op in self.ops)

    def ops_of(self, kind: str) -> list[DiffOp]:
        return [op for op in self.ops if op.kind == kind]

    def refine(self, op: DiffOp) -> list[tuple[str, str, str]]:
        """Line→word highlights for a ``changed`` op (empty for other kinds)."""
        if op.kind != OP_CHANGED:
            return []
        return refine_messages(self.before[op.before_range[0]], self.after[op.after_range[0]])


# -- message helpers ------------------------------------------------------------------------


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, dict):
        if isinstance(part.get("text"), str):
            return part["text"]
        kind = part.get("type", "part")
        return f"[{kind}]"
    return str(part)


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_part_text(p) for p in content)
    return str(content)


def message_text(message: dict[str, Any]) -> str:
    """The human-visible text of a message: content (parts joined) plus its tool calls.

    Used for similarity and refinement, so tool-call arguments take part in the comparison
    (an assistant message whose only change is a call's arguments is still "changed").
    """
    text = _content_text(message.get("content"))
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        lines = [text] if text else []
        for call in calls:
            if not isinstance(call, dict):
                lines.append(str(call))
                continue
            fn = call.get("function") if isinstance(call.get("function"), dict) else {}
            name = fn.get("name", call.get("name", "?"))
            args = fn.get("arguments", call.get("arguments", ""))
            lines.append(f"{name}({args if isinstance(args, str) else args!r})")
        text = "\n".join(lines)
    return text


def is_summary(message: dict[str, Any]) -> bool:
    """True for a compaction summary: flagged ``_compressed_summary`` or a known prefix.

    The flag is in-process only (never persisted), so replayed transcripts are recognised by
    the text prefix, including the merged "[PRIOR CONTEXT" form.
    """
    if message.get("_compressed_summary"):
        return True
    content = message.get("content")
    if isinstance(content, list):
        first = next((p for p in content if isinstance(p, dict | str)), None)
        head = _part_text(first) if first is not None else ""
    else:
        head = _content_text(content)
    return head.lstrip().startswith(SUMMARY_PREFIXES)


def _ident(message: dict[str, Any]) -> str | None:
    value = message.get("tool_call_id") or message.get("id")
    return str(value) if value else None


# -- the diff -------------------------------------------------------------------------------


def _common_suffix(a: Sequence[str], b: Sequence[str], limit: int) -> int:
    i = 0
    la, lb = len(a), len(b)
    while i < limit and a[la - 1 - i] == b[lb - 1 - i]:
        i += 1
    return i


# Pieces of at most this many (a x b) cells are matched by difflib (exact, readable on text);
# bigger ones are split at items unique to both sides (patience) or matched by LIS.
SMALL_MATCH_CELLS = 10_000


def _lis_pairs(a: Sequence[Any], b: Sequence[Any], a0: int, b0: int) -> list[tuple[int, int]]:
    """LCS of two sequences whose items are unique on each side, as a longest increasing
    subsequence of b-positions (O(n log n)). Indices are offset by a0/b0."""
    pos_b = {x: j for j, x in enumerate(b)}
    seq = [(i, pos_b[x]) for i, x in enumerate(a) if x in pos_b]
    tails: list[int] = []  # smallest b-position ending an increasing run of each length
    tail_at: list[int] = []  # index into seq of that run's last element
    prev = [-1] * len(seq)
    for k, (_, j) in enumerate(seq):
        p = bisect_left(tails, j)
        if p == len(tails):
            tails.append(j)
            tail_at.append(k)
        else:
            tails[p] = j
            tail_at[p] = k
        prev[k] = tail_at[p - 1] if p else -1
    out: list[tuple[int, int]] = []
    k = tail_at[-1] if tail_at else -1
    while k >= 0:
        i, j = seq[k]
        out.append((i + a0, j + b0))
        k = prev[k]
    out.reverse()
    return out


def _unique_ordinals(items: Sequence[Any]) -> list[tuple[Any, int]]:
    seen: dict[Any, int] = {}
    out: list[tuple[Any, int]] = []
    for x in items:
        n = seen.get(x, 0)
        seen[x] = n + 1
        out.append((x, n))
    return out


def _matching_pairs(a: Sequence[Any], b: Sequence[Any]) -> list[tuple[int, int]]:
    """Index pairs (i, j), increasing in both, of a long common subsequence of a and b.

    Exact for small pieces (difflib, ``autojunk=False``) and for inputs whose items are unique
    (LIS); otherwise patience-style: anchor on items that occur once on each side, recurse into
    the gaps. Never quadratic on more than ``SMALL_MATCH_CELLS`` cells at a time.
    """
    out: list[tuple[int, int]] = []
    stack = [(0, len(a), 0, len(b))]
    while stack:
        a0, a1, b0, b1 = stack.pop()
        while a0 < a1 and b0 < b1 and a[a0] == b[b0]:
            out.append((a0, b0))
            a0, b0 = a0 + 1, b0 + 1
        while a0 < a1 and b0 < b1 and a[a1 - 1] == b[b1 - 1]:
            a1, b1 = a1 - 1, b1 - 1
            out.append((a1, b1))
        if a0 == a1 or b0 == b1:
            continue
        if (a1 - a0) * (b1 - b0) <= SMALL_MATCH_CELLS:
            sm = SequenceMatcher(None, a[a0:a1], b[b0:b1], autojunk=False)
            for blk in sm.get_matching_blocks():
                out.extend((a0 + blk.a + d, b0 + blk.b + d) for d in range(blk.size))
            continue
        ca, cb = Counter(a[a0:a1]), Counter(b[b0:b1])
        ua = [(i, a[i]) for i in range(a0, a1) if ca[a[i]] == 1 and cb.get(a[i]) == 1]
        if not ua:
            # Nothing unique to anchor on: match the k-th occurrence with the k-th.
            out.extend(_lis_pairs(_unique_ordinals(a[a0:a1]), _unique_ordinals(b[b0:b1]), a0, b0))
            continue
        ub = [(j, b[j]) for j in range(b0, b1) if cb[b[j]] == 1 and ca.get(b[j]) == 1]
        anchors = _lis_pairs([x for _, x in ua], [x for _, x in ub], 0, 0)
        anchors = [(ua[i][0], ub[j][0]) for i, j in anchors]
        out.extend(anchors)
        ci, cj = a0, b0
        for i, j in anchors:
            if i > ci and j > cj:
                stack.append((ci, i, cj, j))
            ci, cj = i + 1, j + 1
        if a1 > ci and b1 > cj:
            stack.append((ci, a1, cj, b1))
    out.sort()
    return out


def _opcodes(a_len: int, b_len: int, pairs: list[tuple[int, int]]) -> list[tuple[str, int, int, int, int]]:
    """difflib-style opcodes from increasing matched pairs."""
    ops: list[tuple[str, int, int, int, int]] = []
    i = j = 0
    k, n = 0, len(pairs)
    while k < n:
        pi, pj = pairs[k]
        if pi > i or pj > j:
            tag = "replace" if pi > i and pj > j else ("delete" if pi > i else "insert")
            ops.append((tag, i, pi, j, pj))
        e = k
        while e + 1 < n and pairs[e + 1] == (pairs[e][0] + 1, pairs[e][1] + 1):
            e += 1
        size = e - k + 1
        ops.append(("equal", pi, pi + size, pj, pj + size))
        i, j = pi + size, pj + size
        k = e + 1
    if i < a_len or j < b_len:
        tag = "replace" if i < a_len and j < b_len else ("delete" if i < a_len else "insert")
        ops.append((tag, i, a_len, j, b_len))
    return ops


def _ordinal_keys(messages: Sequence[dict[str, Any]], keys: Sequence[str]) -> list[tuple[Any, ...]]:
    """(role, ident, hash, n) where n counts earlier identical messages on the same side."""
    seen: dict[str, int] = {}
    out: list[tuple[Any, ...]] = []
    for msg, key in zip(messages, keys, strict=True):
        n = seen.get(key, 0)
        seen[key] = n + 1
        out.append((msg.get("role"), _ident(msg), key, n))
    return out


class _Block:
    """Second-level alignment of ``before[i1:i2]`` (removed) against ``after[j1:j2]`` (added)."""

    def __init__(
        self,
        before: Sequence[dict[str, Any]],
        after: Sequence[dict[str, Any]],
        kb: Sequence[str],
        ka: Sequence[str],
        i1: int,
        i2: int,
        j1: int,
        j2: int,
    ) -> None:
        self.before, self.after, self.kb, self.ka = before, after, kb, ka
        self.i1, self.i2, self.j1, self.j2 = i1, i2, j1, j2
        self.summary = [is_summary(after[j]) for j in range(j1, j2)]
        self._words: dict[tuple[int, int], frozenset[str]] = {}

    def _wordset(self, side: int, idx: int) -> frozenset[str]:
        cached = self._words.get((side, idx))
        if cached is None:
            msg = self.before[idx] if side == 0 else self.after[idx]
            cached = frozenset(_WORD_RE.findall(message_text(msg)[:SIMILARITY_CHARS]))
            self._words[(side, idx)] = cached
        return cached

    def score(self, i: int, j: int) -> float:
        """How well before[i] pairs with after[j]; 0 means "do not pair"."""
        if self.kb[i] == self.ka[j]:
            return 4.0  # the same message, displaced by a duplicate ordinal: report it equal
        if self.summary[j - self.j1]:
            return 0.0  # a new summary stands for many messages, never for one
        a, b = self.before[i], self.after[j]
        if a.get("role") != b.get("role"):
            return 0.0
        ia, ib = _ident(a), _ident(b)
        if ia is not None and ib is not None:
            return 2.5 if ia == ib else 0.0
        wa, wb = self._wordset(0, i), self._wordset(1, j)
        if not wa and not wb:
            return 1.5  # both empty-text messages of one role (e.g. tool-call-only turns)
        small, big = sorted((len(wa), len(wb)))
        if big == 0 or small / big < SIMILARITY_THRESHOLD:
            return 0.0
        sim = len(wa & wb) / len(wa | wb)
        return 1.0 + sim if sim >= SIMILARITY_THRESHOLD else 0.0

    def pairs(self) -> list[tuple[int, int]]:
        n, m = self.i2 - self.i1, self.j2 - self.j1
        if n == 0 or m == 0:
            return []
        if n * m <= MAX_ALIGN_CELLS:
            return self._pairs_dp(n, m)
        return self._pairs_linear()

    def _pairs_dp(self, n: int, m: int) -> list[tuple[int, int]]:
        # Weighted LCS: maximise the total score of an order-preserving pairing.
        i1, j1 = self.i1, self.j1
        dp = [[0.0] * (m + 1) for _ in range(n + 1)]
        scores: dict[tuple[int, int], float] = {}
        for x in range(1, n + 1):
            row, prev = dp[x], dp[x - 1]
            for y in range(1, m + 1):
                best = prev[y] if prev[y] >= row[y - 1] else row[y - 1]
                s = self.score(i1 + x - 1, j1 + y - 1)
                if s > 0.0:
                    scores[(x, y)] = s
                    if prev[y - 1] + s > best:
                        best = prev[y - 1] + s
                row[y] = best
        out: list[tuple[int, int]] = []
        x, y = n, m
        while x > 0 and y > 0:
            s = scores.get((x, y), 0.0)
            if s > 0.0 and dp[x][y] == dp[x - 1][y - 1] + s:
                out.append((i1 + x - 1, j1 + y - 1))
                x -= 1
                y -= 1
            elif dp[x - 1][y] >= dp[x][y - 1]:
                x -= 1
            else:
                y -= 1
        out.reverse()
        return out

    def _pairs_linear(self) -> list[tuple[int, int]]:
        # Big blocks: pair only by exact key or (role, tool_call_id); summaries never pair.
        def pkey(msg: dict[str, Any], key: str) -> tuple[Any, ...]:
            ident = _ident(msg)
            return ("id", msg.get("role"), ident) if ident else ("k", key)

        a = [pkey(self.before[i], self.kb[i]) for i in range(self.i1, self.i2)]
        b: list[Any] = [
            object() if self.summary[j - self.j1] else pkey(self.after[j], self.ka[j])
            for j in range(self.j1, self.j2)
        ]
        out: list[tuple[int, int]] = []
        for x, y in _matching_pairs(a, b):
            i, j = self.i1 + x, self.j1 + y
            if self.score(i, j) > 0.0:
                out.append((i, j))
        return out

    def ops(self) -> list[DiffOp]:
        out: list[DiffOp] = []
        ci, cj = self.i1, self.j1
        for i, j in self.pairs():
            self._gap(out, ci, i, cj, j)
            kind = OP_EQUAL if self.kb[i] == self.ka[j] else OP_CHANGED
            out.append(DiffOp(kind, (i, i + 1), (j, j + 1)))
            ci, cj = i + 1, j + 1
        self._gap(out, ci, self.i2, cj, self.j2)
        return out

    def _gap(self, out: list[DiffOp], i1: int, i2: int, j1: int, j2: int) -> None:
        """Unpaired removed ``[i1,i2)`` and added ``[j1,j2)``: removed, added or summarised."""
        s = next((j for j in range(j1, j2) if self.summary[j - self.j1]), None)
        if s is None or i1 == i2:
            if i2 > i1:
                out.append(DiffOp(OP_REMOVED, (i1, i2), (j1, j1)))
            if j2 > j1:
                out.append(DiffOp(OP_ADDED, (i2, i2), (j1, j2)))
            return
        e = s
        while e < j2 and self.summary[e - self.j1]:
            e += 1
        if s > j1:
            out.append(DiffOp(OP_ADDED, (i1, i1), (j1, s)))
        out.append(DiffOp(OP_SUMMARISED, (i1, i2), (s, e), summarised_from=i2 - i1))
        if j2 > e:
            out.append(DiffOp(OP_ADDED, (i2, i2), (e, j2)))


def _merge(ops: list[DiffOp]) -> list[DiffOp]:
    """Join adjacent equal/added/removed runs (changed and summarised stay one op each)."""
    out: list[DiffOp] = []
    for op in ops:
        if op.before_len == 0 and op.after_len == 0:
            continue
        if out and op.kind == out[-1].kind and op.kind in (OP_EQUAL, OP_ADDED, OP_REMOVED):
            last = out[-1]
            out[-1] = DiffOp(
                op.kind, (last.before_range[0], op.before_range[1]), (last.after_range[0], op.after_range[1])
            )
        else:
            out.append(op)
    return out


def diff_messages(
    before: Sequence[dict[str, Any]],
    after: Sequence[dict[str, Any]],
    *,
    keys_before: Sequence[str] | None = None,
    keys_after: Sequence[str] | None = None,
) -> MessageDiff:
    """Diff two message lists by key.

    ``keys_before``/``keys_after`` are the messages' :func:`message_key` values when the caller
    already has them (the trace stores requests as key lists), which saves re-hashing every
    message. Runs in O(n) for the trimmed prefix/suffix plus the LCS on the middle.
    """
    kb = list(keys_before) if keys_before is not None else [message_key(m) for m in before]
    ka = list(keys_after) if keys_after is not None else [message_key(m) for m in after]
    if len(kb) != len(before) or len(ka) != len(after):
        raise ValueError("keys_before/keys_after must have one key per message")
    n, m = len(kb), len(ka)
    prefix = common_prefix_len(kb, ka)
    suffix = _common_suffix(kb, ka, min(n, m) - prefix)
    ops: list[DiffOp] = []
    if prefix:
        ops.append(DiffOp(OP_EQUAL, (0, prefix), (0, prefix)))
    b0, b1, a0, a1 = prefix, n - suffix, prefix, m - suffix
    if b1 > b0 or a1 > a0:
        ids_b = _ordinal_keys(before[b0:b1], kb[b0:b1])
        ids_a = _ordinal_keys(after[a0:a1], ka[a0:a1])
        for tag, i1, i2, j1, j2 in _opcodes(len(ids_b), len(ids_a), _matching_pairs(ids_b, ids_a)):
            i1, i2, j1, j2 = i1 + b0, i2 + b0, j1 + a0, j2 + a0
            if tag == "equal":
                ops.append(DiffOp(OP_EQUAL, (i1, i2), (j1, j2)))
            else:
                ops.extend(_Block(before, after, kb, ka, i1, i2, j1, j2).ops())
    if suffix:
        ops.append(DiffOp(OP_EQUAL, (n - suffix, n), (m - suffix, m)))
    return MessageDiff(
        ops=_merge(ops),
        common_prefix=prefix,
        common_suffix=suffix,
        before=list(before),
        after=list(after),
        keys_before=kb,
        keys_after=ka,
    )


def apply_diff(before: Sequence[dict[str, Any]], diff: MessageDiff) -> list[dict[str, Any]]:
    """Rebuild ``after``: equal runs come from ``before``, everything else from the diff.

    This is the diff's correctness check (and what the property test exercises): if an
    ``equal`` op pointed at the wrong messages, the result would differ from ``after``.
    """
    if len(before) != len(diff.keys_before):
        raise ValueError(f"diff expects {len(diff.keys_before)} messages before, got {len(before)}")
    out: list[dict[str, Any]] = []
    for op in diff.ops:
        if op.kind == OP_EQUAL:
            out.extend(before[op.before_range[0] : op.before_range[1]])
        elif op.kind != OP_REMOVED:
            out.extend(diff.after[op.after_range[0] : op.after_range[1]])
    return out


def stats(diff: MessageDiff, tokens: Callable[[dict[str, Any]], int] | None = None) -> dict[str, Any]:
    """Header figures for a diff view: messages (and tokens) kept, dropped, added, changed.

    ``dropped`` counts messages that are gone (removed, or folded into a summary); ``added``
    counts new messages including the summaries. Changed messages are counted apart and their
    token change goes into ``tokens_changed_before``/``tokens_changed_after``, so that
    ``tokens_before == kept + dropped + changed_before`` and likewise for after. Token fields
    are ``None`` when no counter is given.
    """
    counts = {"kept": 0, "dropped": 0, "added": 0, "changed": 0, "summarised": 0, "summaries": 0}
    tok = dict.fromkeys(("kept", "dropped", "added", "changed_before", "changed_after", "prefix"), 0)

    def tsum(msgs: Sequence[dict[str, Any]]) -> int:
        return sum(tokens(msg) for msg in msgs) if tokens is not None else 0

    for op in diff.ops:
        b = diff.before[op.before_range[0] : op.before_range[1]]
        a = diff.after[op.after_range[0] : op.after_range[1]]
        if op.kind == OP_EQUAL:
            counts["kept"] += len(b)
            tok["kept"] += tsum(b)
        elif op.kind == OP_REMOVED:
            counts["dropped"] += len(b)
            tok["dropped"] += tsum(b)
        elif op.kind == OP_ADDED:
            counts["added"] += len(a)
            tok["added"] += tsum(a)
        elif op.kind == OP_CHANGED:
            counts["changed"] += 1
            tok["changed_before"] += tsum(b)
            tok["changed_after"] += tsum(a)
        else:
            counts["dropped"] += len(b)
            counts["summarised"] += len(b)
            counts["summaries"] += len(a)
            counts["added"] += len(a)
            tok["dropped"] += tsum(b)
            tok["added"] += tsum(a)
    out: dict[str, Any] = {
        "messages_before": len(diff.before),
        "messages_after": len(diff.after),
        "common_prefix": diff.common_prefix,
        "common_suffix": diff.common_suffix,
        **counts,
    }
    if tokens is None:
        for name in ("before", "after", *tok):
            out[f"tokens_{name}"] = None
        return out
    tok["prefix"] = tsum(diff.before[: diff.common_prefix])
    out["tokens_before"] = tok["kept"] + tok["dropped"] + tok["changed_before"]
    out["tokens_after"] = tok["kept"] + tok["added"] + tok["changed_after"]
    for name, value in tok.items():
        out[f"tokens_{name}"] = value
    return out


# -- text refinement ------------------------------------------------------------------------

# Words, runs of whitespace, and single punctuation characters: fine enough to highlight an
# edited number or path, coarse enough that 60 KiB refines in milliseconds.
_WORD_RE = re.compile(r"\s+|\w+|[^\w\s]")


def _push(out: list[tuple[str, str, str]], tag: str, a: str, b: str) -> None:
    if not a and not b:
        return
    if out and out[-1][0] == tag:
        _, pa, pb = out[-1]
        out[-1] = (tag, pa + a, pb + b)
    else:
        out.append((tag, a, b))


def _seq_opcodes(a: Sequence[str], b: Sequence[str]) -> list[tuple[str, int, int, int, int]]:
    """Opcodes for lines or words, bounded in time whatever repeats in the text."""
    return _opcodes(len(a), len(b), _matching_pairs(a, b))


def _refine_words(a: str, b: str, out: list[tuple[str, str, str]]) -> None:
    if not a or not b or len(a) + len(b) > MAX_WORD_REFINE_CHARS:
        _push(out, "replace" if a and b else ("delete" if a else "insert"), a, b)
        return
    wa, wb = _WORD_RE.findall(a), _WORD_RE.findall(b)
    ops = _seq_opcodes(wa, wb)
    kept = sum(sum(len(w) for w in wa[i1:i2]) for tag, i1, i2, _, _ in ops if tag == "equal")
    if kept < MIN_WORD_REFINE_RATIO * max(len(a), len(b)):
        _push(out, "replace", a, b)
        return
    for tag, i1, i2, j1, j2 in ops:
        _push(out, tag, "".join(wa[i1:i2]), "".join(wb[j1:j2]))


def refine_text(a: str, b: str) -> list[tuple[str, str, str]]:
    """Highlight the difference between two texts: lines first, then words inside changed lines.

    Returns ``(tag, a_text, b_text)`` segments with tag in equal / delete / insert / replace;
    joining the ``a_text`` parts gives ``a`` and joining the ``b_text`` parts gives ``b``. There
    is deliberately no character-level pass: it is quadratic and unreadable beyond a few KB.
    """
    out: list[tuple[str, str, str]] = []
    if a == b:
        _push(out, "equal", a, b)
        return out
    la, lb = a.splitlines(keepends=True), b.splitlines(keepends=True)
    for tag, i1, i2, j1, j2 in _seq_opcodes(la, lb):
        ta, tb = "".join(la[i1:i2]), "".join(lb[j1:j2])
        if tag == "replace":
            _refine_words(ta, tb, out)
        else:
            _push(out, tag, ta, tb)
    return out


def refine_messages(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, str, str]]:
    """:func:`refine_text` on the visible text of two messages (content and tool calls)."""
    return refine_text(message_text(a), message_text(b))
