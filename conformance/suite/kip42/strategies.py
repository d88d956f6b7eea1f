"""Hypothesis strategies of the KIP-42 tests: interceptor chains and the records they see."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hypothesis import strategies as st

from conformance.protocol.records import Header

if TYPE_CHECKING:
    pass


# --- strategies --------------------------------------------------------------------------------


def chains(behaviours: Sequence[str], max_size: int = 4) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(behaviours), min_size=1, max_size=max_size)


def items(max_size: int = 6) -> st.SearchStrategy[list[tuple[str | None, list]]]:
    """(key, value) pairs: keys nullable text, values JSON lists."""
    key = st.none() | st.text("abcxyz0123", min_size=0, max_size=6)
    value = st.lists(st.integers(-1000, 1000) | st.text("pqrs", max_size=4), max_size=3)
    return st.lists(st.tuples(key, value), min_size=1, max_size=max_size)


def raw_records(max_size: int = 8):
    """(key, value, headers) in bytes, with nulls where Kafka allows them."""
    data = st.none() | st.binary(max_size=40)
    header = st.builds(Header, st.text("hkv-", min_size=1, max_size=5), data)
    return st.lists(
        st.tuples(data, data, st.lists(header, max_size=3).map(tuple)),
        min_size=1,
        max_size=max_size,
    )
