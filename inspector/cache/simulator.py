"""A provider prompt-cache simulator run on the request an engine would send.

The simulator keeps the provider's side of the cache (entries keyed by a hash of the whole
prefix up to a block boundary, each with the time it was last used) across the requests of a
run, and for each request answers: how many input tokens are read from cache, written to it,
and left uncached, which block is the first one not served, and *why* a miss happened.

Blocks are the request's messages in order (block 0 is the system message when present); the
prefix order is tools → system → messages, so the tool schemas are folded into every prefix
hash. Matching is message-granular: a partly matching message is a miss from its start.

Per request the work is O(blocks): prefix hashes are computed incrementally and the ones a
request shares with the previous request are reused, so a 10k-request session stays cheap.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate, repeat
from typing import Any

from inspector.cache.reasons import HitWords, detail
from inspector.cache.rules import Profile, Rules, load_rules
from inspector.trace.packed import read_through
from inspector.trace.prefix import common_prefix_len

DISABLED_TTLS = frozenset({"", "0", "off", "none", "false", "disabled", "no"})
# The values Hermes itself knows for prompt_caching.cache_ttl (agent/agent_init.py:645-656 of hermes-agent 0.19.0).
HERMES_TTLS = ("5m", "1h")


def normalise_ttl(value: Any) -> str:
    """``prompt_caching.cache_ttl`` as text; every falsy value (false, 0, "", null) is "" = off."""
    if not value:
        return ""
    return str(value).strip()


def ttl_warning(profile: Profile, value: Any) -> str | None:
    """What a user should know about ``cache_ttl`` under ``profile``; None when it means what it says."""
    ttl = normalise_ttl(value)
    off = ttl.lower() in DISABLED_TTLS
    if profile.mode == "breakpoints":
        if off or ttl in profile.ttls:
            return None
        return (f"{value!r} is not one of {', '.join(sorted(profile.ttls))}; Hermes sends its default "
                f"{profile.default_ttl} cache markers, and so does the simulator")
    if profile.mode == "automatic":
        if ttl in profile.ttls or ttl in HERMES_TTLS:
            return None  # Hermes' own values do not steer automatic caching; the profile's retention applies
        if off:
            return (f"{value!r} cannot switch off {profile.name}'s automatic caching (Hermes only stops sending "
                    f"cache markers); its {profile.default_ttl} retention is simulated")
        return (f"{value!r} is not a retention of the {profile.name} profile ({', '.join(sorted(profile.ttls))}); "
                f"its default {profile.default_ttl} is used")
    return None
KINDS = ("hit", "miss", "cold", "ttl", "below_minimum", "prefix_break", "lookback", "disabled")
_PURGE_START = 500_000  # entries held before the first sweep of expired ones
_UNPRICED = object()


@dataclass(slots=True)
class CacheResult:
    """The cache outcome of one request (all token figures include the tool schemas)."""

    read: int = 0
    write: int = 0
    uncached: int = 0
    break_index: int | None = None  # first block not served from cache; None if every block was served
    reason_kind: str = ""  # one of KINDS
    reason: str = ""
    prefix_tokens: int = 0  # tokens of the longest common prefix with the previous request
    diverge_index: int | None = (
        None  # first block that differs from the previous request (None: it extends it)
    )
    region: str = ""  # where it diverged: "tools" | "system" | "message" | "" (no divergence)
    write_1h: int = 0  # part of ``write`` written with the 1-hour TTL
    total: int = 0  # read + write + uncached


def _words(res: CacheResult, held: object) -> object:
    if type(held) is HitWords:
        return held.words(res.read, res.write, res.uncached, res.break_index)  # type: ignore[arg-type]
    return held


read_through(CacheResult, "reason", _words)  # a hit's reason is held as HitWords (inspector.cache.reasons)


@dataclass(slots=True)
class _Lookup:
    """What the lookup found: the longest live entry and the longest expired one above it."""

    live: int = 0  # prefix length (blocks) of the read
    dead: int = 0
    dead_used: float = 0.0


@dataclass(slots=True)
class _Prev:
    keys: tuple[str, ...]
    hashes: list[int]
    tools_key: str
    roles: list[str] | None
    has_system: bool
    tsum: list[int]
    tools_tokens: int


class CacheSimulator:
    """Replays a provider's prompt cache over the requests of one run.

    ``profile`` names a profile in the rule table (``anthropic``, ``openai``, ``deepseek``,
    ``ideal``, ``none``); ``ttl`` is Hermes' ``prompt_caching.cache_ttl`` for breakpoint
    profiles (``"5m"``/``"1h"``; a falsy value disables caching, as Hermes sends no markers),
    and a retention option for automatic ones (unknown names fall back to the profile default).
    """

    def __init__(
        self, profile: str = "anthropic", *, rules: Rules | None = None, ttl: str = "5m", model: str = ""
    ):
        self.rules = rules or load_rules()
        self.profile: Profile = self.rules.profile(profile)
        self.model = model
        self.ttl_requested = ttl
        self.disabled = self.profile.mode == "disabled" or (
            self.profile.mode == "breakpoints" and normalise_ttl(ttl).lower() in DISABLED_TTLS
        )
        self.ttl = self.profile.resolve_ttl(ttl)
        self.ttl_seconds = self.profile.ttl_seconds(ttl)
        self.min_prefix = (
            self.profile.min_prefix_for(model) if self.profile.mode in ("breakpoints", "automatic") else 0
        )
        self._entries: dict[int, float] = {}  # prefix hash → time of last use (or creation)
        self._prices: dict[str, Any] = {}  # model → its price row (looked up once per model)
        self._prev: _Prev | None = None
        self._now = 0.0
        self._clocked = False  # has any request carried a timestamp yet?
        self._next_purge = _PURGE_START
        self.requests = 0
        self._warm: dict[str, int] = {}  # tools key → head tokens other sessions keep cached
        self._hits: tuple[Profile, int, HitWords] | None = None  # see _hit_words

    # -- public ----------------------------------------------------------------------
    def keep_warm(self, tools_key: str, tokens: int) -> None:
        """Requests whose head is ``tools_key`` read at least ``tokens`` from the cache.

        A transcript's first call often reads the agent's own system prompt from a cache that
        other sessions of the same agent keep alive (its recorded cache read before this session
        could have written anything). That part never lapses within the session.
        """
        if tokens > 0:
            self._warm[tools_key] = int(tokens)

    def reset(self) -> None:
        """Forget every cache entry and the previous request (a new provider session)."""
        self._entries.clear()
        self._prev = None
        self._now = 0.0
        self._clocked = False
        self._next_purge = _PURGE_START
        self.requests = 0

    def simulate(
        self,
        *,
        block_keys: Sequence[str],
        block_tokens: list[int],
        tools_key: str = "",
        tools_tokens: int = 0,
        timestamp: float | None = None,
        has_system: bool = True,
        block_roles: Sequence[str] | None = None,
        breakpoints: Sequence[int] | None = None,
    ) -> CacheResult:
        """Simulate one request and update the cache state.

        ``has_system`` says whether block 0 is the system message (Hermes marks it).
        ``block_roles`` only improves the reason text. ``breakpoints`` overrides Hermes'
        ``system_and_3`` placement with explicit block indices (breakpoint profiles only).
        ``timestamp`` is seconds (any epoch); without it no time passes since the last request.
        Within one run, equal keys must carry equal token counts (keys identify content).
        """
        block_keys = tuple(block_keys)  # kept for the next request; free when given a tuple
        n = len(block_keys)
        if len(block_tokens) != n:
            raise ValueError(f"block_keys has {n} entries but block_tokens has {len(block_tokens)}")
        if timestamp is not None:
            if self._clocked:
                self._now = max(self._now, float(timestamp))
            else:
                # The first known time: entries made before it carry no time, and none can be
                # inferred to have passed, so they count as used just now.
                self._now, self._clocked = float(timestamp), True
                self._entries = dict.fromkeys(self._entries, self._now)
        now = self._now
        roles = list(block_roles) if block_roles is not None else None
        prev = self._prev
        hashes, lcp = self._prefix_hashes(block_keys, tools_key, prev)
        tools_same = prev is not None and prev.tools_key == tools_key
        tsum = self._token_sums(block_tokens, int(tools_tokens), prev if tools_same else None, lcp)
        total = tsum[-1]
        prefix_tokens = tsum[lcp] if tools_same else 0
        diverge = None
        if prev is not None:
            if not tools_same:
                diverge = 0
            elif lcp < n and lcp < len(prev.keys):
                diverge = lcp

        self.requests += 1
        mode = self.profile.mode
        lookup = _Lookup()
        if self.disabled:
            res = CacheResult(uncached=total, break_index=0 if n else None)
        elif mode == "ideal":
            read = tsum[lcp] if tools_same else 0
            served = lcp if tools_same else 0
            res = CacheResult(read=read, uncached=total - read, break_index=served if served < n else None)
            lookup = _Lookup(live=served)
        elif mode == "breakpoints":
            res, lookup = self._breakpoints(hashes, tsum, now, has_system, breakpoints)
        else:
            res, lookup = self._automatic(hashes, tsum, now)
        res.total = total
        res.prefix_tokens = prefix_tokens
        res.diverge_index = diverge
        if diverge is not None:
            system_changed = diverge == 0 and has_system and prev is not None and prev.has_system
            res.region = "tools" if not tools_same else ("system" if system_changed else "message")
        if self.disabled:
            res.reason_kind, res.reason = "disabled", self._disabled_reason()
        else:
            self._classify(res, lookup, prev, lcp if tools_same else 0, block_keys, roles, tools_key, tsum)
            warm = min(self._warm.get(tools_key, 0), int(tools_tokens), total) if mode != "ideal" else 0
            if warm > res.read:
                words = res.reason  # in words now: the figures it is made of change below
                gain = warm - res.read
                res.read = warm
                res.write = max(0, res.write - gain)
                res.uncached = total - res.read - res.write
                res.write_1h = res.write if self.ttl == "1h" else 0
                res.reason = words + f"; {warm:,} head tokens read from a cache other sessions keep warm"
        self._prev = _Prev(block_keys, hashes, tools_key, roles, has_system, tsum, int(tools_tokens))
        if len(self._entries) > self._next_purge:
            self._purge(now)
        return res

    def cost(
        self, read: int, write: int, uncached: int, output_tokens: int = 0, model: str | None = None
    ) -> float | None:
        """US$ for one request from the price table; None when the model has no price (or ``ideal``)."""
        model = model if model is not None else self.model
        price = self._prices.get(model, _UNPRICED)
        if price is _UNPRICED:
            price = self._prices[model] = self.rules.price_for(model)
        if price is None or self.profile.mode == "ideal":
            return None
        read_price = (
            price.cache_read if price.cache_read is not None else price.input * self.profile.read_multiplier
        )
        explicit = price.cache_write_1h if self.ttl == "1h" else price.cache_write_5m
        write_price = (
            explicit if explicit is not None else price.input * self.profile.write_multiplier(self.ttl)
        )
        if self.disabled:
            read_price = write_price = price.input
        return (
            uncached * price.input + read * read_price + write * write_price + output_tokens * price.output
        ) / 1e6

    def breakpoints_for(self, n: int, has_system: bool = True) -> list[int]:
        """Hermes' ``system_and_3`` placement: the system message, then the last non-system messages."""
        limit = self.profile.max_breakpoints
        out: list[int] = []
        start = 0
        if has_system and n:
            out.append(0)
            start = 1
        room = max(0, limit - len(out))
        out.extend(range(max(start, n - room), n))
        return out

    # -- prefix hashes ---------------------------------------------------------------
    def _prefix_hashes(self, keys: tuple[str, ...], tools_key: str, prev: _Prev | None) -> tuple[list[int], int]:
        """hashes[p] identifies tools + blocks[:p]; returns them and the block-LCP with ``prev``.

        The common prefix with the previous request is found with a C-level slice compare in
        the usual append-only case, and its hashes are reused rather than recomputed.
        """
        if prev is None or prev.tools_key != tools_key:
            hashes = [hash(("tools", tools_key))]
            lcp = 0
            if prev is not None:
                lcp = common_prefix_len(prev.keys, keys)
        else:
            m = len(prev.keys)
            if len(keys) >= m and keys[:m] == prev.keys:
                lcp = m
            else:
                lcp = common_prefix_len(prev.keys, keys)
            hashes = prev.hashes  # taken over, not copied: the previous request is replaced next
            del hashes[lcp + 1 :]
        h = hashes[-1]
        for key in keys[len(hashes) - 1 :]:
            h = hash((h, key))
            hashes.append(h)
        return hashes, lcp

    @staticmethod
    def _token_sums(block_tokens: Sequence[int], tools_tokens: int, prev: _Prev | None, lcp: int) -> list[int]:
        """tsum[p] = tokens of tools + blocks[:p]; the prefix shared with ``prev`` is reused.

        Equal keys carry equal token counts, so only the blocks after the common prefix are
        summed: an append-only request costs its new messages, not the whole context.
        """
        if prev is None or prev.tools_tokens != tools_tokens or lcp == 0:
            return list(accumulate(block_tokens, initial=tools_tokens))
        tsum = prev.tsum  # taken over, not copied: the previous request is replaced next
        del tsum[lcp + 1 :]
        tail = accumulate(block_tokens[lcp:], initial=tsum[-1])
        next(tail)  # accumulate repeats its initial value
        tsum.extend(tail)
        return tsum

    def _alive(self, last_used: float, now: float) -> bool:
        return self.ttl_seconds is None or now - last_used <= self.ttl_seconds

    # -- models ----------------------------------------------------------------------
    def _breakpoints(
        self, hashes: list[int], tsum: list[int], now: float, has_system: bool, explicit: Sequence[int] | None
    ) -> tuple[CacheResult, _Lookup]:
        """Hermes' breakpoints; read = longest live entry at a breakpoint or within its lookback."""
        n = len(hashes) - 1
        total = tsum[-1]
        if explicit is not None:
            bps = sorted({b for b in explicit if 0 <= b < n})[-self.profile.max_breakpoints :]
        else:
            bps = self.breakpoints_for(n, has_system)
        res = CacheResult(uncached=total)
        if not bps:
            res.break_index = 0 if n else None
            return res, _Lookup()
        look = self.profile.lookback_blocks
        live = dead = 0
        dead_used = 0.0
        entries = self._entries
        ttl = self.ttl_seconds
        for b in bps:
            top = b + 1
            for p in range(top, max(1, top - look) - 1, -1):
                used = entries.get(hashes[p])
                if used is None:
                    continue
                if ttl is None or now - used <= ttl:
                    if p > live:
                        live = p
                    break
                if p > dead:
                    dead, dead_used = p, used
        read = tsum[live] if live else 0
        end = bps[-1] + 1
        write = max(0, tsum[end] - read) if tsum[end] >= self.min_prefix else 0
        refresh, min_prefix = self.profile.refresh_on_hit, self.min_prefix
        if live and refresh:
            entries[hashes[live]] = now
        for b in bps:
            if tsum[b + 1] >= min_prefix:
                h = hashes[b + 1]
                used = entries.get(h)
                if used is None or refresh or (ttl is not None and now - used > ttl):
                    entries[h] = now
        res.read, res.write = read, write
        res.uncached = total - read - write
        res.write_1h = write if self.ttl == "1h" else 0
        res.break_index = live if live < n else None
        return res, _Lookup(live, dead, dead_used)

    def _automatic(self, hashes: list[int], tsum: list[int], now: float) -> tuple[CacheResult, _Lookup]:
        """Longest live prefix of any earlier request, rounded down to the provider's steps."""
        n = len(hashes) - 1
        total = tsum[-1]
        entries = self._entries
        live = dead = 0
        dead_used = 0.0
        for p in range(n, 0, -1):
            used = entries.get(hashes[p])
            if used is None:
                continue
            if self._alive(used, now):
                live = p
                break
            if p > dead:
                dead, dead_used = p, used
        matched = tsum[live] if live else 0
        read = self._granular(matched)
        if live and self.profile.refresh_on_hit:
            # Every shorter prefix was used too; liveness of prefixes stays monotone.
            first = max(1, bisect.bisect_left(tsum, max(1, self.min_prefix)))
            entries.update(zip(hashes[first : live + 1], repeat(now)))
        if total >= self.min_prefix and n:
            first = max(1, live + 1, bisect.bisect_left(tsum, max(1, self.min_prefix)))
            entries.update(zip(hashes[first:], repeat(now)))
        served = max(0, bisect.bisect_right(tsum, read) - 1)
        res = CacheResult(
            read=read, write=0, uncached=total - read, break_index=served if served < n else None
        )
        return res, _Lookup(live, dead, dead_used)

    def _granular(self, matched: int) -> int:
        """Cached tokens for a matched prefix: nothing below the minimum, then whole steps."""
        lo, step = self.min_prefix, max(1, self.profile.granularity)
        if matched < lo or matched <= 0:
            return 0
        return lo + step * ((matched - lo) // step)

    # -- explanations ----------------------------------------------------------------
    def _disabled_reason(self) -> str:
        if self.profile.mode == "disabled":
            return f"caching disabled (profile {self.profile.name!r})"
        return f"caching disabled (cache_ttl {self.ttl_requested!r}: Hermes sends no cache markers)"

    def _classify(
        self,
        res: CacheResult,
        lookup: _Lookup,
        prev: _Prev | None,
        shared: int,
        keys: tuple[str, ...],
        roles: list[str] | None,
        tools_key: str,
        tsum: list[int],
    ) -> None:
        """Name the reason: cold, TTL lapse, prefix break, below minimum, lookback, else hit.

        A TTL lapse wins over a prefix break (nothing would have been read anyway); a break
        counts only if the read stopped at or before it (an automatic cache may have matched an
        older request past it). ``shared`` is the block-LCP with the previous request.
        """
        n = len(keys)
        served = res.break_index if res.break_index is not None else n
        if prev is None:
            res.reason_kind = "cold"
            res.reason = "cold start: first request" + self._write_note(res, tsum)
            return
        if lookup.dead > lookup.live:
            age = self._now - lookup.dead_used
            res.reason_kind = "ttl"
            res.reason = (f"TTL lapsed: {age:,.0f} s since last use > {self.ttl_seconds:,.0f} s; "
                          + self._detail(res, served))
            if res.diverge_index is not None:
                res.reason += "; also " + self._break_words(res, prev, keys, roles, tools_key)
            return
        if res.diverge_index is not None and served <= res.diverge_index:
            res.reason_kind = "prefix_break"
            res.reason = self._break_words(res, prev, keys, roles, tools_key) + "; " + self._detail(res, served)
            return
        if served < shared and lookup.live < shared:
            if tsum[shared] < self.min_prefix:
                res.reason_kind = "below_minimum"
                res.reason = (
                    f"below minimum: the {tsum[shared]:,}-token common prefix is under the "
                    f"{self.min_prefix:,}-token minimum for {self.model or 'this profile'}, so nothing was cached; "
                    + self._detail(res, served)
                )
                return
            if self.profile.mode == "breakpoints":
                res.reason_kind = "lookback"
                res.reason = (
                    f"lookback miss: the previous request's cache entry (through message {shared - 1}) is more "
                    f"than {self.profile.lookback_blocks} blocks before the nearest breakpoint; "
                    + self._detail(res, served)
                )
                return
        if res.read == 0 and (res.total or res.uncached):
            # Nothing broke and nothing lapsed, yet nothing was read (a prefix too short to have
            # been stored, a profile step above it): a request that read nothing is a miss.
            res.reason_kind = "miss"
            res.reason = "miss: nothing was read from the cache; " + self._detail(res, served)
            return
        res.reason_kind = "hit"
        if res.break_index is not None and res.total in (0, res.read + res.write + res.uncached):
            # Nine requests in ten: held as HitWords, in words only when read (inspector.cache.reasons).
            res.reason = self._hit_words()
        else:
            res.reason = "hit: " + self._detail(res, served)

    def _detail(self, res: CacheResult, served: int) -> str:
        return detail(res.read, res.total or (res.read + res.write + res.uncached), served, res.write, self._steps())

    def _steps(self) -> str:
        """The profile's rounding in words, said of every request that read something ("" if none)."""
        if self.profile.mode != "automatic" or self.profile.granularity <= 1:
            return ""
        return f"{self.profile.granularity}-token steps from {self.min_prefix:,}"

    def _hit_words(self) -> HitWords:
        """The words of a hit under this profile: one object per wording, shared by every hit."""
        made = self._hits
        if made is not None and made[0] is self.profile and made[1] == self.min_prefix:
            return made[2]
        words = HitWords(self._steps())
        self._hits = (self.profile, self.min_prefix, words)
        return words

    def _write_note(self, res: CacheResult, tsum: list[int]) -> str:
        if res.write:
            return f"; wrote {res.write:,} tokens"
        if self.min_prefix and tsum[-1] < self.min_prefix:
            return f"; {tsum[-1]:,} tokens is below the {self.min_prefix:,}-token minimum, nothing cached"
        if self.profile.mode == "automatic" and tsum[-1]:
            return "; prefix stored for later requests"
        return ""

    def _break_words(
        self, res: CacheResult, prev: _Prev, keys: tuple[str, ...], roles: list[str] | None, tools_key: str
    ) -> str:
        n = len(keys)
        if res.region == "tools":
            if prev.tools_key in self._warm and tools_key in self._warm:
                return "prefix broke at the agent's own head (its system prompt and tools changed: tools reloaded)"
            return f"prefix broke at the tool schemas (was {_short(prev.tools_key)}, now {_short(tools_key)})"
        i = res.diverge_index or 0
        was = _describe(prev.roles, prev.keys, i)
        now = _describe(roles, keys, i)
        where = "the system message" if res.region == "system" else f"message {i} of {n}"
        return f"prefix broke at {where} (was {was}, now {now})"

    def _purge(self, now: float) -> None:
        """Bound memory: drop expired entries; if that is not enough (no timestamps, so nothing
        expires), keep only the entries on the latest request's own prefix chain."""
        if self.ttl_seconds is not None:
            cutoff = now - self.ttl_seconds
            self._entries = {h: t for h, t in self._entries.items() if t >= cutoff}
        if len(self._entries) > self._next_purge and self._prev is not None:
            chain = set(self._prev.hashes)
            self._entries = {h: t for h, t in self._entries.items() if h in chain}
        self._next_purge = max(_PURGE_START, 2 * len(self._entries))


def _short(key: str) -> str:
    return f"key {key[:8]}…" if key else "no tools"


def _describe(roles: list[str] | None, keys: Sequence[str], i: int) -> str:
    if i >= len(keys):
        return "nothing (the list ended)"
    role = roles[i] if roles is not None and i < len(roles) else None
    return f"{role!r} key {keys[i][:8]}…" if role else f"key {keys[i][:8]}…"
