"""Probes beyond string matching: an engine's retrieval tools, and questions for a real model.

**Retrieval tools** (``--probe-tools``). A lossless engine keeps what it compacts out of the
context and gives it back through its own tools (``lcm_grep``); string matching against the next
request counts those facts as lost. An engine declares which of its tools are read-only searches
with an attribute ``retrieval_tools = {"tool name": "argument that takes the text"}``. At the end
of the run, while the engine is still live and inside its sandbox (``inspector/host/replay.py``
calls :func:`probe_retrieval_tools` there, and only when ``inspector.probe_tools`` is set), each
fact lost at the end is looked up with each declared tool through the engine's own
``handle_tool_call``; a fact the answer contains becomes *recoverable*. These calls are a dry run:
they are not events of the trace, and the host has finished playing the session.

**Graded probes** (``--probe-questions N``). With an endpoint configured for
``auxiliary.compression`` (the model the inspector already uses for summaries), N questions made
from the end point's facts are asked against the last request (what the model would see next):
the fact's sentence with the fact blanked out. An answer is right when it contains the fact
(normalised). Answers are cached on disk with the summaries (``compressor_summary.cache_dir``), so
asking again costs nothing; offline the probes are skipped with a note.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from inspector.quality.analysis import Analysis, analyse, store
from inspector.quality.facts import Fact, _decoded, normalise, searchable_text
from inspector.quality.retention import LOST, RECOVERABLE
from inspector.trace.model import Trace

RETRIEVAL_ATTRIBUTE = "retrieval_tools"
MAX_TOOL_PROBES = 2000  # facts looked up per run (each is one handle_tool_call per declared tool)
BLANK = "_____"
CONTEXT_CHARS = 160  # of the fact's own message shown around the blank
PROBE_TASK = "compression"  # the auxiliary endpoint the questions go to
QUESTION_MAX_TOKENS = 120


def declared_retrieval_tools(engine: Any) -> dict[str, str]:
    """``{tool: argument}`` the engine declares as read-only searches (nothing when undeclared or malformed)."""
    try:
        value = getattr(engine, RETRIEVAL_ATTRIBUTE, None)
    except Exception:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def _final_history(trace: Trace) -> list[dict[str, Any]]:
    """The conversation as the last request held it (copies: a tool may not change the trace)."""
    if not trace.requests:
        return []
    msgs = trace.store.materialise(trace.requests[-1].assembled)
    if msgs and msgs[0].get("role") == "system":
        msgs = msgs[1:]
    return json.loads(json.dumps(msgs, default=str))


def _contains(answer: str, fact: Fact) -> bool:
    return fact.text in answer or fact.norm in normalise(_decoded(answer))


_ECHO_KEYS = frozenset({"query", "pattern", "q", "search", "term"})


def _without_echo(result: str, argument: str, query: str) -> str:
    """A tool's answer without its echo of the query (``{"query": ...}``): only what it found counts.

    In a JSON answer, the strings under the argument's own name (or ``query``, ``pattern`` ...)
    are the echo; in plain text, the first occurrence of the query is.
    """
    try:
        value = json.loads(result)
    except ValueError:
        return result.replace(query, "", 1)
    parts: list[str] = []
    _found_strings(value, {argument, *_ECHO_KEYS}, parts)
    return "\n".join(parts)


def _found_strings(value: Any, echo_keys: set[str], out: list[str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if k in echo_keys and isinstance(v, str):
                continue
            _found_strings(v, echo_keys, out)
    elif isinstance(value, list):
        for v in value:
            _found_strings(v, echo_keys, out)
    elif isinstance(value, str):
        out.append(value)


def probe_retrieval_tools(trace: Trace, engine: Any, *, timeout: float | None = None,
                          call: Callable[..., Any] | None = None) -> dict[str, Any]:
    """Mark the end point's lost facts the engine's retrieval tools return as recoverable.

    ``call(fn, *args, **kwargs)`` runs one tool call and returns ``(ok, value)``; by default it is
    the host's guard (:func:`inspector.host.guard.call_inline`), so a tool that raises or hangs
    costs one probe, never the run. Returns (and stores in the analysis) what was done.
    """
    analysis = analyse(trace)
    tools = declared_retrieval_tools(engine)
    schemas = {((s.get("function") or s).get("name")) for s in trace.tool_schemas if isinstance(s, dict)}
    usable = {t: a for t, a in tools.items() if t in schemas}
    report: dict[str, Any] = {"declared": sorted(tools), "used": sorted(usable), "calls": 0, "recoverable": 0,
                              "failed": 0}
    if not usable:
        report["note"] = ("the engine declares no retrieval tools it offers" if not tools else
                          "none of the declared retrieval tools is among the tools the engine offered")
        analysis.probes["tools"] = report
        store(trace, analysis)
        return report
    call = call or _guarded(timeout)
    history = _final_history(trace)
    lost = [f for f in analysis.retention.end.facts if f.status == LOST][:MAX_TOOL_PROBES]
    for status in lost:
        for tool, argument in usable.items():
            if _recovered(call, engine, tool, argument, status.fact, history, report):
                status.status, status.via = RECOVERABLE, tool
                report["recoverable"] += 1
                break
    analysis.facts_changed()
    if len(lost) < sum(1 for f in analysis.retention.end.facts if f.status == LOST):
        report["note"] = f"only the first {MAX_TOOL_PROBES:,} lost facts were looked up"
    analysis.probes["tools"] = report
    store(trace, analysis)
    return report


def _queries(fact: Fact) -> list[str]:
    """What to search for: the fact, then without a short lead word.

    Facts are stored with their spacing collapsed; a tool searches the original text, where
    pytest's ``E   AssertionError`` or ``>   assert`` has several spaces after that word.
    """
    out = [fact.text]
    head, _, rest = fact.text.partition(" ")
    if len(head) <= 2 and len(rest) >= 8:
        out.append(rest)
    return out


def _recovered(call: Callable[..., Any], engine: Any, tool: str, argument: str, fact: Fact,
               history: list[dict[str, Any]], report: dict[str, Any]) -> bool:
    """Whether one of the tool's answers (its echo of the query left out) contains the fact."""
    for query in _queries(fact):
        report["calls"] += 1
        ok, value = call(engine.handle_tool_call, tool, {argument: query}, messages=history)
        if not ok or not isinstance(value, str):
            report["failed"] += 1
            continue
        if _contains(_without_echo(value, argument, query), fact):
            return True
    return False


def _guarded(timeout: float | None) -> Callable[..., tuple[bool, Any]]:
    from inspector.host.guard import call_inline

    def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[bool, Any]:
        outcome = call_inline(fn, *args, timeout=timeout, **kwargs)
        return outcome.fault is None, outcome.value

    return call


# -- graded questions --------------------------------------------------------------------------


def question_for(fact: Fact, origin_text: str, where: str = "") -> str:
    """The fact's own sentence with the fact blanked: the model must supply it from its context.

    ``where`` (who said it, in which turn) tells apart facts whose message is the fact alone.
    """
    text = " ".join(origin_text.split())
    at = text.find(" ".join(fact.text.split()))
    if at < 0:
        snippet = f"(a {fact.kind} from earlier in this conversation)"
    else:
        start = max(0, at - CONTEXT_CHARS)
        end = min(len(text), at + len(fact.text) + CONTEXT_CHARS)
        snippet = ("…" if start else "") + text[start:at] + BLANK + text[at + len(" ".join(fact.text.split())):end] \
            + ("…" if end < len(text) else "")
    return (f"Earlier in this conversation{where} this was said (a {fact.kind} is blanked out as {BLANK}):\n\n"
            f"{snippet}\n\nWhat exactly goes in the blank? Answer with that text only, or UNKNOWN if the "
            "conversation you have does not say.")


def pick_facts(analysis: Analysis, n: int) -> list[Fact]:
    """``n`` facts of the end point, spread evenly over it (the same ones every time)."""
    facts = [f.fact for f in analysis.retention.end.facts]
    if n <= 0 or not facts:
        return []
    if n >= len(facts):
        return facts
    step = len(facts) / n
    return [facts[int(i * step)] for i in range(n)]


def grade_questions(trace: Trace, config: dict[str, Any], n: int, *,
                    ask: Callable[[Any, list[dict[str, Any]]], str] | None = None) -> dict[str, Any]:
    """Ask ``n`` questions against the last request with the configured model; grade and cache them."""
    from inspector.engines.compressor_summary import cache_get, cache_key, cache_put
    from inspector.llm.aux import resolve_endpoint
    from inspector.llm.secrets import scrub_text

    analysis = analyse(trace)
    report: dict[str, Any] = {"asked": 0, "correct": 0, "cached": 0, "questions": []}
    try:
        endpoint = resolve_endpoint(PROBE_TASK, config)
    except RuntimeError as exc:
        endpoint, report["note"] = None, f"graded probes skipped: {exc}"
    if endpoint is None or not trace.requests:
        report.setdefault("note", "graded probes skipped: offline (no auxiliary.compression endpoint configured)"
                          if trace.requests else "graded probes skipped: no request to ask against")
        analysis.probes["graded"] = report
        store(trace, analysis)
        return report
    report["model"] = endpoint.model
    context = json.loads(json.dumps(trace.request_messages(trace.requests[-1]), default=str))
    ask = ask or _asker(endpoint)
    identity = f"retention-probe:{scrub_text(endpoint.base_url)}:{endpoint.model}"
    for fact in pick_facts(analysis, n):
        origin = analysis.lifetimes.messages[fact.origin] if fact.origin < len(analysis.lifetimes.messages) else None
        text = searchable_text(trace.store.messages.get(origin.key) or {}) if origin else ""
        turn = trace.requests[origin.sent[0]].turn if origin and origin.sent else None
        where = f" ({origin.role}, turn {turn})" if origin and turn is not None else ""
        question = question_for(fact, text, where)
        messages = [*context, {"role": "user", "content": question}]
        key = cache_key(identity, json.dumps(messages, ensure_ascii=False, sort_keys=True, default=str))
        answer = cache_get(key)
        if answer is not None:
            report["cached"] += 1
        else:
            try:
                answer = ask(endpoint, messages)
            except Exception as exc:  # one failed question is recorded, the rest still asked
                report["questions"].append({"fact": fact.text, "kind": fact.kind, "message": fact.origin,
                                            "error": scrub_text(str(exc))[:300]})
                continue
            if answer.strip():
                cache_put(key, answer, model=identity)
        right = _contains(answer, fact) and not re.fullmatch(r"\W*unknown\W*", answer.strip(), re.I)
        report["asked"] += 1
        report["correct"] += int(right)
        report["questions"].append({"fact": fact.text, "kind": fact.kind, "message": fact.origin,
                                    "answer": answer[:500], "correct": right})
    analysis.probes["graded"] = report
    store(trace, analysis)
    return report


def _asker(endpoint: Any) -> Callable[[Any, list[dict[str, Any]]], str]:
    from inspector.llm.client import make_client

    def ask(ep: Any, messages: list[dict[str, Any]]) -> str:
        client = make_client(ep.base_url, ep.api_key, timeout=ep.timeout)
        response = client.chat.completions.create(model=ep.model, messages=messages, max_tokens=QUESTION_MAX_TOKENS,
                                                  temperature=0, **({"extra_body": ep.extra_body} if ep.extra_body else {}))
        choice = response.choices[0] if response.choices else None
        return str(getattr(getattr(choice, "message", None), "content", "") or "")

    return ask
