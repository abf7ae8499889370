"""One common-prefix rule for key lists, whatever sequence type holds them."""

import random

from inspector.trace.prefix import common_prefix_len


def straightforward(a, b) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def test_it_agrees_with_an_item_by_item_walk_on_random_lists():
    rng = random.Random(7)
    for _ in range(500):
        a = [rng.choice("abc") for _ in range(rng.randrange(12))]
        b = a[: rng.randrange(len(a) + 1)] + [rng.choice("abc") for _ in range(rng.randrange(6))]
        assert common_prefix_len(a, b) == straightforward(a, b)
        assert common_prefix_len(tuple(a), b) == straightforward(a, b)


def test_a_list_extending_another_shares_all_of_it():
    assert common_prefix_len(("k1", "k2"), ("k1", "k2", "k3")) == 2
    assert common_prefix_len((), ("k1",)) == 0
