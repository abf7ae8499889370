"""config.yaml: Hermes' own keys plus an ``inspector:`` section for our settings.

A real ``~/.hermes/config.yaml`` loads unchanged: unknown keys are kept, Hermes' defaults are
deep-merged underneath (Hermes does the same), and YAML is read with ``safe_load`` only.
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Any

import yaml

from inspector import yaml_safe
from inspector.input_files import InputRefused, read_capped

MAX_CONFIG_BYTES = 16 * 1024**2  # Hermes' config.yaml is a few KB; a FIFO or a device is refused outright

DEFAULTS: dict[str, Any] = {
    # No context_length: like Hermes, a config without one gets the model's known window (agent/model_metadata.py:2084 of hermes-agent 0.19.0).
    "model": {"default": "anthropic/claude-sonnet-4.5", "provider": "", "base_url": "", "context_length": None, "max_tokens": None},
    "context": {"engine": "compressor"},
    "compression": {
        "enabled": True,
        "threshold": 0.50,
        "target_ratio": 0.20,
        "protect_last_n": 20,
        "protect_first_n": 3,
        "abort_on_summary_failure": False,
        "in_place": True,
        "model_thresholds": {},
        "threshold_tokens": None,
        "context_timeout_seconds": 120,
        "context_total_ceiling_seconds": 600,
        "max_attempts": 3,
    },
    "auxiliary": {
        "compression": {"provider": "auto", "model": "", "base_url": "", "api_key": "", "timeout": 120, "extra_body": {}}
    },
    "prompt_caching": {"cache_ttl": "5m"},
    "plugins": {"enabled": [], "disabled": []},
    "inspector": {
        "tokenizer": "cl100k_base",
        "cache_profile": "anthropic",
        "plugin_dirs": [],
        "hook_timeout_seconds": 30,
        "live": {"base_url": "", "model": "", "api_key_env": "OPENAI_API_KEY", "timeout": 60},
    },
}


class ConfigError(Exception):
    """config.yaml could not be read; names the file and what was wrong."""


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Defaults, then the file (if any), then ``overrides`` (command-line ``--set`` values)."""
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        try:
            text = read_capped(p, MAX_CONFIG_BYTES).decode("utf-8")
        except OSError as exc:
            raise ConfigError(f"{p}: cannot read config: {exc.strerror or exc}") from exc
        except InputRefused as exc:
            raise ConfigError(f"{p}: cannot read config: {exc}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{p}: cannot read config: not UTF-8 text at byte {exc.start}") from None
        try:
            loaded = yaml_safe.load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{p}: invalid YAML: {exc}") from exc
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{p}: expected a mapping at the top level, found {type(loaded).__name__}")
        data = _anchor_paths(loaded, p.parent)
    merged = deep_merge(DEFAULTS, data)
    if overrides:
        merged = deep_merge(merged, overrides)
    if isinstance(merged.get("model"), str):  # Hermes also takes ``model: <name>``
        merged["model"] = deep_merge(DEFAULTS["model"], {"default": merged["model"]})
    # Which settings the user chose (file or --set): the rest may follow the transcript
    # (inspector/host/transcript_defaults.py).
    merged["x_user_set"] = sorted(_leaves(data) | _leaves(overrides or {}))
    from inspector.config_check import ConfigProblem, check_config

    try:
        check_config(merged)
    except ConfigProblem as exc:
        where = f"{path}: " if path is not None else ""
        raise ConfigError(f"{where}{exc}") from None
    from inspector.llm.secrets import register_config

    register_config(merged)  # its key variables (whatever their names) and keys are masked everywhere
    return merged


def _leaves(data: dict[str, Any], prefix: str = "") -> set[str]:
    """Dotted names of the values ``data`` sets (``model: <name>`` sets ``model.default``)."""
    out: set[str] = set()
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out |= _leaves(value, name + ".")
        elif name == "model" and isinstance(value, str):
            out.add("model.default")
        else:
            out.add(name)
    return out


def _anchor_paths(data: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Relative paths in a config file are relative to that file, never to wherever the command
    runs: a plugin directory resolved against the current folder could run code from any checkout."""
    insp = data.get("inspector")
    if not isinstance(insp, dict):
        return data

    def anchored(value: Any) -> Any:
        if isinstance(value, str) and value.strip() and not Path(value).expanduser().is_absolute():
            return str(folder.resolve() / value)
        return value

    insp = dict(insp)
    dirs = insp.get("plugin_dirs")
    if isinstance(dirs, list):
        insp["plugin_dirs"] = [anchored(d) for d in dirs]
    elif isinstance(dirs, str):
        insp["plugin_dirs"] = anchored(dirs)
    if "cache_rules" in insp:
        insp["cache_rules"] = anchored(insp["cache_rules"])
    return {**data, "inspector": insp}


def config_warnings(config: dict[str, Any]) -> list[str]:
    """Values Hermes would ignore and near-miss key names (the config loaded, so nothing fatal)."""
    from inspector.config_check import check_config

    return check_config(config)


def print_config_warnings(config: dict[str, Any]) -> None:
    """The command-line commands' way to show :func:`config_warnings` (on stderr)."""
    import sys

    for warning in config_warnings(config):
        print(f"warning: config {warning}", file=sys.stderr)


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """``--config`` and ``--set``, so every command that replays takes them alike."""
    parser.add_argument("--config", help="config.yaml (Hermes keys + inspector section)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config value, e.g. compression.threshold=0.6 (repeatable)")


def command_config(args: argparse.Namespace) -> dict[str, Any] | None:
    """The config :func:`add_config_arguments`' options name, its warnings shown; None (the error
    said on stderr) when the file or a ``--set`` is wrong, so each command errs the same way."""
    import sys

    try:
        config = load_config(args.config, parse_set_option(args.set))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    print_config_warnings(config)
    return config


def cfg_get(config: dict[str, Any], dotted: str, default: Any = None) -> Any:
    """``cfg_get(cfg, "compression.threshold")``; missing keys give ``default``."""
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def cfg_set(config: dict[str, Any], dotted: str, value: Any) -> None:
    """``cfg_set(cfg, "compression.threshold", 0.6)``: sets the value, making (or replacing with)
    a section wherever the path has none."""
    node = config
    parts = dotted.split(".")
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[parts[-1]] = value


def parse_set_option(values: list[str]) -> dict[str, Any]:
    """``--set compression.threshold=0.6`` → nested dict; values parsed as YAML scalars."""
    out: dict[str, Any] = {}
    for item in values or []:
        if "=" not in item:
            raise ConfigError(f"--set expects key=value, got {item!r}")
        key, _, raw = item.partition("=")
        parts = key.strip().split(".")
        if not all(p.strip() for p in parts):
            raise ConfigError(f"--set {item!r}: the key is empty or has an empty part")
        try:
            value = yaml_safe.load(raw) if raw else ""
        except yaml.YAMLError as exc:
            raise ConfigError(f"--set {item!r}: the value is not valid YAML ({' '.join(str(exc).split())})") from None
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out
