"""The public shape of a module or class, in JSON, the same way in both interpreters.

Used by the API snapshot (``test_api_snapshot.py``); standard library only, so the Hermes
interpreter can import it too. A shape maps each name to ``"attribute"``, ``"property"``,
``"class"``, an enum's members (``{"enum": [[name, value], ...]}``, in definition order) or a
signature: parameter names, kinds and defaults, and the return annotation written the same way
whatever the annotation style (``typing.List[X]`` and ``list[X]``, ``Optional[X]`` and
``X | None`` read alike). Parameter annotations are not part of it.
"""

from __future__ import annotations

import enum
import inspect
import re
import types
from typing import Any

_STDLIB_ORIGINS = ("__future__", "typing", "abc", "logging", "builtins", "collections", "dataclasses", "re", "json", "time")


def canonical_annotation(text: str) -> str:
    text = text.replace("typing.", "").replace(" ", "")
    text = re.sub(r"\bList\[", "list[", text)
    text = re.sub(r"\bDict\[", "dict[", text)
    text = re.sub(r"\bTuple\[", "tuple[", text)
    while True:
        match = re.search(r"\bOptional\[", text)
        if not match:
            return text
        depth, i = 1, match.end()
        while depth:
            depth += {"[": 1, "]": -1}.get(text[i], 0)
            i += 1
        text = text[: match.start()] + text[match.end(): i - 1] + "|None" + text[i:]


def signature(obj: Any) -> Any:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return "callable"
    params = [[p.name, p.kind.name, "<required>" if p.default is p.empty else repr(p.default)]
              for p in sig.parameters.values()]
    ret = sig.return_annotation
    returns = "" if ret is sig.empty else canonical_annotation(ret if isinstance(ret, str) else inspect.formatannotation(ret))
    return {"params": params, "returns": returns}


def _describe(value: Any) -> Any:
    if isinstance(value, property):
        return "property"
    if isinstance(value, (staticmethod, classmethod)):
        return signature(value.__func__)
    if callable(value) and not isinstance(value, type):
        return signature(value)
    if isinstance(value, type) and issubclass(value, enum.Enum):
        return {"enum": [[member.name, member.value] for member in value]}
    if isinstance(value, type):
        return "class"
    return "attribute"


def module_shape(module: types.ModuleType) -> dict[str, Any]:
    """Public names a plugin can import: everything without a leading underscore that is not a
    module or a standard-library helper the module happens to import (``Any``, ``logger``)."""
    out: dict[str, Any] = {}
    names = list(getattr(module, "__all__", None) or vars(module))
    for name in names:
        if name.startswith("_"):
            continue
        try:
            value = getattr(module, name)
        except AttributeError:
            continue
        if isinstance(value, types.ModuleType):
            continue
        origin = getattr(value, "__module__", None) or type(value).__module__
        if origin.partition(".")[0] in _STDLIB_ORIGINS and not isinstance(value, (str, int, float, tuple, frozenset)):
            continue
        out[name] = _describe(value)
    return out


def class_shape(cls: type) -> dict[str, Any]:
    """Every member a subclass can see, public or single-underscore, through the whole MRO."""
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__ in ("builtins", "abc"):
            continue
        for name, value in vars(klass).items():
            if name.startswith("__") or name == "_abc_impl":
                continue
            out[name] = _describe(value)
    if "__init__" in vars(cls):
        out["__init__"] = signature(cls.__init__)
    return out
