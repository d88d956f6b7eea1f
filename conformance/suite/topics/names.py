"""Illegal topic names, drawn by hypothesis: the edge cases and names that break one rule."""

from __future__ import annotations

import string

from hypothesis import strategies as st

from conformance.suite.kit.safety import PREFIX

LEGAL = string.ascii_letters + string.digits + "._-"
MAX_LENGTH = 249

ILLEGAL_NAMES = st.one_of(
    st.sampled_from(["", ".", ".."]),
    st.integers(MAX_LENGTH + 1, MAX_LENGTH + 40).map(lambda n: PREFIX + "x" * (n - len(PREFIX))),
    st.tuples(
        st.text(LEGAL, max_size=6),
        st.characters(exclude_characters=LEGAL, codec="utf-8"),
        st.text(LEGAL, max_size=6),
    ).map(lambda t: PREFIX + "".join(t)),
)
