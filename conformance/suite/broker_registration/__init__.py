"""Broker registration draft (BROKER-REGISTRATION.*): BrokerRegistration / BrokerHeartbeat on the
controller listener, the draft's states driven by a RuleBasedStateMachine built from
specs/models/. Tests here name BROKER-REGISTRATION requirement ids with
conformance.suite.kit.meta.conformance."""
