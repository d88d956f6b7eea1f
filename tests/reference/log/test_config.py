"""LogConfig.with_topic_configs is memoised: equal inputs, equal answers, never another base's."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reference_impl.log.config import TOPIC_CONFIGS, LogConfig

NAMED = sorted(n for n, attr in TOPIC_CONFIGS.items() if attr is not None)
CONFIGS = st.dictionaries(
    st.sampled_from([*NAMED, "cleanup.policy", "message.timestamp.type", "unknown.name"]),
    st.one_of(st.none(), st.integers(1, 10**6).map(str)),
    max_size=6,
)


@given(CONFIGS, st.integers(1, 10**9))
def test_memoised_config_is_the_field_by_field_one(configs: dict, segment_bytes: int) -> None:
    base = LogConfig(segment_bytes=segment_bytes)
    got = base.with_topic_configs(configs)
    for name, value in configs.items():
        attr = TOPIC_CONFIGS.get(name)
        if attr is not None and value is not None:
            assert getattr(got, attr) == int(value), name
    untouched = {TOPIC_CONFIGS.get(n) for n, v in configs.items() if v is not None}
    if "segment_bytes" not in untouched:
        assert got.segment_bytes == segment_bytes  # the base's, not a cached other base's
    assert got == base.with_topic_configs(dict(reversed(list(configs.items()))))


def test_policy_and_timestamp_type_are_read() -> None:
    cfg = LogConfig().with_topic_configs(
        {"cleanup.policy": "compact", "message.timestamp.type": "LogAppendTime"}
    )
    assert not cfg.delete_retention and cfg.log_append_time
    assert LogConfig().with_topic_configs({}) == LogConfig()
