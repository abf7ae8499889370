"""What a replay assumes when the user did not say: the transcript's own model, cache and window.

A replay of someone's Codex rollout under Hermes' default model (Sonnet) would get Anthropic's
cache rules, cache writes OpenAI never reports, Sonnet's prices and a 200K window instead of the
258,400 Codex recorded. So, unless the user set them (config file or ``--set``, which
:func:`inspector.config.load_config` lists in ``x_user_set``):

- ``model.default`` is the transcript's model;
- ``model.context_length`` is the window the transcript recorded (Codex ``model_context_window``),
  else the model's known window (``window_for``);
- ``inspector.cache_profile`` is the profile of the model's provider (Anthropic, OpenAI, DeepSeek);
- ``prompt_caching.cache_ttl`` is ``1h`` when most recorded cache writes were 1-hour writes.

Every such choice is written down (``x_assumed`` in the config the replay gets, then the trace's
``meta.assumed``) and said by the CLI, so a figure never rests on an unstated guess.
"""

from __future__ import annotations

import copy
from typing import Any

# Model-name fragments → the cache profile of the provider serving them (inspector/cache/rules.yaml).
# The first match wins; Codex rollouts are served by OpenAI whatever their model is called.
PROFILE_FOR_MODEL: tuple[tuple[str, str], ...] = (
    ("claude", "anthropic"),
    ("anthropic/", "anthropic"),
    ("deepseek", "deepseek"),
    ("gpt-", "openai"),
    ("codex", "openai"),
    ("openai/", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
)
PROFILE_FOR_FORMAT = {"codex": "openai", "claude-code": "anthropic"}


def user_set(config: dict[str, Any], dotted: str) -> bool:
    """Did the user set ``dotted`` (or a section containing it) in the file or with ``--set``?

    A config built by hand without ``x_user_set`` (a test, an embedding program) is taken as
    entirely the caller's: nothing is assumed over it except what it leaves empty.
    """
    keys = config.get("x_user_set")
    if keys is None:
        return _present(config, dotted)
    return any(dotted == k or dotted.startswith(k + ".") for k in keys)


def _present(config: dict[str, Any], dotted: str) -> bool:
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or node.get(part) in (None, ""):
            return False
        node = node[part]
    return True


def profile_for(model: str, source_format: str = "") -> str | None:
    """The cache profile of whoever serves ``model`` (None when we cannot tell)."""
    if source_format in PROFILE_FOR_FORMAT:
        return PROFILE_FOR_FORMAT[source_format]
    name = (model or "").lower()
    return next((profile for fragment, profile in PROFILE_FOR_MODEL if fragment in name), None)


def settle(config: dict[str, Any], session: Any) -> dict[str, Any]:
    """``config`` with the transcript's model, window and cache profile where the user set none.

    Idempotent: a config that was already settled (it has ``x_assumed``) comes back unchanged.
    ``x_assumed`` maps each setting to ``{"value", "from"}`` (``transcript``, ``model table``,
    ``config default`` or ``user``).
    """
    if "x_assumed" in config:
        return config
    from inspector.engines.loading import window_for

    out = copy.deepcopy(config)
    model_cfg = out.get("model") if isinstance(out.get("model"), dict) else {}
    out["model"] = model_cfg
    insp = out.setdefault("inspector", {})
    assumed: dict[str, dict[str, Any]] = {}
    recorded = str(getattr(session, "model", None) or "").strip()

    if not user_set(config, "model.default") and recorded:
        model_cfg["default"] = recorded
        assumed["model"] = {"value": recorded, "from": "transcript"}
    else:
        frm = "user" if user_set(config, "model.default") else "config default"
        assumed["model"] = {"value": str(model_cfg.get("default") or ""), "from": frm}
    model = str(model_cfg.get("default") or "")

    window = getattr(session, "context_window", None)
    if user_set(config, "model.context_length"):
        assumed["context_length"] = {"value": window_for(out, model), "from": "user"}
    elif isinstance(window, int) and window > 0:
        model_cfg["context_length"] = window
        assumed["context_length"] = {"value": window, "from": "transcript"}
    else:
        assumed["context_length"] = {"value": window_for(out, model), "from": "model table"}

    if user_set(config, "inspector.cache_profile"):
        assumed["cache_profile"] = {"value": insp.get("cache_profile"), "from": "user"}
    else:
        profile = profile_for(model, getattr(session, "source_format", "") if assumed["model"]["from"] == "transcript" else "")
        if profile:
            insp["cache_profile"] = profile
            assumed["cache_profile"] = {"value": profile, "from": "transcript" if assumed["model"]["from"] == "transcript"
                                        else "model"}
        else:
            assumed["cache_profile"] = {"value": insp.get("cache_profile") or "anthropic", "from": "config default"}
    ttl = _recorded_ttl(session)
    caching = out.setdefault("prompt_caching", {})
    if user_set(config, "prompt_caching.cache_ttl"):
        assumed["cache_ttl"] = {"value": caching.get("cache_ttl"), "from": "user"}
    elif ttl is not None and insp.get("cache_profile") == "anthropic":
        caching["cache_ttl"] = ttl
        assumed["cache_ttl"] = {"value": ttl, "from": "transcript"}
    out["x_assumed"] = assumed
    return out


def _recorded_ttl(session: Any) -> str | None:
    """``1h`` when most recorded cache writes were 1-hour writes (Claude Code writes them so), ``5m``
    when writes were recorded and none was; None when the transcript recorded no write."""
    written = one_hour = 0
    for call in getattr(session, "api_calls", ()) or ():
        u = call.usage
        if u is not None and u.source == "reported":
            written += u.cache_write_tokens
            one_hour += u.cache_write_1h_tokens
    if not written:
        return None
    return "1h" if one_hour * 2 > written else "5m"


def describe(assumed: dict[str, dict[str, Any]]) -> str:
    """One line: ``model gpt-5.3-codex (transcript), window 258,400 (transcript), cache openai (transcript)``."""
    parts = []
    for key, label in (("model", "model"), ("context_length", "window"), ("cache_profile", "cache profile"),
                       ("cache_ttl", "cache TTL")):
        item = assumed.get(key)
        if item is None:
            continue
        value = f"{item['value']:,}" if isinstance(item["value"], int) else str(item["value"])
        parts.append(f"{label} {value} ({item['from']})")
    return "replay settings: " + ", ".join(parts)
