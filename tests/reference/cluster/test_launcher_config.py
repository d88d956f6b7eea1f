"""How the launcher composes each node's configuration from its three override tables."""

from __future__ import annotations

from pathlib import Path

from reference_impl.launcher import Cluster


def test_a_roles_settings_sections_keep_every_nodes_other_sections(tmp_path: Path) -> None:
    """A controller's group bounds once replaced every node's settings, so the faulty
    reference's controller fault (unclean election) was silently off."""
    cluster = Cluster(
        data_dir=tmp_path,
        brokers=1,
        controllers=1,
        overrides={"settings": {"faults": {"unclean_leader_election": True}}},
        controller_overrides={"settings": {"groups": {"consumer_min_session_timeout_ms": 1000}}},
        broker_overrides={"settings": {"faults": {"forget_log_on_start": True}}},
    )
    (controller,) = cluster.controller_nodes()
    (broker,) = cluster.broker_nodes()
    assert controller.config.settings["faults"] == {"unclean_leader_election": True}
    assert controller.config.settings["groups"] == {"consumer_min_session_timeout_ms": 1000}
    # a section both give is the role's
    assert broker.config.settings["faults"] == {"forget_log_on_start": True}
