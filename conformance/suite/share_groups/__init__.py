"""SHARE-GROUPS: KIP-932 share groups on the wire."""
