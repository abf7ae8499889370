"""What a duck-typed engine (one that does not subclass ``ContextEngine``) gives Hermes.

Hermes takes whatever a directory engine's ``register(ctx)`` registers, with no type check
(plugins/context_engine/__init__.py:199 of hermes-agent 0.19.0), and then calls the hooks it needs directly. Such an engine runs as long
as those hooks resolve, but it inherits none of the base class' defaults, and what it forwards
through ``__getattr__`` is not what it defines: reads reach the inner object, while the host's
writes stay on the wrapper. :func:`describe` says which is which, in Hermes' terms, so the
doctor's verdict can be FAIL only where Hermes would crash. Nothing here calls a hook.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from inspector.engines.contract import ContextEngine, engine_overrides_hook

FAIL, WARN = "fail", "warn"
OWN, FORWARDED, MISSING = "own", "forwarded", "missing"

# Hooks Hermes calls without checking they exist: a missing one is an AttributeError there.
UNGUARDED = {
    "update_model": "at agent init",
    "get_tool_schemas": "at agent init",
    "update_from_response": "after every provider response",
    "should_compress": "at every compression check",
    "compress": "at every compaction",
    "on_session_reset": "on /new, /resume and /branch",
}
# Hooks behind Hermes' skip check (docs/host-contract.md §3): called only when they override the base class.
SKIP_CHECKED = ("select_context", "on_turn_complete")
# Attributes Hermes reads directly (no getattr default), and the ones it writes.
READ_DIRECTLY = ("threshold_tokens", "protect_first_n", "protect_last_n", "last_prompt_tokens")
HOST_WRITES = ("last_prompt_tokens", "last_completion_tokens", "threshold_tokens", "threshold_percent")

HOOKS = tuple(sorted(n for n, v in vars(ContextEngine).items() if not n.startswith("_") and callable(v)))
ATTRIBUTES = tuple(n for n, v in vars(ContextEngine).items()
                   if not n.startswith("_") and isinstance(v, (bool, int, float)))


@dataclass(frozen=True)
class Resolution:
    how: str  # OWN: found on the object or its class; FORWARDED: only through __getattr__; MISSING
    owner: str = ""  # for a forwarded method: the class of the object it is bound to


def resolve(engine: Any, name: str) -> Resolution:
    """Where ``engine.<name>`` comes from, without triggering anything but ``__getattr__``."""
    try:
        inspect.getattr_static(engine, name)
        return Resolution(OWN)
    except AttributeError:
        pass
    try:
        value = getattr(engine, name)
    except Exception:  # __getattr__ may raise anything
        return Resolution(MISSING)
    bound_to = getattr(value, "__self__", None)
    return Resolution(FORWARDED, type(bound_to).__name__ if bound_to is not None else "")


def describe(engine: Any) -> list[tuple[str, str]]:
    """``(status, text)`` findings for a duck-typed engine: FAIL where Hermes would crash, else WARN."""
    cls = type(engine).__name__
    hooks = {name: resolve(engine, name) for name in HOOKS}
    attrs = {name: resolve(engine, name) for name in ATTRIBUTES}
    out: list[tuple[str, str]] = [(WARN, (
        f"{cls} is not a ContextEngine subclass, so it inherits none of the base class' defaults; Hermes runs it "
        "anyway (a directory engine's register(ctx) result is taken without a type check)"))]

    crash = [n for n in UNGUARDED if hooks[n].how == MISSING]
    if crash:
        out.append((FAIL, "lacks hooks Hermes calls without checking: "
                    + ", ".join(f"{n} ({UNGUARDED[n]})" for n in crash) + "; Hermes raises AttributeError there"))
    absent = [n for n in HOOKS if hooks[n].how == MISSING and n not in UNGUARDED]
    if absent:
        out.append((WARN, f"does not define {', '.join(absent)}: Hermes checks for these or catches their errors, "
                    "so it runs without them, but no base-class default stands in"))

    forwarded = [n for n in HOOKS if hooks[n].how == FORWARDED]
    owners = sorted({hooks[n].owner for n in forwarded if hooks[n].owner})
    inner = owners[0] if len(owners) == 1 else "the inner object"
    if forwarded:
        out.append((WARN, f"hooks that resolve only through __getattr__ (to {', '.join(owners) or 'another object'}): "
                    + ", ".join(forwarded)))
        out.extend((WARN, text) for text in _skip_checks(engine, hooks, forwarded))

    fwd_attrs = [n for n in ATTRIBUTES if attrs[n].how == FORWARDED]
    if fwd_attrs:
        text = f"attributes read through __getattr__: {', '.join(fwd_attrs)}"
        written = [n for n in fwd_attrs if n in HOST_WRITES]
        if written and type(engine).__setattr__ is object.__setattr__:
            text += (f"; the host's writes to {', '.join(written)} (the -1 sentinel after each compaction, a threshold "
                     f"lowered to the summariser's window) land on {cls} and hide {inner}'s values from then on")
        out.append((WARN, text))
    no_attrs = [n for n in ATTRIBUTES if attrs[n].how == MISSING]
    if no_attrs:
        text = f"has none of the base class' attribute defaults for {', '.join(no_attrs)}"
        direct = [n for n in READ_DIRECTLY if n in no_attrs]
        if direct:
            text += f"; Hermes reads {', '.join(direct)} directly every turn, so the engine must set them itself"
        out.append((WARN, text))
    return out


def _skip_checks(engine: Any, hooks: dict[str, Resolution], forwarded: list[str]) -> list[str]:
    """What the host does with forwarded hooks: skipped as base-class no-ops, or called on the inner object."""
    texts = []
    skipped = [n for n in SKIP_CHECKED if n in forwarded and not engine_overrides_hook(engine, n)]
    called = [n for n in SKIP_CHECKED if n in forwarded and n not in skipped]
    if skipped:
        owner = hooks[skipped[0]].owner or "the inner object"
        texts.append(f"{' and '.join(skipped)} reach {owner}'s base-class no-op, so Hermes' skip check skips "
                     "them, as for a subclass that does not override them")
    if called:
        texts.append(f"{' and '.join(called)} reach an override on {hooks[called[0]].owner or 'the inner object'}, "
                     "so Hermes' skip check lets them run on every request")
    overrides = [n for n in forwarded if n not in SKIP_CHECKED and engine_overrides_hook(engine, n)]
    if overrides:
        one = len(overrides) == 1
        texts.append(f"{', '.join(overrides)} {'runs' if one else 'run'} {hooks[overrides[0]].owner or 'the inner object'}'s "
                     f"override{'' if one else 's'}, against its own state rather than the wrapper's")
    return texts
