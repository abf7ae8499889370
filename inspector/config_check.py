"""What is wrong with a config, in words, before anything runs on it.

Hermes reads its own keys leniently: a threshold that is not a number falls back to its default,
an unknown key is ignored. The replay does the same (that is what the real agent would do), but
a user who typed ``thresold`` or ``threshold: "0,6"`` must be told which value is really used.
So Hermes' keys give warnings; the ``inspector:`` section, which is ours, and sections that are
not mappings at all (nothing can be read from them) are errors.
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Callable
from typing import Any

# Sections that must be mappings when present.
SECTIONS = ("model", "context", "compression", "auxiliary", "auxiliary.compression", "prompt_caching", "plugins",
            "inspector", "inspector.live")

# key -> (kind, low, high, fallback Hermes uses); kind: "num", "int", "bool", "str"
HERMES_KEYS: dict[str, tuple[str, float | None, float | None, Any]] = {
    "model.context_length": ("int", 1, None, "the model's known window"),
    "compression.enabled": ("bool", None, None, True),
    "compression.threshold": ("num", 0.0, 1.0, 0.50),
    "compression.target_ratio": ("num", 0.10, 0.80, 0.20),
    "compression.protect_last_n": ("int", 0, None, 20),
    "compression.protect_first_n": ("int", 0, None, 3),
    "compression.context_timeout_seconds": ("num", None, None, 120),  # <= 0: no timeout, as in Hermes
    "compression.max_attempts": ("int", 1, 10, 3),
    "auxiliary.compression.timeout": ("num", 0, None, 120),
}
# What happens to a number of the right type outside its range: what a run actually uses, which is
# not the default a value of the wrong type falls back to.
RANGE_EFFECTS: dict[str, Callable[[float], str]] = {
    "model.context_length": lambda v: "it is ignored and the model's known window is used",
    "compression.threshold": lambda v: ("Hermes passes it on, and the threshold is capped at 85 % of the window"
                                        if v > 1 else "Hermes passes it on: the 0.75 floor below a 512K window, "
                                        "else the 64,000-token minimum, sets the threshold"),
    "compression.target_ratio": lambda v: f"the engine clamps it to {min(max(v, 0.10), 0.80):g}",
    "compression.protect_last_n": lambda v: "the engine uses 0",
    "compression.protect_first_n": lambda v: "the engine uses 0",
    "compression.max_attempts": lambda v: f"the host uses {10 if v > 10 else (3 if v == 0 else 1)}",
    "auxiliary.compression.timeout": lambda v: "the compression task's timeout is floored at 300 s anyway",
}
INSPECTOR_KEYS: dict[str, tuple[str, float | None, float | None]] = {
    "inspector.hook_timeout_seconds": ("num", 0, None),
    "inspector.load_timeout_seconds": ("num", 0, None),
    "inspector.worker_memory_mb": ("num", 0, None),
    "inspector.tokenizer": ("str", None, None),
    "inspector.cache_profile": ("str", None, None),
    "inspector.host_profile": ("str", None, None),
    "inspector.live.timeout": ("num", 0, None),
}
# Known keys per section, for "did you mean" on typos (Hermes has more; only near misses are flagged).
KNOWN = {
    "model": ("default", "provider", "base_url", "context_length", "max_tokens", "api_key", "api_mode"),
    "compression": ("enabled", "threshold", "target_ratio", "protect_last_n", "protect_first_n",
                    "abort_on_summary_failure", "in_place", "model_thresholds", "threshold_tokens",
                    "context_timeout_seconds", "context_total_ceiling_seconds", "max_attempts",
                    "min_tail_user_messages", "proactive_prune_tokens", "proactive_prune_min_result_chars",
                    "proactive_prune_min_reclaim_tokens", "micro_compact", "idle_compact_after_seconds", "tail_mode"),
    "prompt_caching": ("cache_ttl",),
    "inspector": ("tokenizer", "cache_profile", "cache_rules", "plugin_dirs", "hook_timeout_seconds", "live", "demo_engines", "usage",
                  "load_timeout_seconds", "worker_memory_mb", "sandbox", "token_cache",
                  "offline_fallback_counts", "aux_offline_stand_in", "host_profile", "probe_tools"),
}
# Newer Hermes settings the inspector reads but does not model yet, with the value its results
# correspond to (Hermes' default): set to anything else, they are reported as having no effect.
NOT_MODELLED: dict[str, Any] = {
    "compression.context_total_ceiling_seconds": (600,),
    "compression.tail_mode": ("legacy",),
    "compression.proactive_prune_tokens": (0,),
    "compression.proactive_prune_min_result_chars": (8000,),
    "compression.proactive_prune_min_reclaim_tokens": (4096,),
    "compression.micro_compact": (False,),
    "compression.idle_compact_after_seconds": (0,),
}


class ConfigProblem(ValueError):
    """A config value nothing can run with."""


def _get(config: dict[str, Any], dotted: str) -> tuple[bool, Any]:
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _bad(kind: str, value: Any, low: float | None, high: float | None) -> str | None:
    """Why ``value`` is not a valid ``kind`` in [low, high]; None when it is."""
    if value is None:
        return None
    if kind == "bool":
        return None if isinstance(value, bool) else "expected true or false"
    if kind == "str":
        return None if isinstance(value, str) and value.strip() else "expected a name"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind == "num" and not math.isfinite(value)):
        return "expected a whole number" if kind == "int" else "expected a number"
    if kind == "int" and not float(value).is_integer():
        return "expected a whole number"
    if low is not None and value < low or high is not None and value > high:
        return f"expected a value between {low:g} and {high:g}" if high is not None else f"expected at least {low:g}"
    return None


def _ttl_note(config: dict[str, Any], ttl: Any) -> str | None:
    """The cache TTL warning for the configured profile; None when the rule table cannot be read
    (that error is reported, in full, when the simulator is made)."""
    from inspector.cache.rules import RulesError, load_rules
    from inspector.cache.simulator import ttl_warning

    _, path = _get(config, "inspector.cache_rules")
    _, name = _get(config, "inspector.cache_profile")
    try:
        profile = load_rules(os.path.expanduser(str(path)) if path else None).profile(str(name or "anthropic"))
    except RulesError:
        return None
    return ttl_warning(profile, ttl)


def _non_finite(node: Any, dotted: str = "", depth: int = 0) -> str | None:
    """The dotted key of the first number that is infinite or not a number (``.inf``, ``.nan``,
    ``"1e999"`` where a number is read): every range check passes them and the first ``int()``
    of a threshold fails, so no run can use them."""
    if depth > 64:
        return None
    if isinstance(node, float) and not math.isfinite(node):
        return dotted or "(top level)"
    if isinstance(node, str) and HERMES_KEYS.get(dotted, ("",))[0] in ("num", "int"):
        try:
            return None if math.isfinite(float(node)) else dotted
        except (ValueError, OverflowError):
            return None
    if isinstance(node, dict):
        for key, value in node.items():
            found = _non_finite(value, f"{dotted}.{key}" if dotted else str(key), depth + 1)
            if found:
                return found
    elif isinstance(node, list):
        for k, value in enumerate(node):
            found = _non_finite(value, f"{dotted}[{k}]", depth + 1)
            if found:
                return found
    return None


def check_config(config: dict[str, Any]) -> list[str]:
    """Warnings about ``config``; raises :class:`ConfigProblem` for what no run can use."""
    bad = _non_finite(config)
    if bad:
        _, value = _get(config, bad) if "[" not in bad else (True, "a list item")
        raise ConfigProblem(f"{bad}: {value!r} is not a finite number")
    for dotted in SECTIONS:
        present, value = _get(config, dotted)
        if present and not isinstance(value, dict):
            raise ConfigProblem(f"{dotted}: expected a mapping of settings, got {type(value).__name__} {value!r}")
    present, mode = _get(config, "inspector.usage")
    if present and mode not in (None, "", "calibrated", "tokenizer", "recorded"):
        raise ConfigProblem(f"inspector.usage: {mode!r} is not one of calibrated, tokenizer, recorded "
                            "(empty: calibrated when the transcript has usage)")
    present, path = _get(config, "inspector.cache_rules")
    if present and path is not None and not isinstance(path, str):
        raise ConfigProblem(f"inspector.cache_rules: expected the path of a rule table (YAML), got {path!r}")
    for dotted, (kind, low, high) in INSPECTOR_KEYS.items():
        present, value = _get(config, dotted)
        why = _bad(kind, value, low, high) if present else None
        if why:
            raise ConfigProblem(f"{dotted}: {why}, got {value!r}")
    present, name = _get(config, "inspector.host_profile")
    if present and name:
        from inspector.host.profiles import ProfileError, profile_named

        try:
            profile_named(name)
        except ProfileError as exc:
            raise ConfigProblem(str(exc)) from None
    warnings = []
    for dotted, (kind, low, high, fallback) in HERMES_KEYS.items():
        present, value = _get(config, dotted)
        why = _bad(kind, value, low, high) if present else None
        if why:
            typed = _bad(kind, value, None, None) is None
            effect = RANGE_EFFECTS[dotted](value) if typed and dotted in RANGE_EFFECTS else \
                f"Hermes ignores it and uses {fallback}"
            warnings.append(f"{dotted}: {why}, got {value!r}; {effect}")
    for dotted, defaults in NOT_MODELLED.items():
        present, value = _get(config, dotted)
        if present and value not in defaults:
            warnings.append(f"{dotted}: {value!r} has no effect in the inspector (it does not model this Hermes "
                            f"setting yet); results are as with {defaults[0]!r}")
    present, ttl = _get(config, "prompt_caching.cache_ttl")
    note = _ttl_note(config, ttl) if present else None
    if note:
        warnings.append(f"prompt_caching.cache_ttl: {note}")
    for section, known in KNOWN.items():
        present, value = _get(config, section)
        if not present or not isinstance(value, dict):
            continue
        for key in value:
            if key in known or not isinstance(key, str):
                continue
            near = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
            if near:
                warnings.append(f"{section}.{key}: unknown key (did you mean {section}.{near[0]}?); it is ignored")
            elif section == "inspector":
                warnings.append(f"{section}.{key}: unknown key; it is ignored")
    return warnings
