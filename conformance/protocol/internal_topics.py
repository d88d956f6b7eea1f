"""The names of Kafka's internal topics, which both a broker (that creates and serves them) and
the suite (that looks them up, or must never touch them) need."""

#: group offsets and metadata
OFFSETS_TOPIC = "__consumer_offsets"
#: the transaction coordinators' state
TRANSACTION_STATE_TOPIC = "__transaction_state"
#: Metadata marks these internal and never auto-creates them for a client
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC})
