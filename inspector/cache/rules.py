"""Load and validate the provider prompt-cache rule table (``rules.yaml``).

The numbers that decide a simulated cache hit change with providers' docs, so they are data,
each with its source. This module turns the YAML into frozen dataclasses and fails loudly,
naming the file and the field, on anything it cannot use: a silently defaulted minimum would
make every prediction quietly wrong.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from inspector import yaml_safe

SUPPORTED_VERSION = 1
DEFAULT_PATH = Path(__file__).with_name("rules.yaml")
MODES = ("breakpoints", "automatic", "ideal", "disabled")
# The keys each level may have: a misspelt key in a user's file would otherwise change nothing.
TOP_KEYS = frozenset({"version", "profiles", "prices"})
PROFILE_KEYS = frozenset({"mode", "description", "max_breakpoints", "lookback_blocks", "granularity",
                          "refresh_on_hit", "ttl", "min_prefix", "multipliers"})
PRICE_KEYS = frozenset({"match", "input", "output", "cache_read", "cache_write_5m", "cache_write_1h"})
FACT_KEYS = frozenset({"value", "source", "snapshot", "status", "unit", "note", "match"})


class RulesError(ValueError):
    """The rule table is unusable; the message names the file and the field."""


def normalise_model(model: str) -> str:
    """Lower-case, provider prefix kept, '.' and '_' as '-', so "claude-sonnet-4.6" matches "sonnet-4-6"."""
    return (model or "").lower().replace(".", "-").replace("_", "-")


@dataclass(frozen=True)
class Profile:
    """One provider's caching rules, as plain numbers (sources stay in the YAML)."""

    name: str
    mode: str
    description: str = ""
    max_breakpoints: int = 4
    lookback_blocks: int = 20
    granularity: int = 1
    refresh_on_hit: bool = True
    default_ttl: str = ""
    ttls: dict[str, float] = field(default_factory=dict)
    min_prefix_default: int = 0
    min_prefix_models: tuple[tuple[tuple[str, ...], int], ...] = ()
    read_multiplier: float = 1.0
    write_multipliers: dict[str, float] = field(default_factory=dict)

    def min_prefix_for(self, model: str = "") -> int:
        """The minimum cacheable prefix for ``model`` (first matching family, else the default)."""
        norm = normalise_model(model)
        if norm:
            for patterns, tokens in self.min_prefix_models:
                if any(p in norm for p in patterns):
                    return tokens
        return self.min_prefix_default

    def resolve_ttl(self, ttl: str | None) -> str:
        """The TTL option actually used: ``ttl`` if this profile offers it, else its default."""
        if ttl and ttl in self.ttls:
            return ttl
        return self.default_ttl

    def ttl_seconds(self, ttl: str | None) -> float | None:
        """Seconds an entry lives after its last use; None for no expiry (ideal/disabled)."""
        name = self.resolve_ttl(ttl)
        return self.ttls.get(name) if name else None

    def write_multiplier(self, ttl: str | None) -> float:
        return self.write_multipliers.get(self.resolve_ttl(ttl), 1.0)


@dataclass(frozen=True)
class ModelPrice:
    """Base prices in US$ per million tokens; cache prices optional (else base × multipliers)."""

    match: tuple[str, ...]
    input: float
    output: float
    cache_read: float | None = None
    cache_write_5m: float | None = None
    cache_write_1h: float | None = None


@dataclass(frozen=True)
class Rules:
    version: int
    profiles: dict[str, Profile]
    prices: tuple[ModelPrice, ...] = ()
    sources: tuple[str, ...] = ()  # files the table was read from, defaults first

    def profile(self, name: str) -> Profile:
        try:
            return self.profiles[name]
        except KeyError:
            raise RulesError(
                f"unknown cache profile {name!r}; the rule table has: {', '.join(sorted(self.profiles))}"
            ) from None

    def price_for(self, model: str) -> ModelPrice | None:
        norm = normalise_model(model)
        if not norm:
            return None
        for price in self.prices:
            if any(p in norm for p in price.match):
                return price
        return None


def load_rules(path: str | Path | None = None) -> Rules:
    """The bundled table, with the user's file at ``path`` merged over it key by key.

    A user file only needs the values it changes; profiles it adds are validated like the
    bundled ones; a ``prices`` list it gives replaces the bundled list. Either file having a
    ``version`` other than the supported one is an error (a newer table may mean something else).
    """
    raw = _read(DEFAULT_PATH)
    sources = [str(DEFAULT_PATH)]
    if path is not None and Path(path).resolve() != DEFAULT_PATH.resolve():
        user = _read(Path(path))
        _check_sources(user, str(path))
        raw = _merge(raw, user)
        sources.append(str(path))
    return _build(raw, " + ".join(sources), tuple(sources))


# Parsed tables by (file, size, modification time): every replay builds a simulator, and parsing the
# bundled YAML cost more than replaying a short session. A changed file is read again.
_PARSED: dict[tuple[str, int, int], dict[str, Any]] = {}


def _read(path: Path) -> dict[str, Any]:
    try:
        st = path.stat()
        stamp = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    except OSError as exc:
        raise RulesError(f"{path}: cannot read the cache rule table: {exc}") from exc
    parsed = _PARSED.get(stamp)
    if parsed is None:
        parsed = _parse(path)
        if len(_PARSED) >= 16:
            _PARSED.clear()
        _PARSED[stamp] = parsed
    return copy.deepcopy(parsed)


def _parse(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RulesError(f"{path}: cannot read the cache rule table: {exc}") from exc
    try:
        data = yaml_safe.load(text)
    except yaml.YAMLError as exc:
        raise RulesError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise RulesError(f"{path}: expected a mapping at the top level")
    version = data.get("version")
    if type(version) is not int:
        raise RulesError(f"{path}: version: must be the whole number {SUPPORTED_VERSION}, got {version!r}")
    if version != SUPPORTED_VERSION:
        raise RulesError(
            f"{path}: cache rule table version {version!r} is not supported (this inspector reads "
            f"version {SUPPORTED_VERSION}); upgrade the inspector or convert the file"
        )
    _check_keys(data, str(path))
    return data


def _unknown(node: Any, allowed: frozenset[str], where: str) -> None:
    if isinstance(node, dict):
        extra = sorted(str(k) for k in node if k not in allowed)
        if extra:
            raise RulesError(f"{where}: unknown key(s) {', '.join(extra)}; expected some of {', '.join(sorted(allowed))}")


def _check_keys(data: dict[str, Any], where: str) -> None:
    """Every key is one the loader reads (a typo in a user's file must not be silently ignored)."""
    _unknown(data, TOP_KEYS, where)
    for name, prof in (data.get("profiles") or {}).items() if isinstance(data.get("profiles"), dict) else ():
        pwhere = f"{where}: profiles.{name}"
        _unknown(prof, PROFILE_KEYS, pwhere)
        if not isinstance(prof, dict):
            continue
        for key in ("max_breakpoints", "lookback_blocks", "granularity", "refresh_on_hit"):
            _unknown(prof.get(key), FACT_KEYS, f"{pwhere}.{key}")
        ttl = prof.get("ttl")
        _unknown(ttl, frozenset({"default", "options"}), f"{pwhere}.ttl")
        if isinstance(ttl, dict) and isinstance(ttl.get("options"), dict):
            for opt, fact in ttl["options"].items():
                _unknown(fact, FACT_KEYS, f"{pwhere}.ttl.options.{opt}")
        minimum = prof.get("min_prefix")
        _unknown(minimum, frozenset({"default", "models"}), f"{pwhere}.min_prefix")
        if isinstance(minimum, dict):
            _unknown(minimum.get("default"), FACT_KEYS, f"{pwhere}.min_prefix.default")
            for i, fam in enumerate(minimum.get("models") or [] if isinstance(minimum.get("models"), list) else []):
                _unknown(fam, FACT_KEYS, f"{pwhere}.min_prefix.models[{i}]")
        mult = prof.get("multipliers")
        _unknown(mult, frozenset({"read", "write"}), f"{pwhere}.multipliers")
        if isinstance(mult, dict):
            _unknown(mult.get("read"), FACT_KEYS, f"{pwhere}.multipliers.read")
    prices = data.get("prices")
    for i, price in enumerate(prices if isinstance(prices, list) else []):
        _unknown(price, PRICE_KEYS, f"{where}: prices[{i}]")


def _check_sources(node: Any, where: str) -> None:
    """A user's changed value must name its own source: the bundled one would no longer apply."""
    if isinstance(node, dict):
        if "value" in node and not str(node.get("source") or "").strip():
            raise RulesError(f"{where}: a value you set needs its own source (where the number comes from)")
        for key, value in node.items():
            _check_sources(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _check_sources(value, f"{where}[{i}]")


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = copy.deepcopy(base)
        for key, value in over.items():
            out[key] = _merge(base[key], value) if key in base else copy.deepcopy(value)
        return out
    return copy.deepcopy(over)


def _count(node: Any, where: str, low: int = 0) -> int:
    """A sourced whole number of at least ``low`` (2.7 breakpoints means nothing)."""
    value = _value(node, where)
    if not float(value).is_integer():
        raise RulesError(f"{where}: expected a whole number, got {value!r}")
    if value < low:
        raise RulesError(f"{where}: must be at least {low}, got {value!r}")
    return int(value)


def _value(node: Any, where: str, kind: type | tuple[type, ...] = (int, float)) -> Any:
    """The ``value`` of a sourced fact; a bare value or a missing source is an error."""
    if not isinstance(node, dict) or "value" not in node:
        raise RulesError(f"{where}: expected {{value: ..., source: ..., snapshot: ...}}, got {node!r}")
    if not str(node.get("source") or "").strip():
        raise RulesError(f"{where}: every number needs a source")
    value = node["value"]
    if kind is bool:
        if not isinstance(value, bool):
            raise RulesError(f"{where}: expected true or false, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, kind):
        raise RulesError(f"{where}: expected a number, got {value!r}")
    if not math.isfinite(value):
        raise RulesError(f"{where}: expected a finite number, got {value!r}")
    if value < 0:
        raise RulesError(f"{where}: must not be negative, got {value!r}")
    return value


def _matches(node: Any, where: str) -> tuple[str, ...]:
    match = node.get("match") if isinstance(node, dict) else None
    if isinstance(match, str):
        match = [match]
    if not isinstance(match, list) or not match or not all(isinstance(m, str) and m for m in match):
        raise RulesError(f"{where}.match: expected a non-empty list of model-name substrings")
    return tuple(normalise_model(m) for m in match)


def _build_profile(name: str, node: Any, src: str) -> Profile:
    where = f"{src}: profiles.{name}"
    if not isinstance(node, dict):
        raise RulesError(f"{where}: expected a mapping")
    mode = node.get("mode")
    if mode not in MODES:
        raise RulesError(f"{where}.mode: expected one of {', '.join(MODES)}, got {mode!r}")
    kw: dict[str, Any] = {
        "name": name,
        "mode": mode,
        "description": str(node.get("description") or "").strip(),
    }
    if mode in ("ideal", "disabled"):
        return Profile(**kw)
    kw["granularity"] = _count(node.get("granularity"), f"{where}.granularity", 1)
    kw["refresh_on_hit"] = _value(node.get("refresh_on_hit"), f"{where}.refresh_on_hit", bool)
    if mode == "breakpoints":
        # At least one: switching caching off is the ``none`` profile or a falsy cache_ttl.
        kw["max_breakpoints"] = _count(node.get("max_breakpoints"), f"{where}.max_breakpoints", 1)
        kw["lookback_blocks"] = _count(node.get("lookback_blocks"), f"{where}.lookback_blocks")
    ttl = node.get("ttl")
    if not isinstance(ttl, dict) or not isinstance(ttl.get("options"), dict) or not ttl["options"]:
        raise RulesError(
            f"{where}.ttl: expected {{default: NAME, options: {{NAME: {{value: seconds, ...}}}}}}"
        )
    kw["ttls"] = {str(k): float(_value(v, f"{where}.ttl.options.{k}")) for k, v in ttl["options"].items()}
    default_ttl = str(ttl.get("default", ""))
    if default_ttl not in kw["ttls"]:
        raise RulesError(
            f"{where}.ttl.default: {default_ttl!r} is not one of the options {sorted(kw['ttls'])}"
        )
    kw["default_ttl"] = default_ttl
    minimum = node.get("min_prefix")
    if not isinstance(minimum, dict):
        raise RulesError(f"{where}.min_prefix: expected {{default: {{value: ...}}, models: [...]}}")
    kw["min_prefix_default"] = _count(minimum.get("default"), f"{where}.min_prefix.default")
    families = []
    for i, fam in enumerate(minimum.get("models") or []):
        fwhere = f"{where}.min_prefix.models[{i}]"
        families.append((_matches(fam, fwhere), _count(fam, fwhere)))
    kw["min_prefix_models"] = tuple(families)
    mult = node.get("multipliers")
    if not isinstance(mult, dict):
        raise RulesError(f"{where}.multipliers: expected {{read: ..., write: {{TTL: ...}}}}")
    kw["read_multiplier"] = float(_value(mult.get("read"), f"{where}.multipliers.read"))
    writes = mult.get("write")
    if not isinstance(writes, dict):
        raise RulesError(f"{where}.multipliers.write: expected one entry per TTL option")
    kw["write_multipliers"] = {
        str(k): float(_value(v, f"{where}.multipliers.write.{k}")) for k, v in writes.items()
    }
    missing = set(kw["ttls"]) - set(kw["write_multipliers"])
    if missing:
        raise RulesError(f"{where}.multipliers.write: no multiplier for TTL option(s) {sorted(missing)}")
    return Profile(**kw)


def _build_price(i: int, node: Any, src: str) -> ModelPrice:
    where = f"{src}: prices[{i}]"
    if not isinstance(node, dict):
        raise RulesError(f"{where}: expected a mapping")
    optional = {}
    for key in ("cache_read", "cache_write_5m", "cache_write_1h"):
        if node.get(key) is not None:
            optional[key] = float(_value(node[key], f"{where}.{key}"))
    return ModelPrice(
        match=_matches(node, where),
        input=float(_value(node.get("input"), f"{where}.input")),
        output=float(_value(node.get("output"), f"{where}.output")),
        **optional,
    )


def _build(raw: dict[str, Any], src: str, sources: tuple[str, ...]) -> Rules:
    profiles = raw.get("profiles")
    if not isinstance(profiles, dict) or not profiles:
        raise RulesError(f"{src}: profiles: expected at least one profile")
    prices = raw.get("prices") or []
    if not isinstance(prices, list):
        raise RulesError(f"{src}: prices: expected a list")
    return Rules(
        version=int(raw["version"]),
        profiles={str(n): _build_profile(str(n), p, src) for n, p in profiles.items()},
        prices=tuple(_build_price(i, p, src) for i, p in enumerate(prices)),
        sources=sources,
    )
