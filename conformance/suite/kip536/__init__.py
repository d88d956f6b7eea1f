"""KIP-536 (broker start time, a proposal: KIP-536.*). Where the target does not serve the tagged
start time, tests raise ProposalAbsent (never FAIL)."""
