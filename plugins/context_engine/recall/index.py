"""Turns and their BM25 features, for the recall engine.

A *turn* is a user message and everything up to the next user message. Turns are the unit of
selection because they never split a tool call from its result and they read as a whole to the
model. Features are cached by a cheap turn key (finished turns never change), so a request costs
tokenising only what is new.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Any

_TOKEN = re.compile(r"[a-z0-9]+(?:[_.][a-z0-9]+)*")
STOPWORDS = frozenset(
    "a an and are as at be but by can do does for from has have how i if in into is it its me my "
    "no not of on or our please so that the then there these this to up us was we what when where "
    "which who why will with would you your let lets now just also again".split()
)


def terms(text: str) -> list[str]:
    """Lower-cased words; ``snake_case`` and ``dotted.names`` also yield their parts."""
    out: list[str] = []
    for tok in _TOKEN.findall(text.lower()):
        if tok not in STOPWORDS and len(tok) > 1:
            out.append(tok)
        if "_" in tok or "." in tok:
            out.extend(p for p in re.split(r"[_.]", tok) if len(p) > 1 and p not in STOPWORDS)
    return out


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    else:
        text = "" if content is None else str(content)
    calls = message.get("tool_calls") or []
    if calls:
        text += "\n" + "\n".join(
            f"{(c.get('function') or {}).get('name', '')} {(c.get('function') or {}).get('arguments', '')}"
            for c in calls if isinstance(c, dict)
        )
    return text


def message_chars(message: dict[str, Any]) -> int:
    """Hermes' rough measure is ``len(str(message))``; use the same so budgets agree with the host."""
    return len(str(message))


@dataclass
class Turn:
    """A slice ``[start, end)`` of the request list that starts with a user message."""

    start: int
    end: int
    key: str = ""


@dataclass
class Features:
    chars: int
    skeleton_chars: int
    tf: Counter
    length: int


def split_turns(messages: list[dict[str, Any]], start: int, end: int) -> tuple[list[int], list[Turn]]:
    """(indices before the first user message, turns) of ``messages[start:end]``."""
    preamble: list[int] = []
    turns: list[Turn] = []
    for i in range(start, end):
        if messages[i].get("role") == "user":
            if turns:
                turns[-1].end = i
            turns.append(Turn(i, end))
        elif not turns:
            preamble.append(i)
    return preamble, turns


def turn_key(messages: list[dict[str, Any]], turn: Turn) -> str:
    """Identity of a finished turn without hashing all of its text.

    The user text (short), the number of messages, their total content length and the last
    call id pin a turn down well enough; a collision could only skew a score, never the validity
    of a selection, because selections are always re-read from the current request.
    """
    first = messages[turn.start]
    total = 0
    last_id = ""
    for m in messages[turn.start:turn.end]:
        c = m.get("content")
        total += len(c) if isinstance(c, str) else len(str(c))
        last_id = str(m.get("tool_call_id") or last_id)
    blob = f"{message_text(first)}\x00{turn.end - turn.start}\x00{total}\x00{last_id}"
    return hashlib.sha1(blob.encode("utf-8", "surrogatepass")).hexdigest()


def skeleton(messages: list[dict[str, Any]], turn: Turn) -> list[int]:
    """Indices of a turn without its tool traffic: the user message and plain assistant answers.

    Dropping an assistant tool call together with all of its results keeps the pairs intact.
    """
    keep = [turn.start]
    for i in range(turn.start + 1, turn.end):
        m = messages[i]
        if m.get("role") == "assistant" and not m.get("tool_calls"):
            keep.append(i)
    return keep


class FeatureCache:
    """Thread-safe LRU of turn features, shared by every session (keys are content-derived)."""

    def __init__(self, capacity: int = 50_000) -> None:
        self.capacity = capacity
        self._data: OrderedDict[str, Features] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, messages: list[dict[str, Any]], turn: Turn) -> Features:
        if not turn.key:
            turn.key = turn_key(messages, turn)
        with self._lock:
            hit = self._data.get(turn.key)
            if hit is not None:
                self._data.move_to_end(turn.key)
                return hit
        feats = compute_features(messages, turn)
        with self._lock:
            self._data[turn.key] = feats
            while len(self._data) > self.capacity:
                self._data.popitem(last=False)
        return feats

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


def compute_features(messages: list[dict[str, Any]], turn: Turn) -> Features:
    words: list[str] = []
    chars = 0
    for m in messages[turn.start:turn.end]:
        chars += message_chars(m)
        words.extend(terms(message_text(m)))
    skel = sum(message_chars(messages[i]) for i in skeleton(messages, turn))
    return Features(chars=chars, skeleton_chars=skel, tf=Counter(words), length=len(words))


def bm25_scores(query: list[str], docs: list[Features], k1: float = 1.2, b: float = 0.75) -> list[float]:
    """Okapi BM25 of each document for the query terms (document frequencies from ``docs``)."""
    if not docs or not query:
        return [0.0] * len(docs)
    n = len(docs)
    avg = sum(d.length for d in docs) / n or 1.0
    q = Counter(query)
    df = {t: sum(1 for d in docs if t in d.tf) for t in q}
    scores = []
    for d in docs:
        s = 0.0
        for t, qf in q.items():
            f = d.tf.get(t, 0)
            if not f:
                continue
            idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            s += qf * idf * f * (k1 + 1) / (f + k1 * (1 - b + b * d.length / avg))
        scores.append(s)
    return scores
