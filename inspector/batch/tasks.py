"""The tasks of a batch, each named by everything that decides its result.

A task is one session × one engine × one setting. Its key hashes the session's content (not its
path: a moved file keeps its results, an edited one does not), the engine's name, version and
source code, the whole effective config, and the host: the inspector's own code and its cache and
tokenizer profile. Equal keys mean equal results, so a stored result is reused without a replay.
Tasks are plain JSON-able dicts, so every backend (a local process, a Ray worker) can carry them.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
from pathlib import Path
from typing import Any

from inspector import __version__
from inspector.batch.sources import SessionRef
from inspector.config import ConfigError, deep_merge, parse_set_option

DEFAULT_SETTING = "default"


def _digest(data: bytes, size: int = 16) -> str:
    return hashlib.blake2b(data, digest_size=size).hexdigest()


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode(
        "utf-8", "surrogatepass")


def session_hash(session: Any) -> str:
    """What a replay reads of a session: its messages, recorded calls, compactions, tools, identity.

    Not where each message was read from (``x_origin`` names the file): a moved file is the same session."""
    messages = [{k: v for k, v in m.items() if k != "x_origin"} if "x_origin" in m else m for m in session.messages]
    doc = {
        "id": session.id, "model": session.model, "started_at": session.started_at, "messages": messages,
        "tools": session.tools, "api_calls": [dataclasses.asdict(c) for c in session.api_calls],
        "compactions": [dataclasses.asdict(c) for c in session.compactions],
        "turns": [dataclasses.asdict(t) for t in session.turns],
    }
    return _digest(canonical_json(doc))


def files_hash(paths: list[Path]) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for path in sorted(paths):
        try:
            data = path.read_bytes()
        except OSError:
            data = b"<unreadable>"
        digest.update(str(path.name).encode() + b"\0" + _digest(data).encode())
    return digest.hexdigest()


def source_files(path: str | Path) -> list[Path]:
    """The code files of an engine (a plugin folder, a module) whose change changes its results."""
    p = Path(path)
    if p.is_dir():
        return [f for f in p.rglob("*") if f.is_file() and f.suffix in (".py", ".yaml", ".yml", ".json", ".toml")
                and "__pycache__" not in f.parts]
    if p.is_file():
        return [p]
    return []


@functools.lru_cache(maxsize=1)
def host_code_hash() -> str:
    """The inspector's code that shapes a replay (host, engines, tokens, cache model, readers)."""
    root = Path(__file__).resolve().parent.parent
    files = [f for f in root.rglob("*") if f.is_file() and f.suffix in (".py", ".yaml")
             and not ({"ui", "bench", "batch", "__pycache__"} & set(f.relative_to(root).parts))]
    return files_hash(files)


def parse_sweeps(values: list[str]) -> list[dict[str, Any]]:
    """``["compression.threshold=0.5,0.7", "k=a,b"]`` → every combination, as ``{dotted key: value}``.

    Values are YAML scalars, as ``--set`` reads them; no sweep gives the one default setting.
    """
    axes: list[list[tuple[str, Any]]] = []
    for item in values or []:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key or not raw.strip():
            raise ConfigError(f"--sweep expects KEY=V1,V2,…, got {item!r}")
        choices = []
        for text in raw.split(","):
            choices.append((key, parse_set_option([f"{key}={text.strip()}"])))
        axes.append([(key, _leaf(parsed, key)) for key, parsed in choices])
    if not axes:
        return [{}]
    return [dict(combo) for combo in itertools.product(*axes)]


def _leaf(nested: dict[str, Any], dotted: str) -> Any:
    node: Any = nested
    for part in dotted.split("."):
        node = node[part]
    return node


def setting_label(setting: dict[str, Any]) -> str:
    if not setting:
        return DEFAULT_SETTING
    return " ".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in setting.items())


def setting_config(base: dict[str, Any], setting: dict[str, Any]) -> dict[str, Any]:
    """``base`` with the setting's dotted keys applied (checked like a config file)."""
    from inspector.config_check import ConfigProblem, check_config

    overrides: dict[str, Any] = {}
    for dotted, value in setting.items():
        parts = dotted.split(".")
        node = overrides
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    config = deep_merge(base, overrides)
    try:
        check_config(config)
    except ConfigProblem as exc:
        raise ConfigError(f"--sweep {setting_label(setting)}: {exc}") from None
    return config


def host_profile(config: dict[str, Any]) -> dict[str, Any]:
    insp = config.get("inspector") or {}
    return {"inspector": __version__, "code": host_code_hash(),
            "tokenizer": insp.get("tokenizer") or "cl100k_base", "cache_profile": insp.get("cache_profile") or "anthropic"}


def task_key(session_digest: str, engine: dict[str, Any], config: dict[str, Any]) -> str:
    from inspector.host.replay import public_config

    doc = {"session": session_digest, "engine": engine, "config": public_config(config), "host": host_profile(config)}
    return _digest(canonical_json(doc), 20)


def make_task(ref: SessionRef, session_digest: str, engine: dict[str, Any], setting: dict[str, Any],
              config: dict[str, Any], plugin_dirs: list[str], trace_dir: str | None = None) -> dict[str, Any]:
    """One task as a plain dict: everything a worker needs, and nothing it must share with us."""
    key = task_key(session_digest, engine, config)
    return {
        "key": key,
        "session": {"spec": ref.spec, "path": ref.path, "id": ref.session_id, "hash": session_digest},
        "engine": engine["name"],
        "engine_id": engine,
        "setting": setting,
        "setting_label": setting_label(setting),
        "config": config,
        "plugin_dirs": list(plugin_dirs),
        "trace_path": str(Path(trace_dir) / f"{key}.json.gz") if trace_dir else None,
    }
