"""TOPICS: creating, deleting and growing topics, and what Metadata says of them."""
