"""Cache simulator: reads, writes and the reason for every miss, per provider profile."""

from __future__ import annotations

import time
from itertools import accumulate

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.cache.simulator import CacheSimulator


def blocks(n: int, tokens: int = 500, prefix: str = "m") -> tuple[list[str], list[int]]:
    return [f"{prefix}{i}" for i in range(n)], [tokens] * n


def run(sim: CacheSimulator, keys, toks, t=None, **kw):
    return sim.simulate(block_keys=list(keys), block_tokens=list(toks), timestamp=t, **kw)


# -- Anthropic ------------------------------------------------------------------------


def test_cold_start_writes_the_prefix():
    sim = CacheSimulator("anthropic", model="claude-sonnet-4-5")
    keys, toks = blocks(4)
    res = run(sim, keys, toks, 0.0, tools_key="tools-a", tools_tokens=300)
    assert res.reason_kind == "cold"
    assert "cold start: first request" in res.reason
    assert (res.read, res.write, res.uncached, res.total) == (0, 2300, 0, 2300)
    assert res.break_index == 0


def test_append_only_growth_hits_and_writes_the_tail():
    sim = CacheSimulator("anthropic", model="claude-sonnet-4-5")
    keys, toks = blocks(12)
    run(sim, keys[:8], toks[:8], 0.0)
    res = run(sim, keys[:10], toks[:10], 30.0)
    assert res.reason_kind == "hit"
    assert (res.read, res.write, res.uncached) == (4000, 1000, 0)
    assert res.break_index == 8  # the first new message is the first one not served
    assert res.prefix_tokens == 4000 and res.diverge_index is None
    same = run(sim, keys[:10], toks[:10], 40.0)
    assert (same.read, same.write, same.break_index, same.reason_kind) == (5000, 0, None, "hit")


def test_prefix_break_in_the_middle_names_the_block():
    sim = CacheSimulator("anthropic", model="claude-sonnet-4-5")
    keys, toks = blocks(42, 100)
    toks[0] = 1500  # a system prompt above the 1,024-token minimum gets its own entry
    roles = ["system"] + ["user", "assistant", "tool"] * 14
    run(sim, keys, toks, 0.0, block_roles=roles[:42])
    changed = keys[:7] + ["edited"] + keys[8:]
    res = run(sim, changed, toks, 10.0, block_roles=roles[:42])
    assert res.reason_kind == "prefix_break"
    assert res.diverge_index == 7 and res.region == "message"
    assert "prefix broke at message 7 of 42" in res.reason
    assert f"was {roles[7]!r} key m7" in res.reason and "now" in res.reason
    # Hermes' breakpoints sit on the system message and the last 3: only the system entry is in reach.
    assert res.read == 1500 and res.break_index == 1
    assert res.prefix_tokens == 1500 + 600


def test_system_and_tools_changes_are_named():
    sim = CacheSimulator("anthropic")
    keys, toks = blocks(5, 600)
    run(sim, keys, toks, 0.0, tools_key="t1", tools_tokens=100)
    res = run(sim, ["new-system"] + keys[1:], toks, 1.0, tools_key="t1", tools_tokens=100)
    assert (res.reason_kind, res.region, res.diverge_index) == ("prefix_break", "system", 0)
    assert "the system message" in res.reason
    res = run(sim, ["new-system"] + keys[1:], toks, 2.0, tools_key="t2", tools_tokens=100)
    assert (res.reason_kind, res.region, res.read) == ("prefix_break", "tools", 0)
    assert "tool schemas" in res.reason


def test_ttl_lapse_from_timestamps_and_refresh_on_hit():
    sim = CacheSimulator("anthropic", model="claude-sonnet-4-5")
    keys, toks = blocks(6)
    run(sim, keys[:4], toks[:4], 1000.0)
    assert run(sim, keys[:4], toks[:4], 1299.0).reason_kind == "hit"  # 299 s: alive
    # Used at 1299, so alive until 1599 even though written at 1000 (refreshed on hit).
    assert run(sim, keys[:5], toks[:5], 1590.0).reason_kind == "hit"
    res = run(sim, keys[:6], toks[:6], 1590.0 + 412.0)
    assert res.reason_kind == "ttl"
    assert res.reason.startswith("TTL lapsed: 412 s since last use > 300 s")
    assert (res.read, res.write) == (0, 3000)


def test_requests_before_the_first_timestamp_are_not_stamped_at_the_epoch():
    sim = CacheSimulator("anthropic", model="claude-sonnet-4-5")
    keys, toks = blocks(6)
    run(sim, keys[:4], toks[:4], None)  # a transcript whose first exchange has no times
    res = run(sim, keys[:5], toks[:5], 1_700_000_070.0)
    assert res.reason_kind == "hit", res.reason
    assert run(sim, keys[:6], toks[:6], 1_700_000_070.0 + 301).reason_kind == "ttl", "the clock runs from the first time"


def test_one_hour_ttl():
    sim = CacheSimulator("anthropic", ttl="1h", model="claude-opus-4-5")
    keys, toks = blocks(10, 1000)
    first = run(sim, keys[:8], toks[:8], 0.0)
    assert first.write == 8000 and first.write_1h == 8000
    res = run(sim, keys, toks, 1800.0)  # 30 minutes later: a 5m entry would be gone
    assert res.reason_kind == "hit" and res.read == 8000 and res.write_1h == 2000
    assert run(sim, keys, toks, 1800.0 + 3601).reason_kind == "ttl"
    # Opus 4.5 prices: $5 input, $10 per MTok 1h write, $0.50 read, output $25.
    assert sim.cost(read=1_000_000, write=1_000_000, uncached=0, output_tokens=0) == pytest.approx(10.5)


def test_cost_five_minutes_and_unknown_model():
    sim = CacheSimulator("anthropic", model="claude-opus-4-5")
    assert sim.cost(1_000_000, 1_000_000, 1_000_000, 1_000_000) == pytest.approx(0.5 + 6.25 + 5 + 25)
    assert sim.cost(1, 1, 1, 1, model="mystery-model") is None
    # A model without explicit cache prices uses the profile multipliers on base input ($3 Sonnet).
    assert sim.cost(1_000_000, 1_000_000, 0, 0, model="claude-sonnet-4-5") == pytest.approx(0.3 + 3.75)


def test_below_minimum_caches_nothing():
    sim = CacheSimulator("anthropic", model="claude-opus-4-5")  # minimum 4096
    keys, toks = blocks(10, 500)
    cold = run(sim, keys[:6], toks[:6], 0.0)
    assert (cold.reason_kind, cold.write) == ("cold", 0)
    assert "below the 4,096-token minimum" in cold.reason
    res = run(sim, keys[:7], toks[:7], 5.0)  # 3,500 tokens: still below
    assert res.reason_kind == "below_minimum" and (res.read, res.write, res.uncached) == (0, 0, 3500)
    assert "4,096-token minimum" in res.reason
    res = run(sim, keys[:10], toks[:10], 10.0)  # 5,000: now written, but nothing could be read
    assert res.reason_kind == "below_minimum" and (res.read, res.write) == (0, 5000)
    assert run(sim, keys[:10], toks[:10], 11.0).reason_kind == "hit"


@pytest.mark.parametrize(("appended", "kind"), [(22, "hit"), (23, "lookback")])
def test_lookback_of_20_blocks(appended, kind):
    sim = CacheSimulator("anthropic", model="claude-sonnet-4-5")
    keys, toks = blocks(40 + appended, 100)
    toks[0] = 1500
    run(sim, keys[:40], toks[:40], 0.0)
    res = run(sim, keys, toks, 1.0)
    # The earliest of the last 3 breakpoints is at block n-3; it looks back 20 blocks, to prefix n-22.
    assert res.reason_kind == kind
    if kind == "hit":
        assert res.read == 1500 + 3900 and res.break_index == 40
    else:
        assert res.read == 1500 and res.break_index == 1  # only the system entry is within reach
        assert "lookback" in res.reason


def test_explicit_breakpoints_and_disabled_ttl():
    sim = CacheSimulator("anthropic")
    keys, toks = blocks(8, 500)
    res = run(sim, keys, toks, 0.0, breakpoints=[2, 5])
    assert res.write == 3000 and res.uncached == 1000
    for falsy in ("", False, 0, None, "off"):
        off = CacheSimulator("anthropic", ttl=falsy)
        res = run(off, keys, toks, 0.0)
        assert (res.reason_kind, res.read, res.write, res.uncached) == ("disabled", 0, 0, 4000), falsy
    none = CacheSimulator("none")
    assert run(none, keys, toks).reason_kind == "disabled"


# -- OpenAI ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("matched", "cached"),
    [(1023, 0), (1024, 1024), (1151, 1024), (1152, 1152), (5000, 4992)],
)
def test_openai_1024_then_128_steps(matched, cached):
    sim = CacheSimulator("openai")
    run(sim, ["sys"], [matched], 0.0)
    res = run(sim, ["sys", "user"], [matched, 2000], 1.0)
    assert res.read == cached
    assert res.write == 0
    assert res.uncached == matched + 2000 - cached


def test_openai_short_request_is_not_cached():
    sim = CacheSimulator("openai")
    run(sim, ["a", "b"], [400, 400], 0.0)  # 800 < 1024: the provider keeps nothing
    res = run(sim, ["a", "b", "c"], [400, 400, 400], 1.0)
    assert res.read == 0 and res.reason_kind == "below_minimum"


def test_openai_matches_any_live_earlier_request_and_ttl():
    sim = CacheSimulator("openai")
    a = ["sys", "a1", "a2"]
    b = ["sys", "b1", "b2"]
    toks = [1000, 1000, 1000]
    run(sim, a, toks, 0.0)
    brk = run(sim, b, toks, 10.0)
    assert brk.reason_kind == "prefix_break" and brk.read == 0 and brk.diverge_index == 1
    back = run(sim, a, toks, 20.0)  # diverges from the previous request, but request 1 is still cached
    assert back.reason_kind == "hit" and back.read == 2944
    lapsed = run(sim, a, toks, 20.0 + 301)
    assert lapsed.reason_kind == "ttl" and lapsed.read == 0


def test_deepseek_profile_exact_prefix():
    sim = CacheSimulator("deepseek")
    run(sim, ["s", "u"], [100, 50], 0.0)
    res = run(sim, ["s", "u", "a"], [100, 50, 20], 60.0)
    assert (res.read, res.uncached, res.reason_kind) == (150, 20, "hit")


# -- Ideal ----------------------------------------------------------------------------


def test_ideal_is_the_common_prefix_with_no_rules():
    sim = CacheSimulator("ideal")
    keys, toks = blocks(6, 10)  # far below any provider minimum
    assert run(sim, keys[:4], toks[:4]).reason_kind == "cold"
    res = run(sim, keys[:6], toks[:6], 10_000_000.0)  # no TTL either
    assert (res.read, res.write, res.uncached, res.reason_kind) == (40, 0, 20, "hit")
    res = run(sim, keys[:2] + ["x"] + keys[3:], toks)
    assert (res.read, res.break_index, res.diverge_index, res.reason_kind) == (20, 2, 2, "prefix_break")
    assert sim.cost(1, 1, 1, 1, model="claude-opus-4-5") is None


# -- Invariants and performance -----------------------------------------------------------


@pytest.mark.parametrize("profile", ["anthropic", "openai", "deepseek", "ideal", "none"])
def test_tokens_always_add_up(profile):
    sim = CacheSimulator(profile, model="claude-sonnet-4-5")
    keys, toks = blocks(30, 137)
    for step in range(1, 30):
        ks = keys[:step] if step % 7 else ["swap"] + keys[1:step]
        res = run(sim, ks, toks[:step], step * 100.0, tools_key="t", tools_tokens=50)
        assert res.read + res.write + res.uncached == res.total == 50 + 137 * step
        assert min(res.read, res.write, res.uncached) >= 0
        assert res.reason_kind in {
            "hit",
            "cold",
            "ttl",
            "below_minimum",
            "prefix_break",
            "lookback",
            "disabled",
        }


def test_mismatched_lengths_are_an_error():
    with pytest.raises(ValueError):
        CacheSimulator("anthropic").simulate(block_keys=["a"], block_tokens=[1, 2])


@pytest.mark.parametrize("profile", ["anthropic", "openai"])
def test_long_session_cost_is_linear(profile):
    # 3,000 requests growing to 3,000 blocks each: O(blocks²) work would take minutes.
    sim = CacheSimulator(profile)
    keys = [f"k{i}" for i in range(3000)]
    toks = [200] * 3000
    start = time.perf_counter()
    for i in range(1, 3001):
        sim.simulate(block_keys=keys[:i], block_tokens=toks[:i], timestamp=float(i))
    assert time.perf_counter() - start < 10.0


class _FromScratch(CacheSimulator):
    """The same model without reusing the previous request's prefix hashes and token sums."""

    def _prefix_hashes(self, keys, tools_key, prev):
        hashes = [hash(("tools", tools_key))]
        for key in keys:
            hashes.append(hash((hashes[-1], key)))
        lcp = 0 if prev is None else next(
            (i for i, (a, b) in enumerate(zip(prev.keys, keys)) if a != b), min(len(prev.keys), len(keys)))
        return hashes, lcp

    @staticmethod
    def _token_sums(block_tokens, tools_tokens, prev, lcp):
        return list(accumulate(block_tokens, initial=tools_tokens))


_edits = st.lists(st.tuples(st.sampled_from(["append", "truncate", "replace", "tools", "wait"]),
                            st.integers(0, 40)), min_size=1, max_size=25)


@settings(max_examples=120, deadline=None)
@given(edits=_edits, profile=st.sampled_from(["anthropic", "openai", "deepseek", "ideal"]))
def test_reusing_the_previous_request_gives_the_same_answers_as_starting_over(edits, profile):
    # Keys identify content, so a block keeps its token count across requests.
    fast, slow = CacheSimulator(profile, model="claude-sonnet-4-5"), _FromScratch(profile, model="claude-sonnet-4-5")
    keys: list[str] = ["sys"]
    tools, now, fresh = "t0", 0.0, 0
    for op, n in edits:
        if op == "append":
            keys += [f"k{fresh + i}" for i in range(n % 6 + 1)]
        elif op == "truncate":
            keys = keys[: max(1, len(keys) - n % 5)]
        elif op == "replace" and len(keys) > 1:
            keys[1 + n % (len(keys) - 1)] = f"k{fresh}"
        elif op == "tools":
            tools = f"t{n % 2}"
        else:
            now += n * 30
        fresh += 10
        toks = [100 + (sum(map(ord, k)) * 37) % 900 for k in keys]
        a = fast.simulate(block_keys=tuple(keys), block_tokens=toks, tools_key=tools, tools_tokens=50, timestamp=now)
        b = slow.simulate(block_keys=list(keys), block_tokens=toks, tools_key=tools, tools_tokens=50, timestamp=now)
        assert a == b


# -- cache_ttl as configured ----------------------------------------------------------------


@pytest.mark.parametrize(("profile", "ttl", "warned"), [
    ("anthropic", "5m", None), ("anthropic", "1h", None), ("anthropic", False, None), ("anthropic", "", None),
    ("anthropic", "10m", "Hermes sends its default 5m"),
    ("openai", "5m", None), ("openai", "24h", None),
    ("openai", False, "cannot switch off"), ("openai", "2d", "not a retention"),
    ("ideal", "whatever", None),
])
def test_cache_ttl_warnings_say_what_the_simulation_does(profile, ttl, warned):
    from inspector.cache.rules import load_rules
    from inspector.cache.simulator import ttl_warning

    note = ttl_warning(load_rules().profile(profile), ttl)
    assert (note is None) if warned is None else (warned in note), note


def test_a_head_other_sessions_keep_warm_is_read_even_on_a_cold_start_and_never_lapses():
    from inspector.cache.simulator import CacheSimulator

    sim = CacheSimulator("anthropic", model="claude-opus-4-6")
    sim.keep_warm("tools+head", 5_000)
    first = sim.simulate(block_keys=["u1"], block_tokens=[300], tools_key="tools+head", tools_tokens=8_000, timestamp=0.0)
    assert (first.read, first.write, first.reason_kind) == (5_000, 3_300, "cold")
    later = sim.simulate(block_keys=["u1", "u2"], block_tokens=[300, 50], tools_key="tools+head", tools_tokens=8_000,
                         timestamp=7_200.0)  # two hours later: the session's own entries lapsed
    assert later.reason_kind == "ttl" and later.read == 5_000
    other = sim.simulate(block_keys=["u1"], block_tokens=[300], tools_key="other", tools_tokens=8_000, timestamp=7_201.0)
    assert other.read == 0, "only the head that is kept warm"


# -- a hit's words -------------------------------------------------------------------------


def test_a_hits_reason_is_held_as_words_to_make_and_reads_as_the_sentence_of_its_figures():
    from inspector.cache.reasons import HitWords
    from inspector.trace.model import CacheInfo

    sim = CacheSimulator("anthropic", model="claude-sonnet-4-5")
    keys, toks = blocks(12)
    run(sim, keys[:8], toks[:8], 0.0)
    res = run(sim, keys[:10], toks[:10], 30.0)
    assert type(res.reason_held) is HitWords  # no sentence made for the request
    assert res.reason == "hit: read 4,000 of 5,000 tokens (messages 0–7), wrote 1,000"
    info = CacheInfo(read=res.read, write=res.write, uncached=res.uncached, break_index=res.break_index,
                     reason=res.reason_held, reason_kind=res.reason_kind)
    assert info.reason == res.reason and info == CacheInfo(read=4000, write=1000, uncached=0, break_index=8,
                                                           reason=res.reason, reason_kind="hit")
    following = run(sim, keys[:11], toks[:11], 40.0)
    assert following.reason_held is res.reason_held  # one per wording, shared
    same = run(sim, keys[:11], toks[:11], 50.0)  # everything served: the words name no first block not served
    assert same.reason == "hit: read 5,500 of 5,500 tokens (messages 0–10)"


def test_an_automatic_caches_hit_names_its_steps_and_a_warm_heads_words_are_of_the_figures_before_it():
    sim = CacheSimulator("openai", model="gpt-4.1")
    keys, toks = blocks(6, 300)
    run(sim, keys[:4], toks[:4], 0.0)
    res = run(sim, keys[:6], toks[:6], 10.0)
    assert res.reason == "hit: read 1,152 of 1,800 tokens (messages 0–2), 128-token steps from 1,024"

    warm = CacheSimulator("openai", model="gpt-4.1")
    warm.keep_warm("head", 3_000)
    run(warm, ["m0"], [10], 0.0, tools_key="head", tools_tokens=3_050)
    res = run(warm, ["m0", "m1"], [10, 10], 30.0, tools_key="head", tools_tokens=3_050)
    assert (res.read, res.reason_kind) == (3_000, "hit")
    assert res.reason == ("hit: read 2,944 of 3,070 tokens, 128-token steps from 1,024; "
                          "3,000 head tokens read from a cache other sessions keep warm")
