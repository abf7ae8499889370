"""Checks that need no running engine: message-list validity and the host modules a plugin imports.

``validate_messages`` checks an engine's output against the OpenAI chat rules (roles, tool
results answering the call right before them, no unanswered calls) and grades each breach by
what Hermes does with it: its request sanitiser repairs some silently, the provider rejects the rest.
``scan_imports`` reads a plugin's source with ``ast`` (never executing it) and checks each
import against what the compatibility layer and the environment provide.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspector.host.shaping import STUB_RESULT, VALID_ROLES, call_id

ROLES = frozenset({"system", "user", "assistant", "tool"})
# Top-level modules that only exist inside a Hermes install.
HERMES_ONLY_TOPS = frozenset(
    {"agent", "hermes_cli", "hermes_constants", "tools", "gateway", "run_agent", "hermes_state", "model_tools",
     "toolsets", "acp_adapter", "cron", "hermes_logging"}
)
MAX_PER_KIND = 4


def validate_messages(messages: Any, *, request: bool = False) -> list[tuple[str, str]]:
    """Problems as ``(status, text)``, each judged by what Hermes does with it. Empty = valid.

    ``"fail"``: Hermes refuses the list or trips over it, or the provider rejects what Hermes
    sends even after its request sanitiser (run_agent.py:3848 of hermes-agent 0.19.0; docs/host-contract.md §2.5);
    ``"warn"``: the sanitiser repairs it silently, and the text says how. ``request``: the list
    is a whole request (select_context), whose index 0 is the system prompt; otherwise it is a
    transcript (compress, prune) that Hermes sends after its own system prompt.
    """
    if not isinstance(messages, list):
        return [("fail", f"not a list but {type(messages).__name__}")]
    if not messages:
        return [("fail", "empty list (Hermes discards an empty compress result; as a transcript it leaves nothing to send)")]
    problems: list[tuple[str, str]] = []
    counts: dict[str, int] = {}
    when = "before sending this request" if request else "before every request"

    def add(kind: str, status: str, text: str) -> None:
        counts[kind] = counts.get(kind, 0) + 1
        if counts[kind] <= MAX_PER_KIND:
            problems.append((status, text))
        elif counts[kind] == MAX_PER_KIND + 1:
            problems.append((status, f"… more {kind} problems"))

    # What Hermes' sanitiser pairs on: call ids and result ids anywhere in the list.
    kept = [m for m in messages if isinstance(m, dict) and m.get("role") in VALID_ROLES]
    calls = {cid for m in kept if m.get("role") == "assistant" for c in _calls(m) if (cid := _call_id(c))}
    results = {str(m["tool_call_id"]) for m in kept if m.get("role") == "tool" and m.get("tool_call_id")}
    pending: dict[str, int] = {}  # call id → index of the assistant message that made it
    answered: set[str] = set()
    reported: set[str] = set()  # misplaced pairs already named once

    def unanswered() -> None:
        for cid, at in pending.items():
            if cid not in results:
                add("stub", "warn", f"[{at}] tool call {cid!r} has no result: Hermes adds a stub result "
                    f"({STUB_RESULT!r}) right after [{at}] {when}")
            elif cid not in reported:
                reported.add(cid)
                add("misplaced", "fail", f"[{at}] tool call {cid!r} is not answered right after [{at}] (its result is "
                    "elsewhere): Hermes adds no stub and the provider rejects the request")
        pending.clear()

    prev: tuple[int, str] | None = None  # the last message Hermes keeps: index, role
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            add("type", "fail", f"[{i}] is a {type(msg).__name__}, not a message dict "
                "(Hermes reads every message as a dict, so its next request raises)")
            prev = None
            continue
        role = msg.get("role")
        if role not in VALID_ROLES:
            add("role", "warn", f"[{i}] has role {role!r}: Hermes' sanitiser drops the message {when} "
                f"(it allows {', '.join(sorted(VALID_ROLES))}), so the model never sees it")
            continue
        if role not in ROLES:
            add("role", "warn", f"[{i}] has role {role!r}: Hermes sends it unchanged (its sanitiser allows it), "
                "though not every provider accepts it")
        if role == "system" and (i > 0 or not request):
            add("system", "warn", f"[{i}] is a system message in mid-list: Hermes sends it where it is"
                + ("" if request else ", after its own system prompt") + " (its sanitiser allows the system role)")
        content = msg.get("content")
        if content is not None and not isinstance(content, (str, list)):
            add("content", "fail", f"[{i}] content is a {type(content).__name__}: Hermes sends it unchanged and "
                "chat APIs take only a string or a list of content parts")
        if role != "tool" and pending:
            unanswered()
        if role == "assistant":
            for call in _calls(msg):
                cid = _call_id(call)
                if not cid:
                    add("call-id", "fail", f"[{i}] has a tool call without an id: no result can answer it, "
                        "Hermes adds no stub and the provider rejects the request")
                    continue
                pending[cid] = i
        elif role == "tool":
            raw = msg.get("tool_call_id")
            cid = str(raw) if raw else ""
            if not cid:
                add("no-id", "fail", f"[{i}] tool result has no tool_call_id: Hermes keeps it and the provider rejects it")
            elif cid in pending:
                pending.pop(cid)
                answered.add(cid)
            elif cid not in calls:
                add("orphan", "warn", f"[{i}] orphan tool result: no assistant message calls {cid!r}; "
                    f"Hermes' sanitiser drops it {when}")
                continue
            elif cid in answered:
                add("misplaced", "fail", f"[{i}] is a second result for tool call {cid!r}: Hermes keeps both and the "
                    "provider rejects the request")
            elif cid not in reported:
                reported.add(cid)
                add("misplaced", "fail", f"[{i}] tool result for {cid!r} does not follow the assistant message that "
                    "made the call: Hermes does not move it and the provider rejects the request")
        if role in ("user", "assistant") and prev is not None and prev[1] == role:
            add("same-role", "warn", f"[{prev[0]}] and [{i}] are consecutive {role} messages"
                + (": Hermes merges them into one before sending" if role == "user" else " (Hermes sends both)"))
        prev = (i, role)
    unanswered()
    return problems


def _calls(message: dict[str, Any]) -> list[Any]:
    calls = message.get("tool_calls")
    return calls if isinstance(calls, list) else []


def _call_id(call: Any) -> str:
    """A tool call's id as Hermes reads it (``call_id``, then ``id``); objects by attribute."""
    cid = call_id(call) if isinstance(call, dict) else getattr(call, "id", None)
    return str(cid) if cid else ""


@dataclass
class ImportUse:
    module: str
    names: list[str]
    file: str
    line: int
    guarded: bool  # inside try/except ImportError (or broader)
    lazy: bool  # inside a function body: only fails when that code runs


def scan_imports(paths: list[Path]) -> tuple[list[ImportUse], list[str]]:
    """Absolute imports in the given source files, and files that do not parse."""
    uses: list[ImportUse] = []
    errors: list[str] = []
    for path in paths:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError) as exc:
            errors.append(f"{path}: {exc}")
            continue
        _walk(tree, path, uses, guarded=False, lazy=False)
    return uses, errors


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    names: list[str] = []
    t = handler.type
    if t is None:
        return True
    for node in t.elts if isinstance(t, ast.Tuple) else [t]:
        if isinstance(node, ast.Name):
            names.append(node.id)
        elif isinstance(node, ast.Attribute):
            names.append(node.attr)
    return any(n in ("ImportError", "ModuleNotFoundError", "Exception", "BaseException") for n in names)


def _walk(node: ast.AST, path: Path, out: list[ImportUse], *, guarded: bool, lazy: bool) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import):
            for alias in child.names:
                out.append(ImportUse(alias.name, [], str(path), child.lineno, guarded, lazy))
        elif isinstance(child, ast.ImportFrom):
            if child.level == 0 and child.module:
                out.append(ImportUse(child.module, [a.name for a in child.names], str(path), child.lineno, guarded, lazy))
        elif isinstance(child, ast.Try) or type(child).__name__ == "TryStar":
            g = guarded or any(_catches_import_error(h) for h in child.handlers)  # type: ignore[attr-defined]
            for stmt in child.body:  # type: ignore[attr-defined]
                _walk(ast.Module(body=[stmt], type_ignores=[]), path, out, guarded=g, lazy=lazy)
            for part in (*child.handlers, *child.orelse, *child.finalbody):  # type: ignore[attr-defined]
                _walk(part if isinstance(part, ast.ExceptHandler) else ast.Module(body=[part], type_ignores=[]),
                      path, out, guarded=guarded, lazy=lazy)
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            _walk(child, path, out, guarded=guarded, lazy=True)
        else:
            _walk(child, path, out, guarded=guarded, lazy=lazy)


def check_import(use: ImportUse, *, hermes_installed: bool, own_package: str | None) -> tuple[str, str] | None:
    """``None`` when the import will work; else ``(status, reason)``."""
    from inspector.engines.compat import STAND_INS, provided_names

    top = use.module.partition(".")[0]
    if own_package and (use.module == own_package or use.module.startswith(own_package + ".")):
        return None
    soft = use.guarded or use.lazy
    where = f"{Path(use.file).name}:{use.line}"
    qualifier = " (guarded by try/except)" if use.guarded else " (inside a function: fails when that code runs)" if use.lazy else ""
    is_host = top in HERMES_ONLY_TOPS
    if is_host and not hermes_installed:
        provided = provided_names(use.module)
        if provided is None:
            return ("warn" if soft else "fail",
                    f"{where}: imports host module {use.module!r}, which the inspector does not provide"
                    f" (stand-ins: {', '.join(sorted(STAND_INS))}){qualifier}")
        missing = [n for n in use.names if n != "*" and n not in provided and f"{use.module}.{n}" not in STAND_INS]
        if missing:
            return ("warn" if soft else "fail",
                    f"{where}: from {use.module} import {', '.join(missing)}: not provided by the stand-in{qualifier}")
        return None
    try:
        found = importlib.util.find_spec(use.module) is not None
    except (ImportError, ValueError, AttributeError):
        found = False
    if found:
        return None
    kind = "host module" if is_host else "module"
    return ("warn" if soft else "fail", f"{where}: {kind} {use.module!r} is not installed{qualifier}")


def imported_sources(path: Path) -> list[Path]:
    """The plugin files Hermes can import: its package's ``__init__.py`` and what it imports from
    its own package, transitively (relative imports, or absolute ones through the folder's name).

    Hermes imports a directory plugin as a package (its ``__init__.py``, hermes_cli/plugins.py
    loading through importlib); a repository's ``benchmarks/`` or ``scripts/`` that no module of
    the package imports never run inside the agent, so their imports cannot fail it.
    """
    if path.is_file():
        return [path]
    root = path / "__init__.py"
    if not root.is_file():
        return source_files(path)
    seen: list[Path] = []
    todo = [root]
    while todo:
        file = todo.pop()
        if file in seen or not file.is_file():
            continue
        seen.append(file)
        try:
            tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue  # scan_imports reports it
        package = file.parent
        for node in ast.walk(tree):
            targets: list[tuple[Path, list[str]]] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package
                    for _ in range(node.level - 1):
                        base = base.parent
                    targets.append((base, (node.module or "").split(".") if node.module else []))
                elif node.module and node.module.partition(".")[0] == path.name:
                    targets.append((path, node.module.split(".")[1:]))
                names = [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [(path, a.name.split(".")[1:]) for a in node.names if a.name.partition(".")[0] == path.name]
                names = []
            else:
                continue
            for base, parts in targets:
                here = base
                for part in parts:
                    todo.append(here / "__init__.py")
                    here = here / part
                todo += [here.with_suffix(".py"), here / "__init__.py"]
                todo += [here / f"{n}.py" for n in names] + [here / n / "__init__.py" for n in names]
        todo = [t for t in todo if _inside(t, path)]
    return sorted(seen)


def _inside(file: Path, root: Path) -> bool:
    try:
        file.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def source_files(path: Path) -> list[Path]:
    """A plugin's own Python files (tests excluded: they may import test-only packages)."""
    if path.is_file():
        return [path]
    return sorted(
        p for p in path.rglob("*.py")
        if not any(part in ("tests", "test", "__pycache__") for part in p.relative_to(path).parts[:-1])
        and not p.name.startswith("test_")
    )
