"""The browser's LRU of fetched remote payloads: bounded by bytes, least recently used dropped first."""
from __future__ import annotations

from app.byte_cache import ByteCache


def test_least_recently_used_goes_first_and_the_budget_holds():
    cache = ByteCache(max_bytes=10)
    cache.put("a", b"aaaa", 4)
    cache.put("b", b"bbbb", 4)
    assert cache.get("a") == b"aaaa"  # a is now the most recently used
    cache.put("c", b"cccc", 4)  # 12 bytes > 10: b, the least recently used, goes
    assert cache.get("b") is None
    assert cache.get("a") == b"aaaa" and cache.get("c") == b"cccc"
    assert cache.bytes_held == 8 and len(cache) == 2
    assert (cache.hits, cache.misses) == (3, 1)


def test_an_item_bigger_than_the_budget_is_not_kept_and_a_replaced_key_is_counted_once():
    cache = ByteCache(max_bytes=10)
    cache.put("a", b"aaaa", 4)
    cache.put("a", b"aaaaaa", 6)
    assert cache.bytes_held == 6 and cache.get("a") == b"aaaaaa"
    cache.put("huge", b"x" * 11, 11)
    assert cache.get("huge") is None and cache.get("a") == b"aaaaaa"


def test_a_smaller_limit_trims_and_zero_turns_the_cache_off():
    cache = ByteCache(max_bytes=12)
    for key in "abc":
        cache.put(key, key * 4, 4)
    cache.set_limit(5)
    assert [k for k in "abc" if cache.get(k) is not None] == ["c"] and cache.bytes_held == 4
    cache.set_limit(0)
    cache.put("d", "dddd", 4)
    assert len(cache) == 0 and cache.bytes_held == 0
