"""SECURITY: SASL authentication (and, to come, ACL authorization) on a secured target."""
