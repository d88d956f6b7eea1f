"""Security of the reference nodes: SASL on listeners, the ACL authorizer, request authorisation.

``settings`` (the config section), ``sasl`` (PLAIN, SCRAM-SHA-256), ``acl`` (Kafka's ACL model),
``authorizer`` (the node's authorizer over the controller's or broker's ACL view),
``authorize`` (which check each API needs, applied before its handler), ``inter_node`` (the
credentials a node presents to other nodes).
"""
