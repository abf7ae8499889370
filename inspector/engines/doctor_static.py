"""Checks that need no running engine: message-list validity and the host modules a plugin imports.

``validate_messages`` states the OpenAI chat rules an engine's output must keep (roles, tool
results answering the call right before them, no unanswered calls, system only first).
``scan_imports`` reads a plugin's source with ``ast`` (never executing it) and checks each
import against what the compatibility layer and the environment provide.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROLES = frozenset({"system", "user", "assistant", "tool"})
# Top-level modules that only exist inside a Hermes install.
HERMES_ONLY_TOPS = frozenset(
    {"agent", "hermes_cli", "hermes_constants", "tools", "gateway", "run_agent", "hermes_state", "model_tools",
     "toolsets", "acp_adapter", "cron", "hermes_logging"}
)
MAX_PER_KIND = 4


def validate_messages(messages: Any) -> list[tuple[str, str]]:
    """Problems as ``(status, text)``; ``status`` is ``"fail"`` or ``"warn"``. Empty = valid."""
    if not isinstance(messages, list):
        return [("fail", f"not a list but {type(messages).__name__}")]
    if not messages:
        return [("fail", "empty list (Hermes treats an empty result as a failed compression)")]
    problems: list[tuple[str, str]] = []
    counts: dict[str, int] = {}

    def add(kind: str, status: str, text: str) -> None:
        counts[kind] = counts.get(kind, 0) + 1
        if counts[kind] <= MAX_PER_KIND:
            problems.append((status, text))
        elif counts[kind] == MAX_PER_KIND + 1:
            problems.append((status, f"… more {kind} problems"))

    pending: dict[str, int] = {}  # call id → index of the assistant message that made it
    prev_role = None
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            add("type", "fail", f"[{i}] is a {type(msg).__name__}, not a dict")
            prev_role = None
            continue
        role = msg.get("role")
        if role not in ROLES:
            add("role", "fail", f"[{i}] has role {role!r} (OpenAI roles: system, user, assistant, tool)")
        if role == "system" and i > 0:
            add("system", "fail", f"[{i}] is a system message in mid-list (only index 0 may be system)")
        content = msg.get("content")
        if content is not None and not isinstance(content, (str, list)):
            add("content", "warn", f"[{i}] content is a {type(content).__name__} (expected str or list of parts)")
        if role != "tool" and pending:
            for cid, at in pending.items():
                add("unanswered", "fail", f"[{at}] tool call {cid!r} has no tool result before [{i}]")
            pending = {}
        if role == "assistant":
            for call in msg.get("tool_calls") or []:
                cid = call.get("id") if isinstance(call, dict) else getattr(call, "id", None)
                if not cid:
                    add("call-id", "fail", f"[{i}] has a tool call without an id")
                    continue
                pending[str(cid)] = i
        elif role == "tool":
            cid = msg.get("tool_call_id")
            if not cid:
                add("orphan", "fail", f"[{i}] tool result has no tool_call_id")
            elif str(cid) not in pending:
                add("orphan", "fail", f"[{i}] orphan tool result: tool_call_id {cid!r} answers no call of the preceding assistant message")
            else:
                pending.pop(str(cid))
        if role in ("user", "assistant") and role == prev_role:
            add("same-role", "warn", f"[{i - 1}] and [{i}] are consecutive {role} messages")
        prev_role = role
    for cid, at in pending.items():
        add("unanswered", "fail", f"[{at}] tool call {cid!r} is never answered")
    return problems


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


def source_files(path: Path) -> list[Path]:
    """A plugin's own Python files (tests excluded: they may import test-only packages)."""
    if path.is_file():
        return [path]
    return sorted(
        p for p in path.rglob("*.py")
        if not any(part in ("tests", "test", "__pycache__") for part in p.relative_to(path).parts[:-1])
        and not p.name.startswith("test_")
    )
