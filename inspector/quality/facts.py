"""Facts a conversation states, each with the message it came from: offline and deterministic.

A *fact* is a short piece of text the model may need again after a compaction: a file path, an
identifier, a number with its unit, an error message, a command it ran, a URL, a decision or
constraint the user stated, or a key line of a tool result (a test summary, an exit status).
Retention (:mod:`inspector.quality.retention`) asks whether a later request still contains it.

Why these rules: a compaction summary is judged by what the agent can still act on, and the
things an agent acts on are exactly these strings: Hermes' own summary prompt asks the model to be
concrete with "file paths, command outputs, error messages, line numbers, and specific values"
(``agent/context_compressor.py:2318`` of hermes-agent 0.19.0; decisions at :2356). Whole tool
outputs (a file read back) are not facts; only their key lines are, or every compaction would be
judged on source code the agent can read again.

Extraction is pure regular expressions over the message text (JSON tool outputs and tool-call
arguments decoded first), so the same transcript always gives the same facts in the same order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from inspector.sessions.model import message_text

# Fact kinds, in the order they are reported.
PATH = "path"
IDENTIFIER = "identifier"
NUMBER = "number"
ERROR = "error"
COMMAND = "command"
URL = "url"
DECISION = "decision"
RESULT = "result"
KINDS = (DECISION, COMMAND, ERROR, RESULT, PATH, URL, IDENTIFIER, NUMBER)

MAX_FACT_CHARS = 200  # a longer sentence or line is cut here (facts are looked up by substring)
MIN_FACT_CHARS = 3

_URL = re.compile(r"\bhttps?://[^\s<>\"'`)\]}]+")
_EXT = (r"(?:py|pyi|js|jsx|ts|tsx|md|rst|json|jsonl|ya?ml|toml|txt|cfg|ini|sh|rs|go|c|h|cc|cpp|hpp|java|kt|rb|php|"
        r"html|css|scss|sql|lock|csv|tsv|db|log|xml|proto|env|gz|zip|tar|conf)")
# Paths: a name with a known extension (found from the extension back, which is cheap on a
# megabyte of tool output), or an explicit ``/``, ``./``, ``~/`` path with two parts or more.
_EXT_AT = re.compile(r"\.(?:" + _EXT[3:] + r"\b")
_PATH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./@+~-")
_ROOTED_PATH = re.compile(r"(?<![\w.:/])(?:~|\.{1,2})?/[\w.@+-]+(?:/[\w.@+-]+)+")
_BACKTICK = re.compile(r"`([^`\n]{2,80})`")
_SNAKE = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b")
_CAMEL = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b")
_CALL = re.compile(r"\b[A-Za-z_][\w.]*\(\)")
_UNITS = (r"(?:ms|µs|us|ns|s|sec|secs|seconds?|minutes?|mins?|hours?|hrs?|h|days?|weeks?|KiB|MiB|GiB|KB|MB|GB|TB|kB|"
          r"bytes?|B|%|percent|tokens?|px|rps|req/s|qps|x|USD|EUR|GBP|rows?|lines?|files?|tests?|items?|"
          r"requests?|users?|times|shares?|records?|transactions?|cores?|threads?|workers?|retries|attempts?)")
_NUMBER_UNIT = re.compile(r"(?<![\w.$€£])(?:[$€£]\s?\d[\d,]*(?:\.\d+)?|\d[\d,]*(?:\.\d+)?\s?" + _UNITS + r")(?![\w])")
_ERROR_LINE = re.compile(r"(?:\b[A-Z]\w*(?:Error|Exception|Warning)\b|\bTraceback\b|\bFAILED\b|\berror:|\bfatal:|"
                         r"\bpanic:|\bSegmentation fault\b|\bNo such file\b|\bPermission denied\b|\bnot found\b)")
# In a tool's output only a line that *starts* like an error is one (a file read back mentions
# ``ParseError`` on every ``raise``); numbered source listings (``  12|code``) are never key lines.
# Either it starts like one, or it names one of these anywhere (searched only in an output that
# holds one: scanning every line of a megabyte read back for them was most of the extraction's time).
_TOOL_ERROR_START = re.compile(r"\s*(?:E\s+)?(?:[\w.]*(?:Error|Exception)\b:?|Traceback\b|FAILED\b|ERROR\b|"
                               r"error[:\[]|fatal:|panic:)")
_TOOL_ERROR_PHRASES = ("No such file or directory", "Permission denied", "command not found")
_TOOL_ERROR_PHRASE = re.compile(r"\b(?:" + "|".join(_TOOL_ERROR_PHRASES) + r")\b")
# Every line a tool output's key-line rule keeps (below) holds a match of one of these: they say
# more loosely what _TOOL_ERROR_START, _TOOL_ERROR_PHRASE and _RESULT_LINE say (a superset, checked
# line by line after), and none spans a line break. RE2 finds the lines holding one in a single
# linear pass over the output (a DFA; Python's engine needs a pass per alternative): on a 150 MB
# session's 126 MB of tool outputs 0.4 s instead of 7.6 s. \p{Nd} is what Python's \d matches in text.
_KEY_LINE_SCAN = "|".join((
    "Error", "Exception", "Traceback", "FAILED", "ERROR", "error:", r"error\[", "fatal:", "panic:",
    *_TOOL_ERROR_PHRASES,
    *(rf"\p{{Nd}} {w}" for w in ("passed", "failed", "error", "skipped", "warning", "deselected", "xfailed",
                                  "file", "insertion", "deletion")),
    "exit code", "exit status", r"returned? \p{Nd}", "Total", "total", "OK", "PASS", "FAIL",
    "Build succeeded", "Build failed", "build succeeded", "build failed"))
try:
    import re2

    _KEY_LINES = re2.compile(rf"(?m)^[^\n]*(?:{_KEY_LINE_SCAN})[^\n]*")
except ImportError:  # the rule line by line (see tool_key_lines): slower, the same lines
    _KEY_LINES = None
# Line boundaries str.splitlines() knows besides \n.
_OTHER_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_LISTING_LINE = re.compile(r"^\s*\d+\s*[|:]|^\s*(?:def|class|import|from|raise|except|return|if|elif|for|while)\b")
MAX_TOOL_KEY_LINES = 10  # errors and result lines of one tool output (the rest is detail)
_RESULT_LINE = re.compile(r"\b(?:\d+ (?:passed|failed|errors?|skipped|warnings?|deselected|xfailed)|exit (?:code|status)"
                          r"|returned? \d+|[Tt]otal\b|OK\b|PASS(?:ED)?\b|FAIL(?:ED)?\b|[Bb]uild (?:succeeded|failed)|"
                          r"\d+ (?:files? changed|insertions?|deletions?))")
_DECISION_WORDS = re.compile(
    r"\b(?:must|mustn't|must not|never|always|don't|do not|should|shouldn't|should not|need to|needs to|have to|"
    r"has to|let's|we'll|we will|i want|i'd like|i prefer|prefer|decided?|decision|only|avoid|make sure|keep|"
    r"constraint|require[sd]?|requirement|no more than|at most|at least|instead of|rather than|use )\b", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_SHELL_PROMPT = re.compile(r"^\s*\$\s+(\S.*)$", re.M)
_SPACE = re.compile(r"\s+")
# a comma between a digit and three more: the comma first, so the scan jumps from comma to comma
_THOUSANDS = re.compile(r",(?<=\d,)(?=\d{3}\b)")
_UNQUOTE = {ord(c): None for c in "`\"“”‘’*"}
_EDGE = "`'\"“”‘’()[]{}<>,;:.!? \t\n"
_COMMAND_ARGS = ("command", "cmd", "script", "shell")
_NOT_IDENTIFIERS = frozenset({"e_g", "i_e"})


@dataclass(frozen=True, slots=True)
class Fact:
    """One fact: what it says (``text`` as found, ``norm`` for lookup) and where it came from."""

    kind: str
    text: str
    norm: str
    origin: int  # session message index (see :mod:`inspector.quality.lifetime`)

    def to_json(self) -> list[Any]:
        return [self.kind, self.text, self.origin]

    @classmethod
    def from_json(cls, data: Any) -> Fact:
        kind, text, origin = data
        return cls(str(kind), str(text), normalise(str(text)), int(origin))


def normalise(text: str) -> str:
    """The form facts are compared in: case folded, whitespace collapsed, quotes and edges stripped,
    thousands separators removed ("1,204 rows" matches "1204 rows")."""
    text = text.casefold().replace("\\n", " ")
    if "," in text:
        text = _THOUSANDS.sub("", text)
    # in C, not by pattern: a replay's analysis normalises every message it sent, and the three
    # regular expressions this once was were four fifths of it (150 MB session: 11.5 -> 2.3 s)
    return " ".join(text.translate(_UNQUOTE).split()).strip(_EDGE)


def _strings(value: Any, out: list[str]) -> None:
    """Every string inside a decoded JSON value, depth first."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)


def _decoded(text: str) -> str:
    """A JSON document's strings joined by newlines (tool outputs are often JSON); else the text."""
    stripped = text.lstrip()
    if stripped[:1] in ("{", "[") and len(stripped) < 5_000_000:
        try:
            value = json.loads(stripped)
        except ValueError:
            return text
        parts: list[str] = []
        _strings(value, parts)
        return "\n".join(parts)
    return text


def tool_calls_of(message: dict[str, Any]) -> list[tuple[str, dict[str, Any] | str]]:
    """(function name, decoded arguments) of each tool call a message makes."""
    calls = message.get("tool_calls")
    if isinstance(calls, str):  # some stores keep them as a JSON (or repr) string
        try:
            calls = json.loads(calls)
        except ValueError:
            return []
    out: list[tuple[str, dict[str, Any] | str]] = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        fn = call.get("function") if isinstance(call.get("function"), dict) else call
        args: Any = fn.get("arguments", "")
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError:
                pass
        out.append((str(fn.get("name") or ""), args if isinstance(args, dict | str) else str(args)))
    return out


def _arguments_text(message: dict[str, Any]) -> str:
    """The names and argument strings of a message's tool calls, one per line."""
    parts: list[str] = []
    for name, args in tool_calls_of(message):
        parts.append(name)
        if isinstance(args, dict):
            _strings(args, parts)
        else:
            parts.append(args)
    return "\n".join(p for p in parts if p)


def searchable_text(message: dict[str, Any]) -> str:
    """All the text of a message a fact can be found in: content (JSON decoded) and tool-call arguments.

    The same function reads the facts' origins and the requests they are looked up in, so a fact
    is found wherever the model could read it.
    """
    prose = _decoded(message_text(message))
    args = _arguments_text(message) if message.get("tool_calls") else ""
    return f"{prose}\n{args}" if prose and args else prose or args


def _clip(text: str) -> str:
    text = _SPACE.sub(" ", text).strip()
    return text[:MAX_FACT_CHARS].rstrip() if len(text) > MAX_FACT_CHARS else text


def _commands(message: dict[str, Any], text: str) -> Iterator[str]:
    for _name, args in tool_calls_of(message):
        if isinstance(args, dict):
            for key in _COMMAND_ARGS:
                value = args.get(key)
                if isinstance(value, str) and value.strip():
                    yield value
    for m in _SHELL_PROMPT.finditer(text):
        yield m.group(1)


def _paths(text: str) -> list[str]:
    """File paths in ``text``, in order of position."""
    found: list[tuple[int, str]] = []
    for m in _EXT_AT.finditer(text):
        start = m.start()
        while start > 0 and text[start - 1] in _PATH_CHARS:
            start -= 1
        path = text[start:m.end()].lstrip(".") if text[start:start + 2] not in ("./", "..") else text[start:m.end()]
        if path and not path.startswith("."):
            found.append((start, path))
        elif path.startswith(("./", "../")):
            found.append((start, path))
    for m in _ROOTED_PATH.finditer(text) if "/" in text else ():  # its scan is slow where it cannot match
        found.append((m.start(), m.group().rstrip(".,:;")))
    found.sort()
    return [p for _, p in found]


def _identifier_like(text: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z_][\w.:-]*(?:\(\))?", text)) and (
        "_" in text or "." in text or "(" in text or any(c.isupper() for c in text[1:]))


def _candidate_lines(prose: str) -> list[str] | None:
    """The lines of a tool output that may be key lines, in order: a superset of those
    :func:`tool_key_lines` keeps, found in one pass over the whole text instead of matching each
    of its lines in Python (megabytes of output read back: most of the extraction's time).

    None where the caller must go line by line: the output has line breaks other than ``\\n``
    (``splitlines`` splits on more), text RE2 cannot take (a lone surrogate has no UTF-8 form), or
    RE2 is not installed.
    """
    if _KEY_LINES is None or _OTHER_BREAKS.search(prose):
        return None
    try:
        return _KEY_LINES.findall(prose)
    except UnicodeEncodeError:
        return None


def tool_key_lines(prose: str) -> Iterator[tuple[str, str]]:
    """A tool output's key lines: errors and results (at most :data:`MAX_TOOL_KEY_LINES`), then its last line.

    A line counts when it is not a source listing and starts like an error, names an error phrase,
    or reads like a result; each of those needs a match of a pattern that never spans a line
    break, so only lines holding one are looked at (:func:`_candidate_lines`).
    """
    lines = prose.splitlines()
    candidates = _candidate_lines(prose)
    key_lines = 0
    if candidates is None:
        # No pattern below spans a line break, so one that matches nowhere in the output matches no line.
        phrase = _TOOL_ERROR_PHRASE.search if any(p in prose for p in _TOOL_ERROR_PHRASES) else None
        result = _RESULT_LINE.search if _RESULT_LINE.search(prose) else None
    else:  # the same rule without the whole-output checks: a candidate line is checked itself
        phrase, result = _TOOL_ERROR_PHRASE.search, _RESULT_LINE.search
    for line in lines if candidates is None else candidates:
        if key_lines >= MAX_TOOL_KEY_LINES:
            break
        if _LISTING_LINE.match(line):
            continue
        if _TOOL_ERROR_START.match(line) or (phrase is not None and phrase(line)):
            key_lines += 1
            yield ERROR, line
        elif result is not None and result(line):
            key_lines += 1
            yield RESULT, line
    tail = next((ln for ln in reversed(lines) if ln.strip()), "")
    if tail and len(tail) <= MAX_FACT_CHARS and not _LISTING_LINE.match(tail):
        yield RESULT, tail


def _raw_facts(message: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(kind, text) in a fixed order: kinds first by :data:`KINDS`, then by position."""
    role = message.get("role")
    # Paths and URLs wherever they are, tool-call arguments included; the rest only from what the
    # message says: a tool call's arguments may be a whole file being written, whose
    # ``raise ParseError`` lines are no error anyone met.
    prose = _decoded(message_text(message))
    args = _arguments_text(message) if message.get("tool_calls") else ""
    text = f"{prose}\n{args}" if prose and args else prose or args
    is_tool = role == "tool"
    has_url = "http" in text  # the pattern's scan is slow where it cannot match (most tool outputs)
    if role == "user":
        for sentence in _SENTENCE.split(message_text(message)):
            if _DECISION_WORDS.search(sentence):
                yield DECISION, sentence
    if role == "assistant":
        for command in _commands(message, text):
            yield COMMAND, command
    if is_tool:
        yield from tool_key_lines(prose)
    else:
        for line in prose.splitlines():
            if _ERROR_LINE.search(line):
                yield ERROR, line
    yield from ((PATH, p) for p in _paths(text))
    for m in _URL.finditer(text) if has_url else ():
        yield URL, m.group().rstrip(".,:;")
    if not is_tool:  # a file read back names hundreds of identifiers; the agent can read it again
        for m in _BACKTICK.finditer(prose):
            if _identifier_like(m.group(1)):
                yield IDENTIFIER, m.group(1)
        for rx in (_CALL, _SNAKE, _CAMEL):
            for m in rx.finditer(prose):
                yield IDENTIFIER, m.group()
        for m in _NUMBER_UNIT.finditer(prose):
            yield NUMBER, m.group()


def message_facts(message: dict[str, Any], origin: int) -> list[Fact]:
    """The facts of one message, each once (by normalised text), in :data:`KINDS` order."""
    seen: set[str] = set()
    by_kind: dict[str, list[Fact]] = {k: [] for k in KINDS}
    for kind, raw in _raw_facts(message):
        text = _clip(raw)
        norm = normalise(text)
        if len(norm) < MIN_FACT_CHARS or norm in seen or norm in _NOT_IDENTIFIERS:
            continue
        seen.add(norm)
        by_kind[kind].append(Fact(kind, text, norm, origin))
    return [f for k in KINDS for f in by_kind[k]]


# Facts of messages by content key, made ahead (see :func:`prepare_facts`): (kind, text, norm) each.
_PREPARED: dict[str, list[tuple[str, str, str]]] = {}


def prepare_facts(keyed: Iterable[tuple[str, dict[str, Any]]], stop: Any = None) -> None:
    """Extract the facts of ``(content key, message)`` pairs now, for :func:`facts_of` to hand out.

    A command that replays a session has the session before the trace exists, and an idle core
    while a worker replays it: extracting the facts then leaves the analysis after the replay
    less to do. ``stop`` (a ``threading.Event``) ends the work early.
    """
    for key, message in keyed:
        if stop is not None and stop.is_set():
            return
        if key not in _PREPARED:
            _PREPARED[key] = [(f.kind, f.text, f.norm) for f in message_facts(message, 0)]


def facts_of(key: str, message: dict[str, Any], origin: int) -> list[Fact]:
    """``message_facts(message, origin)``, from the facts prepared for its content ``key`` when there are."""
    found = _PREPARED.get(key)
    if found is None:
        return message_facts(message, origin)
    return [Fact(kind, text, norm, origin) for kind, text, norm in found]


def forget_prepared() -> None:
    _PREPARED.clear()


def extract_facts(messages: Iterable[dict[str, Any]]) -> list[Fact]:
    """Facts of a sequence of session messages; ``origin`` is the position in the sequence.

    A fact stated again later keeps its first origin (it is one fact, and the first message is
    where the user or the tool introduced it).
    """
    seen: set[str] = set()
    out: list[Fact] = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") == "system":
            continue
        for fact in message_facts(msg, i):
            if fact.norm not in seen:
                seen.add(fact.norm)
                out.append(fact)
    return out
