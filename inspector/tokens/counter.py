"""Token counts of chat messages and tool schemas, cached per message.

Counting follows OpenAI's cookbook recipe for chat models ("How to count tokens with
tiktoken"): every message costs a fixed overhead plus its role and content (and its name,
plus one), and every reply is primed with a few tokens. Fields the cookbook does not cover
(tool calls, tool call ids, images) are counted as documented below and labelled estimates.
Counts are exact only for OpenAI encodings; for other providers they are estimates and the
provider's reported usage wins (docs/prompt-caching.md §7.1).

The host counts each distinct message once per run, so everything is cached: texts by value,
messages by key (or by content hash), tool lists by content hash. Text is encoded with
``encode_ordinary`` (special-token strings in a transcript are just text) and in batches.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from inspector.tokens import rough
from inspector.tokens.bpe_fast import fast_counter
from inspector.tokens.encodings import SPECS, TokenizerUnavailable, load_encoding, unavailable_reason
from inspector.tokens.persistent import TokenCache, rules_hash
from inspector.tokens.redacted import placeholder_tokens, split_placeholders

APPROX = "approx"

TOKENS_PER_MESSAGE = 3  # cookbook, gpt-3.5-turbo-0613 / gpt-4 and later: <|start|>{role}\n{content}<|end|>
TOKENS_PER_NAME = 1  # cookbook: a name field costs one token on top of its text
REPLY_PRIMING = 3  # cookbook: every reply is primed with <|start|>assistant<|message|>
# Not in the cookbook; an estimate of the framing around each call (id, type, braces).
TOKENS_PER_TOOL_CALL = 3
# Per tool schema framing around its JSON; an estimate (OpenAI renders tools into a hidden format).
TOKENS_PER_TOOL = 7
# An image part is never its base64 bytes. OpenAI's tile formula for a 1024×1024 image at high
# detail is 85 + 4 × 170 = 765; used as a flat estimate since the transcript has no image sizes.
IMAGE_TOKENS = 765

IMAGE_PART_TYPES = frozenset({"image", "image_url", "input_image"})
_TEXT_FIELDS = ("text", "refusal", "transcript")
_BATCH_MIN = 16  # below this, a thread pool costs more than it saves
# Texts at least this long are also counted once per process, whichever counter asks: every
# replay, comparison run, follow pass and panel makes its own counter, and a 10 MB tool output
# took about a second to encode each time. Keyed by a digest of the text (not the text itself,
# which would keep every large string of every session alive).
_SHARED_MIN = 64 * 1024
# Texts :meth:`TokenCounter.count_text` keeps the count of. A message's count is kept under its
# key, so a long text is counted again only where it recurs in another message, which it rarely
# does; keeping a count for each (a dict entry and an int) was 4 MiB of a 10,000-turn replay.
# Short texts (roles, names, tool names, call ids) recur in almost every message.
_KEEP_MAX = 256
_SHARED_MAX_ENTRIES = 50_000
_shared_counts: dict[tuple[str, bytes], int] = {}


def _text_digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def spare_core() -> bool:
    """Whether the machine has a core nobody uses (1-minute load average): counting ahead on a
    thread only pays when it runs beside the replay, not in turn with it."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not on every platform: assume the usual desktop, idle cores
        return cores > 1
    return cores > 1 and load <= cores - 1.5


def available_tokenizers() -> dict[str, str | None]:
    """Every tokenizer name → None if usable offline here, else the reason (with the fix)."""
    out: dict[str, str | None] = {name: unavailable_reason(name) for name in SPECS}
    out[APPROX] = None
    return out


# Built once (json.dumps with arguments makes a new encoder per call); stateless, thread-safe.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def content_hash(obj: Any) -> str:
    """Stable hash of a JSON-able value (sorted keys), used when the caller gives no key."""
    canonical = _CANONICAL.encode(obj)
    return hashlib.blake2b(canonical.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


class TokenCounter:
    """Counts tokens with one tokenizer: a tiktoken encoding, or ``approx`` (Hermes' chars/4).

    ``approx`` is for users without tiktoken data and mirrors Hermes' rough estimator per
    message (agent/model_metadata.py:2612 of hermes-agent 0.19.0): repr length / 4, plus its fixed figure per image.
    """

    def __init__(self, tokenizer: str = "cl100k_base", persistent: TokenCache | None = None, *,
                 backend: str = "") -> None:
        self.name = tokenizer
        # How the encoding counts: the faster exact count where it exists (inspector/tokens/bpe_fast.py),
        # else tiktoken's own; ``backend="tiktoken"`` asks for tiktoken (what benchmarks compare with).
        self._fast = None if tokenizer == APPROX or backend == "tiktoken" else fast_counter(tokenizer)
        self._enc = (
            None if tokenizer == APPROX or self._fast is not None else load_encoding(tokenizer)
        )  # may raise TokenizerUnavailable
        self.backend = "rs-bpe" if self._fast is not None else ("tiktoken" if self._enc is not None else APPROX)
        self.exact = self._enc is not None or self._fast is not None
        self._count = self._fast or (_encoded_len(self._enc) if self._enc is not None else None)
        self._texts: dict[str, int] = {}
        self._messages: dict[str, int] = {}
        self._tools: dict[str, int] = {}
        # Counts of other runs and processes (see inspector.tokens.persistent); the rough estimate
        # costs less than a lookup, so only encodings use it.
        self.persistent = persistent if persistent is not None and persistent.enabled and self.exact else None
        self._namespace = f"{tokenizer}:{rules_hash()}"
        self._absent: set[str] = set()  # keys the last recall did not find in the persistent cache
        self._prefetch_stop: threading.Event | None = None
        # Whether a replay may count ahead on another thread (see prefetch): off where every
        # core already has a replay of its own (batch workers).
        self.count_ahead = True

    # -- text ------------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        """Tokens of a plain string (no special tokens: transcript text is ordinary text)."""
        if not text:
            return 0
        n = self._texts.get(text)
        if n is None:
            n = self._encode_len(text)
            if len(text) < _KEEP_MAX:
                self._texts[text] = n
        return n

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        """Like :meth:`count_text` for many strings, encoding the uncached ones in one batch."""
        self._prefill(texts)
        return [self.count_text(t) for t in texts]

    def _encode_len(self, text: str) -> int:
        text, hidden = split_placeholders(text)
        extra = placeholder_tokens(hidden) if hidden else 0
        count = self._count
        if count is None:
            return rough.estimate_tokens_rough(text) + extra
        if len(text) < _SHARED_MIN:
            return count(text) + extra
        key = (self.name, _text_digest(text))
        n = _shared_counts.get(key)
        if n is None:
            n = count(text)
            if len(_shared_counts) >= _SHARED_MAX_ENTRIES:
                _shared_counts.clear()
            _shared_counts[key] = n
        return n + extra

    def _prefill(self, texts: Iterable[str]) -> None:
        missing = list({t for t in texts if t and t not in self._texts})
        if self._fast is not None:  # one at a time: it holds the interpreter lock, a pool gains nothing
            for t in missing:
                self._texts[t] = self._encode_len(t)
            return
        if self._enc is not None:  # long texts go through the shared count, one at a time
            for t in [t for t in missing if len(t) >= _SHARED_MIN]:
                self._texts[t] = self._encode_len(t)
            missing = [t for t in missing if len(t) < _SHARED_MIN]
        if not missing:
            return
        if self._enc is None or len(missing) < _BATCH_MIN:
            for t in missing:
                self._texts[t] = self._encode_len(t)
            return
        redacted = [t for t in missing if "[REDACTED_" in t]
        for t in redacted:
            self._texts[t] = self._encode_len(t)
        plain = [t for t in missing if "[REDACTED_" not in t] if redacted else missing
        for text, ids in zip(plain, self._enc.encode_ordinary_batch(plain)):
            self._texts[text] = len(ids)

    # -- counting ahead ----------------------------------------------------------------
    def prefetch(self, messages: Sequence[dict[str, Any]],
                 form: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        """Start counting the texts of ``messages`` (each as ``form`` makes it: the form that
        will be counted) on a background thread, in order.

        tiktoken encodes without holding the GIL, so while the replay's own thread runs the host
        (hooks, hashing, the cache model), another core tokenises the turns ahead of it: the
        replay then costs about the larger of the two instead of their sum. It is only ever a
        speed-up: a text the replay reaches first it counts itself, and the thread skips it.
        ``messages`` must not change while the thread reads them (a session's own list).
        """
        if self._enc is None or not spare_core():  # the fast count holds the interpreter lock: no gain
            return
        self.stop_prefetch()
        stop = self._prefetch_stop = threading.Event()
        threading.Thread(target=self._prefetch_run, args=(messages, form, stop), name="token-prefetch",
                         daemon=True).start()

    def stop_prefetch(self) -> None:
        if self._prefetch_stop is not None:
            self._prefetch_stop.set()
            self._prefetch_stop = None

    def _prefetch_run(self, messages: Sequence[dict[str, Any]], form: Callable[[dict[str, Any]], dict[str, Any]] | None,
                      stop: threading.Event) -> None:
        texts, encode, counted = self._texts, self._enc.encode_ordinary, self._messages  # type: ignore[union-attr]
        store = self.persistent
        i, n = 0, len(messages)
        try:
            while i < n and not stop.is_set():
                if store is not None and store.hits > 32 and store.hits > 4 * store.misses:
                    return  # the counts come from the persistent cache: nothing to tokenise ahead
                # The replay counts messages in about the session's order: where it has got to
                # already, there is nothing left to count ahead (on a busy machine it may lead).
                i = max(i, len(counted))
                if i >= n:
                    return
                message = messages[i]
                i += 1
                for text in _message_texts(form(message) if form is not None else message):
                    if text and text not in texts:
                        texts[text] = len(encode(text))
        except Exception:  # noqa: BLE001 - a speed-up only: the replay counts what is missing itself
            return

    # -- messages --------------------------------------------------------------------
    def count_message(self, message: dict[str, Any], key: str | None = None) -> int:
        """Tokens one message adds to a request (excluding the per-request reply priming).

        Cached under ``key`` when given (the trace's content key), else under a content hash.
        """
        cache_key = key if key is not None else content_hash(message)
        n = self._messages.get(cache_key)
        if n is None:
            store = self.persistent
            if store is None or cache_key in self._absent:  # a recall found it missing already
                self._absent.discard(cache_key)
                n = None
            else:
                n = store.get(self._namespace, cache_key)
            if n is None:
                n = self._message_tokens(message)
                if store is not None:
                    store.put(self._namespace, cache_key, n)
            self._messages[cache_key] = n
        return n

    def recall(self, keys: Iterable[str]) -> None:
        """Load what the persistent cache knows of ``keys`` in one lookup, so counting them costs none."""
        store = self.persistent
        if store is None:
            return
        known = self._messages
        missing = [k for k in keys if k not in known]
        if missing:
            found = store.get_many(self._namespace, missing)
            for k, n in found.items():
                known[k] = int(n)
            self._absent.update(k for k in missing if k not in found)

    def count_messages(
        self, messages: Sequence[dict[str, Any]], keys: Sequence[str] | None = None
    ) -> list[int]:
        """Per-message counts; the uncached messages' texts are encoded in one batch."""
        if keys is None:
            keys = [content_hash(m) for m in messages]
        if len(keys) != len(messages):
            raise ValueError("keys and messages differ in length")
        todo = [m for m, k in zip(messages, keys) if k not in self._messages]
        if todo and self.persistent is not None:
            self.recall(keys)
            todo = [m for m, k in zip(messages, keys) if k not in self._messages]
        if todo and self.exact:
            texts: list[str] = []
            for m in todo:
                texts.extend(_message_texts(m))
            self._prefill(texts)
        return [self.count_message(m, k) for m, k in zip(messages, keys)]

    def count_request(self, messages: Sequence[dict[str, Any]], keys: Sequence[str] | None = None) -> int:
        """Prompt tokens of a chat request's messages: their sum plus the reply priming."""
        if not messages:
            return 0
        return sum(self.count_messages(messages, keys)) + (REPLY_PRIMING if self.exact else 0)

    def _message_tokens(self, message: dict[str, Any]) -> int:
        if not self.exact:
            chars, images = rough.message_rough_chars(message)
            return rough.rough_from_chars(chars, images)
        n = TOKENS_PER_MESSAGE
        n += self.count_text(_as_text(message.get("role")))
        n += self._content_tokens(message.get("content"))
        name = message.get("name")
        if name:
            n += self.count_text(_as_text(name)) + TOKENS_PER_NAME
        for call in message.get("tool_calls") or ():
            n += TOKENS_PER_TOOL_CALL + self._call_tokens(call)
        legacy = message.get("function_call")
        if isinstance(legacy, dict):
            n += TOKENS_PER_TOOL_CALL + self._call_tokens({"function": legacy})
        call_id = message.get("tool_call_id")
        if call_id:
            n += self.count_text(_as_text(call_id))
        return n

    def _content_tokens(self, content: Any) -> int:
        if content is None:
            return 0
        if isinstance(content, str):
            return self.count_text(content)
        if isinstance(content, dict):
            if content.get("_multimodal"):  # Hermes' multimodal tool result: the parts are what is sent
                return self._content_tokens(content.get("content") or [])
            return self.count_text(_as_text(content))
        if isinstance(content, list):
            n = 0
            for part in content:
                if isinstance(part, str):
                    n += self.count_text(part)
                elif isinstance(part, dict):
                    if part.get("type") in IMAGE_PART_TYPES:
                        n += IMAGE_TOKENS
                    else:
                        n += sum(
                            self.count_text(part[f]) for f in _TEXT_FIELDS if isinstance(part.get(f), str)
                        )
            return n
        return self.count_text(_as_text(content))

    def _call_tokens(self, call: Any) -> int:
        if not isinstance(call, dict):
            return 0
        fn = call.get("function") or {}
        if not isinstance(fn, dict):
            return 0
        return self.count_text(_as_text(fn.get("name"))) + self.count_text(_as_text(fn.get("arguments")))

    # -- tools -----------------------------------------------------------------------
    def count_tools(self, schemas: list[dict[str, Any]]) -> int:
        """Tokens of the tool schemas sent with a request (an estimate: compact JSON + framing).

        Providers render schemas into an undocumented internal format; the compact JSON of each
        function plus a small fixed framing is close and, above all, stable across requests.
        For ``approx`` this is Hermes' own ``_estimate_tools_tokens_rough``.
        """
        if not schemas:
            return 0
        cache_key = content_hash(schemas)
        n = self._tools.get(cache_key)
        store = self.persistent
        if n is None and store is not None:
            n = store.get(self._namespace, "tools:" + cache_key)
            if n is not None:
                self._tools[cache_key] = n
        if n is None:
            if not self.exact:
                n = rough.estimate_tools_tokens_rough(schemas)
            else:
                n = 0
                for tool in schemas:
                    fn = tool.get("function", tool) if isinstance(tool, dict) else tool
                    text = json.dumps(fn, ensure_ascii=False, separators=(",", ":"), default=str)
                    n += TOKENS_PER_TOOL + self.count_text(text)
            self._tools[cache_key] = n
            if store is not None:
                store.put(self._namespace, "tools:" + cache_key, n)
        return n

    # -- housekeeping ----------------------------------------------------------------
    def cache_sizes(self) -> dict[str, int]:
        return {"texts": len(self._texts), "messages": len(self._messages), "tools": len(self._tools)}

    def flush(self) -> None:
        """Write the counts made so far to the persistent cache (also done in batches, and at exit)."""
        if self.persistent is not None:
            self.persistent.flush()

    def clear(self) -> None:
        self._texts.clear()
        self._messages.clear()
        self._tools.clear()


def make_counter(
    tokenizer: str = "cl100k_base", *, fallback: bool = False
) -> tuple[TokenCounter, str | None]:
    """A counter for ``tokenizer``; with ``fallback``, cl100k_base (then approx) when it is unavailable.

    Returns the counter and the warning to show (None when the requested tokenizer was used),
    so a missing o200k file degrades visibly instead of silently.
    """
    try:
        return TokenCounter(tokenizer), None
    except TokenizerUnavailable as exc:
        if not fallback:
            raise
        for alt in ("cl100k_base", APPROX):
            if alt == tokenizer:
                continue
            try:
                return TokenCounter(alt), f"{exc} Using {alt} instead."
            except TokenizerUnavailable:
                continue
        raise


def _encoded_len(enc: Any) -> Callable[[str], int]:
    encode = enc.encode_ordinary
    return lambda text: len(encode(text))


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _message_texts(message: dict[str, Any]) -> list[str]:
    """The strings :meth:`TokenCounter._message_tokens` will encode, for batch prefill."""
    out = [_as_text(message.get("role"))]
    content = message.get("content")
    if isinstance(content, dict) and content.get("_multimodal"):
        content = content.get("content") or []
    if isinstance(content, str):
        out.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict) and part.get("type") not in IMAGE_PART_TYPES:
                out.extend(part[f] for f in _TEXT_FIELDS if isinstance(part.get(f), str))
    for call in message.get("tool_calls") or ():
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            out.append(_as_text(fn.get("name")))
            out.append(_as_text(fn.get("arguments")))
    for field in ("name", "tool_call_id"):
        value = message.get(field)
        if value:
            out.append(_as_text(value))
    return out
