"""The words of a cache hit, made from the figures they describe.

Nine requests in ten of a long replay are hits, each with its sentence ("hit: read 42,552 of
43,055 tokens (messages 0–199), wrote 503"): 4.6 MiB of a 10,000-turn replay's trace, and the
formatting a measurable part of the cache model's time. The sentence says nothing the figures
beside it (read, write, uncached, the first block not served) do not, so the simulator and the
trace hold a :class:`HitWords` in its place and make the sentence when it is read
(:class:`inspector.cache.simulator.CacheResult`, :class:`inspector.trace.model.CacheInfo`).
"""

from __future__ import annotations


def detail(read: int, total: int, served: int, write: int, steps: str = "") -> str:
    """What a request read and wrote, in words: ``read R of T tokens (messages 0–S), wrote W``,
    and ``steps`` (the profile's rounding, e.g. "128-token steps from 1,024") after anything read."""
    parts = [f"read {read:,} of {total:,} tokens"]
    if served and read:
        parts[0] += f" (messages 0–{served - 1})" if served > 1 else " (message 0)"
    if write:
        parts.append(f"wrote {write:,}")
    if steps and read:
        parts.append(steps)
    return ", ".join(parts)


class HitWords:
    """A hit's reason not yet in words: ``"hit: " + detail(...)`` of the read, write and uncached
    figures it sits with, served up to their first block not served (so that is never None)."""

    __slots__ = ("steps",)

    def __init__(self, steps: str = "") -> None:
        self.steps = steps

    def words(self, read: int, write: int, uncached: int, break_index: int) -> str:
        return "hit: " + detail(read, read + write + uncached, break_index, write, self.steps)

    def __repr__(self) -> str:
        return f"HitWords({self.steps!r})"
