"""Request assembly and token counting: the history, the request built from it, and its token figures.

Hermes builds each request from the system prompt and the history, lets ``select_context`` choose
from it ([M] only), sanitises it (unpaired tool calls and results, refused roles), and measures it
for the pre-API gate with its rough estimate (agent/conversation_loop.py:1087-1090) or, under
[M], the usage anchor. This part owns the history list and everything derived from it: each
message's shaped and wire form, its stored key and token figures (computed once per message
object), the running sums of the assembled request, the tool schemas' figures, and the last real
prompt size the anchor starts from. The history only grows by appending between compactions, so
a request costs its new messages, not the whole context.
"""

from __future__ import annotations

from typing import Any

from inspector.host.recorder import HookRecorder
from inspector.host.repair import needs_repair, repair_sequence
from inspector.host.shaping import (
    VALID_ROLES,
    call_id,
    describe_sanitised,
    sanitize_message,
    sanitize_request,
    shape_message,
    validate_selection,
)
from inspector.host.values import as_int, clone, jsonable
from inspector.tokens.rough import (
    estimate_tools_tokens_rough,
    is_plain,
    message_rough_chars,
    rough_chars_from,
    rough_from_chars,
)
from inspector.trace.model import Fault
from inspector.trace.token_table import FIGURES, FIGURES_IMAGES


def _anchor(message: dict[str, Any]) -> str | None:
    """What finds the message a copy was made of: its text, or else its first tool call's id."""
    content = message.get("content")
    if type(content) is str:
        return content
    calls = message.get("tool_calls")
    if type(calls) is list and calls and type(calls[0]) is dict and type(calls[0].get("id")) is str:
        return "\0call:" + calls[0]["id"]  # no text of a message starts so
    return None


def _same(a: Any, b: Any) -> bool:
    """``a == b`` where their reprs are equal too: the same types at every level (``1 == 1.0``,
    ``True == 1`` and ``0.0 == -0.0`` are not the same here); False for what is not JSON."""
    if a is b:
        return True
    t = type(a)
    if t is not type(b):
        return False
    if t is dict:
        return len(a) == len(b) and all(type(k) is str and k in b and _same(v, b[k]) for k, v in a.items())
    if t is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if t is float:
        return repr(a) == repr(b)
    return t in _EXACT and a == b


_EXACT = frozenset({str, int, bool, type(None)})


class AssembledHistory:
    """The request forms of one history list, with running token sums."""

    __slots__ = ("history", "n", "shaped", "wire", "keys", "tiks", "roles", "chars", "images", "tik", "raw_chars",
                 "raw_images", "open_calls", "open_results", "bad_roles")

    def __init__(self, history: list[dict[str, Any]]) -> None:
        self.history = history
        self.n = 0
        self.shaped: list[dict] = []
        self.wire: list[dict] = []
        self.keys: list[str] = []
        self.tiks: list[int] = []
        self.roles: list[str] = []  # for the cache simulator's reasons, kept so a request costs no lookups
        self.chars = self.images = self.tik = self.raw_chars = self.raw_images = 0
        # Tool calls without a result and results without a call so far, and refused roles: while
        # all are empty Hermes' request sanitiser has nothing to do, which a request checks in O(1).
        self.open_calls: set[str] = set()
        self.open_results: set[str] = set()
        self.bad_roles = 0

    @property
    def clean(self) -> bool:
        return not (self.open_calls or self.open_results or self.bad_roles)

    def add(self, shaped: dict, wire: dict, key: str, tokens: tuple[Any, int, int, int], raw_chars: int,
            raw_images: int) -> None:
        """Append a message; ``tokens``: its row of the store's token table (inspector.trace.token_table.figures)."""
        self.shaped.append(shaped)
        self.wire.append(wire)
        self.keys.append(key)
        role = wire.get("role", "?")
        self.roles.append(role)
        if role == "tool":
            cid = wire.get("tool_call_id")
            if cid:
                if cid in self.open_calls:
                    self.open_calls.discard(cid)
                else:
                    self.open_results.add(cid)
        elif role == "assistant":
            for call in wire.get("tool_calls") or ():
                cid = call_id(call)
                if cid:
                    if cid in self.open_results:
                        self.open_results.discard(cid)
                    else:
                        self.open_calls.add(cid)
        elif role not in VALID_ROLES:
            self.bad_roles += 1
        tik = tokens[1]
        self.tiks.append(tik)
        self.chars += tokens[2]
        if len(tokens) > 3:
            self.images += tokens[3]
        self.tik += tik
        self.raw_chars += raw_chars
        self.raw_images += raw_images


class RequestAssembly:
    """The session's history and the requests built from it, with their token figures."""

    def __init__(self, recorder: HookRecorder, *, counter: Any, usage_model: Any, pre_api_tokens: str,
                 system_prompt: str | None, tools: list[dict[str, Any]]) -> None:
        self.rec = recorder
        self.engine = recorder.engine
        self.store = recorder.store
        self.counter = counter
        # Usage as the provider counted it (inspector/host/calibration.py): its unrecorded head
        # joins every request's rough figure.
        self.usage_model = usage_model
        self.pre_api_tokens = pre_api_tokens  # the profile's pre-API gate figure (GateRules.pre_api_tokens)
        self.history: list[dict[str, Any]] = []
        self.system_message = {"role": "system", "content": system_prompt} if system_prompt else None
        self.tools = tools
        self.tools_key = ""
        self.tools_tokens = 0
        self.tools_rough = 0
        # id(message) -> (message, shaped, wire, key, raw rough chars, raw images)
        self._form_cache: dict[int, tuple[dict, dict, dict, str, int, int]] = {}
        # id(message) -> (message, rough chars, images) for history rows not yet assembled
        self._rough_cache: dict[int, tuple[dict, int, int]] = {}
        self._prepared: set[int] = set()  # ids of the last prepared batch, kept until they join the history
        # id(copy) -> (copy, original) for the top-level messages of the last compress snapshot
        self.snapshot_of: dict[int, tuple[dict, dict]] = {}
        # _anchor(message) -> id(message) for cached messages: finds the message a copy was made
        # of (see _copy_of)
        self._by_anchor: dict[str, int] = {}
        self._asm: AssembledHistory | None = None
        self._system_forms: tuple[dict, dict, str] | None = None
        self._last_sanitised: dict[str, int] | None = None
        self._repair_list: list[dict[str, Any]] | None = None  # the history the last sequence check saw
        self._repair_checked = 0
        self.anchor: tuple[int, int] | None = None  # (real prompt tokens, history length then)
        self.figure = "rough"  # the source of the last pre-API pressure figure ("rough" or "anchored")

    @property
    def system_text(self) -> str:
        return self.system_message["content"] if self.system_message else ""

    # -- per-message forms, cached per history object ------------------------------------
    def forms(self, message: dict[str, Any]) -> tuple[dict, dict, str, int, int]:
        """(shaped, wire, key, raw rough chars, raw images) of a history message, computed once.

        The raw figures are Hermes' rough estimate of the message as it sits in the history
        (``str(message)``); when shaping and sanitising changed nothing they equal the wire
        form's, so the repr is taken once.
        """
        entry = self._form_cache.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1], entry[2], entry[3], entry[4], entry[5]
        copied = self.snapshot_of.get(id(message))
        if copied is not None and copied[0] is message:
            # A message of a compress result that is still an unchanged copy of a history
            # message: its forms are the original's (equal dicts give equal forms).
            original = self._form_cache.get(id(copied[1]))
            if original is not None and original[0] is copied[1] and message == copied[1]:
                entry = (message, *original[1:])
                self._form_cache[id(message)] = entry
                return entry[1], entry[2], entry[3], entry[4], entry[5]
        original = self._copy_of(message)
        if original is not None:
            entry = self._form_cache[id(message)] = (message, *original[1:])
            self._by_anchor[_anchor(message)] = id(message)  # the copy outlives its original
            return entry[1], entry[2], entry[3], entry[4], entry[5]
        shaped = shape_message(message)
        wire = sanitize_message(shaped)
        key, chars = self.store.put_measured(wire)
        return self._finish_forms(message, shaped, wire, key, chars)

    def _finish_forms(self, message: dict[str, Any], shaped: dict, wire: dict, key: str,
                      chars: int | None) -> tuple[dict, dict, str, int, int]:
        row = self.count(key, wire, chars)
        rough_chars, images = row[2], (row[3] if len(row) > 3 else 0)
        raw_chars, raw_images = rough_chars_from(wire, rough_chars, message), 0
        if raw_chars is None:
            if len(wire) == len(message) and all(a is b and wire[a] is message[b] for a, b in zip(wire, message)):
                raw_chars, raw_images = rough_chars, images
            else:
                raw_chars, raw_images = self.raw_rough(message)
        self._form_cache[id(message)] = (message, shaped, wire, key, raw_chars, raw_images)
        anchor = _anchor(message)
        if anchor is not None:
            self._by_anchor[anchor] = id(message)
        return shaped, wire, key, raw_chars, raw_images

    def _copy_of(self, message: dict[str, Any]) -> tuple[dict, dict, dict, str, int, int] | None:
        """The cached forms of the message ``message`` is a copy of (:func:`_same`: equal is not
        enough, ``1 == 1.0`` and their reprs differ).

        An engine's compress result copies the messages it keeps, and may make their texts again
        (the compressor's placeholders for old tool outputs): its 324 compactions of a 150 MB
        session handed back 71,194 messages the host would otherwise shape, hash and measure again.
        """
        anchor = _anchor(message)
        if anchor is None:
            return None
        entry = self._form_cache.get(self._by_anchor.get(anchor, -1))
        if entry is None:
            return None
        return entry if _same(entry[0], message) else None

    def prepare(self, messages: list[dict[str, Any]], measured: dict[int, tuple[str, int | None]] | None = None) -> None:
        """Compute the per-message forms of messages about to join the history, in one batch.

        Only ever a speed-up: the same objects must be what is later appended, and the forms
        are exactly what :meth:`forms` would compute on demand. The batch's keys are looked up
        in the persistent token cache at once (``TokenCounter.recall``) before any is counted.
        ``measured``: id(message) -> (key, repr length) of its sent form, made already (the
        calibration's, :meth:`inspector.host.responders.WireMessages.sent_form`); taken out.
        """
        cache = self._form_cache
        self._prepared = {id(m) for m in messages}
        known = measured if measured is not None else {}
        todo = []
        for message in messages:
            entry = cache.get(id(message))
            if entry is None or entry[0] is not message:
                shaped = shape_message(message)
                wire = sanitize_message(shaped)
                made = known.pop(id(message), None)
                todo.append((message, shaped, wire, *(self.store.put_measured(wire) if made is None
                                                      else self.store.put_keyed(wire, made))))
        recall = getattr(self.counter, "recall", None)
        if callable(recall):
            tokens = self.store.tokens.rows
            recall([t[3] for t in todo if t[3] not in tokens])
        for message, shaped, wire, key, chars in todo:
            entry = cache.get(id(message))
            if entry is None or entry[0] is not message:  # the same message twice in the batch
                self._finish_forms(message, shaped, wire, key, chars)

    def raw_rough(self, message: dict[str, Any]) -> tuple[int, int]:
        """``message_rough_chars`` of a history message, computed once per message object."""
        entry = self._form_cache.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[4], entry[5]
        cached = self._rough_cache.get(id(message))
        if cached is not None and cached[0] is message:
            return cached[1], cached[2]
        chars, images = message_rough_chars(message)
        self._rough_cache[id(message)] = (message, chars, images)
        return chars, images

    def rough_tail(self, start: int) -> int:
        """``estimate_messages_tokens_rough(self.history[start:])`` from per-message figures."""
        chars = images = 0
        for msg in self.history[start:]:
            c, i = self.raw_rough(msg)
            chars += c
            images += i
        return rough_from_chars(chars, images)

    def count(self, key: str, wire: dict[str, Any], chars: int | None = None) -> tuple[Any, ...]:
        """Token figures of a wire message, its row of the store's table ``(shape, tiktoken,
        rough_chars[, images])`` (:func:`inspector.trace.token_table.figures`); ``chars`` is its
        repr length when hashing measured it."""
        rows = self.store.tokens.rows
        figures = rows.get(key)
        if figures is None:
            if chars is not None and is_plain(wire):
                images = 0  # nothing for Hermes' estimator to strip: the repr is what it measures
            else:
                chars, images = message_rough_chars(wire)
            tik = self.counter.count_message(wire, key=key)
            # inspector.trace.token_table.figures, inline: a row per distinct message
            figures = rows[key] = (FIGURES, tik, chars) if images == 0 and type(images) is int else (
                FIGURES_IMAGES, tik, chars, images)
        return figures

    def system(self) -> tuple[dict, dict, str] | None:
        if self.system_message is None:
            return None
        if self._system_forms is None:
            shaped = dict(self.system_message)
            wire = sanitize_message(shaped)
            key = self.store.put(wire)
            self.count(key, wire)
            self._system_forms = (shaped, wire, key)
        return self._system_forms

    def refresh_tools(self) -> None:
        """The tool schemas' stored key and token figures, after the engine's were added."""
        self.rec.trace.tool_schemas = list(self.tools)
        self.tools_key = self.store.put({"role": "tools", "tools": self.tools}) if self.tools else ""
        self.tools_tokens = self.counter.count_tools(self.tools) if self.tools else 0
        self.tools_rough = estimate_tools_tokens_rough(self.tools)

    # -- what the cached forms no longer describe ------------------------------------------
    def invalidate(self) -> None:
        """The history list was edited in place: assemble it afresh at the next request."""
        self._asm = None

    def forget_all(self) -> None:
        """A hook edited messages of the live history: no cached form can be trusted."""
        self._form_cache.clear()
        self._rough_cache.clear()
        self._asm = None

    def forget_edited(self, objects: list[dict[str, Any]], copies: list[Any]) -> None:
        """Drop the cached forms of history messages compress edited in place (it had the live list)."""
        if len(objects) != len(self.history) or any(a is not b for a, b in zip(objects, self.history)):
            self._asm = None
        for obj, copied in zip(objects, copies):
            if obj != copied:
                self._form_cache.pop(id(obj), None)
                self._rough_cache.pop(id(obj), None)
                self._asm = None

    # -- references the trace records ------------------------------------------------------
    def inputs_list(self, inputs: list[dict[str, Any]]) -> int | None:
        """The turn's inputs as a list id of the wire-form keys they will have in requests (already computed)."""
        if not inputs:
            return None
        return self.store.put_list([self.forms(m)[2] for m in inputs])

    def history_ref(self) -> dict[str, int]:
        """The current history as a list id of wire-form keys (shared with requests, so diffs align)."""
        asm = self.assembled()
        keys = asm.keys[1:] if self.system_message is not None else asm.keys
        return {"$list": self.store.put_list(keys)}

    # -- the request -------------------------------------------------------------------------
    def assembled(self) -> AssembledHistory:
        """Per-message forms and running sums for the current history, extended on append.

        The history only grows by appending between compactions, so each request costs the new
        messages, not the whole context; a replaced list (compress, prune) starts over.
        """
        asm = self._asm
        history = self.history
        rebuilt = asm is None or asm.history is not history or asm.n > len(history)
        if rebuilt:
            asm = AssembledHistory(history)
            system = self.system()
            if system is not None:
                asm.add(system[0], system[1], system[2], self.store.tokens.rows[system[2]], 0, 0)
            asm.n = 0
            self._asm = asm
        tokens = self.store.tokens.rows
        for msg in history[asm.n:]:
            shaped, wire, key, raw_chars, raw_images = self.forms(msg)
            asm.add(shaped, wire, key, tokens[key], raw_chars, raw_images)
        asm.n = len(history)
        if rebuilt:
            self._keep_forms_of(history)
        return asm

    def _keep_forms_of(self, history: list[dict[str, Any]]) -> None:
        """Drop the cached forms of messages that left the history (a compaction replaced it).

        Each entry holds its message, so without this every message of a long session stays
        alive with two copies of it long after the engine dropped it; the wire form the trace
        records lives on in the store. The batch :meth:`prepare` computed ahead is kept.
        """
        live = {id(m) for m in history} | self._prepared
        self._form_cache = {k: v for k, v in self._form_cache.items() if k in live}
        self._by_anchor = {k: v for k, v in self._by_anchor.items() if v in live}
        self._rough_cache = {k: v for k, v in self._rough_cache.items() if k in live}

    def history_rough(self) -> int:
        """estimate_messages_tokens_rough(history) from the cached per-message figures."""
        asm = self.assembled()
        return rough_from_chars(asm.raw_chars, asm.raw_images)

    def request_rough(self, history_rough: int | None = None) -> int:
        """estimate_request_tokens_rough(history, system_prompt, tools) from cached parts."""
        if history_rough is None:
            history_rough = self.history_rough()
        return (len(self.system_text or "") + 3) // 4 + history_rough + self.tools_rough

    def repair_history(self) -> None:
        """Hermes' role-sequence repair of the live history before a request (:mod:`inspector.host.repair`).

        Checked from where the last check ended (backed up to an assistant message, where the
        pass's bookkeeping restarts), so a growing history costs its new messages only.
        """
        history = self.history
        checked = self._repair_checked if self._repair_list is history else 0
        if checked > len(history):
            checked = 0
        if checked == len(history):
            return
        start = max(0, checked - 1)
        while start > 0 and not (isinstance(history[start], dict) and history[start].get("role") == "assistant"):
            start -= 1
        if needs_repair(history, start):
            repaired, count = repair_sequence(history)
            if count:
                dropped = len(history) - len(repaired)
                history[:] = repaired
                self._asm = None
                self.rec.note(f"Hermes repaired the history's role sequence before this request ({count} repair(s), "
                              f"{dropped} message(s) fewer): merged consecutive user or assistant messages, dropped "
                              "tool results without their call", site="repair")
        self._repair_list, self._repair_checked = history, len(history)

    def select(self, asm: AssembledHistory, keys: tuple[str, ...],
               user: dict[str, Any] | None) -> tuple[list[dict], tuple[str, ...], bool]:
        """``select_context`` with Hermes' skip check and validation table (docs/host-contract.md §3)."""
        wire = asm.wire
        if not self.rec.wants("select_context"):
            return wire, keys, False
        shaped = asm.shaped
        request_arg = [clone(m) for m in shaped]  # Hermes hands the hook structural clones
        snapshot = list(request_arg)
        incoming = clone(user) if isinstance(user, dict) else user
        conv = [clone(m) for m in self.history]
        ev, out = self.rec.hook(
            "select_context", request_arg,
            record_args={"request_messages": {"$list": self.store.put_list(keys)},
                         "budget_tokens": as_int(getattr(self.engine, "context_length", 0))},
            conversation_messages=conv, incoming_message=incoming,
            budget_tokens=as_int(getattr(self.engine, "context_length", 0)) or 0,
        )
        # Scalars are shared with the cached forms, so this deep comparison is cheap.
        mutated = len(request_arg) != len(snapshot) or any(
            a is not b or a != c for a, b, c in zip(request_arg, snapshot, shaped))
        if not out.ok:
            ev.result = None
            ev.note = "select_context failed; using unmodified request messages (as Hermes does)"
            return wire, keys, False
        result = out.value
        problem = validate_selection(result)
        if problem:
            ev.fault = Fault("invalid_return", problem + "; Hermes uses the unmodified request")
            ev.result = jsonable(type(result).__name__)
            return wire, keys, False
        if result is None:
            if not mutated:
                ev.result = None
                return wire, keys, False
            ev.fault = Fault("mutated_input", "select_context returned None but mutated request_messages in place; "
                             "Hermes would send the mutated list")
            result = request_arg
        elif result is request_arg and mutated:
            ev.note = "engine edited request_messages in place and returned it"
        # A message the engine passed through unchanged keeps the forms it already has (no new
        # hash or sanitising); anything it built or edited is sanitised and stored.
        origin = {id(c): i for i, c in enumerate(snapshot)}
        known: dict[int, str] = {}
        wires = []
        for m in result:
            i = origin.get(id(m))
            if i is not None and m == shaped[i]:
                wire_form = asm.wire[i]
                known[id(wire_form)] = keys[i]
            else:
                wire_form = sanitize_message(m)
            wires.append(wire_form)
        selected, done = sanitize_request(wires)
        new_keys = tuple(known.get(id(m)) or self.store.put(m) for m in selected)
        for k, m in zip(new_keys, selected):
            if id(m) not in known:
                self.count(k, m)
        ev.result = {"$list": self.store.put_list(new_keys)}
        if any(done.values()):
            ev.note = describe_sanitised(done)
        if new_keys == keys:
            return wire, keys, False
        return selected, new_keys, True

    def sanitised(self, asm: AssembledHistory, keys: tuple[str, ...]) -> tuple[list[dict], tuple[str, ...]]:
        """The assembled request after Hermes' sanitiser, for a history with unpaired tool calls or
        results or refused roles (a compress result, a damaged transcript)."""
        selected, done = sanitize_request(asm.wire)
        if selected is asm.wire:
            return selected, keys
        key_of = {id(w): k for w, k in zip(asm.wire, keys)}
        sel_keys = []
        for m in selected:
            k = key_of.get(id(m))
            if k is None:  # a stub result
                k = self.store.put(m)
                self.count(k, m)
            sel_keys.append(k)
        if done != self._last_sanitised:  # said when it changes, not at every request
            self._last_sanitised = done
            self.rec.note(describe_sanitised(done))
        return selected, tuple(sel_keys)

    # -- token figures -----------------------------------------------------------------------
    def set_anchor(self, prompt_tokens: int) -> None:
        """A real prompt size arrived: the anchor is it, at the history's length before the reply."""
        if prompt_tokens > 0:
            self.anchor = (prompt_tokens, len(self.history) - 1)

    def pressure(self, asm: AssembledHistory, keys: tuple[str, ...], differs: bool) -> tuple[int, int]:
        """(rough pressure for the pre-API gate, tokenizer count) of the request being sent."""
        if differs:
            chars = images = tik = 0
            tokens = self.store.tokens.rows
            for k in keys:
                row = tokens[k]
                tik += row[1]
                chars += row[2]
                if len(row) > 3:
                    images += row[3]
        else:
            chars, images, tik = asm.chars, asm.images, asm.tik
        rough = rough_from_chars(chars, images) + self.tools_rough + self.usage_model.hidden_tokens
        self.figure = "rough"  # what the pre-API gate's figure is, recorded with the gate (issue 21)
        if self.anchor is not None and self.pre_api_tokens == "usage_anchor":
            real, length = self.anchor
            if length <= len(self.history):
                # [M] usage anchor: the last real prompt plus what was appended since.
                rough = real + self.rough_tail(length)
                self.figure = "anchored"
        return rough, tik + self.tools_tokens + 3
