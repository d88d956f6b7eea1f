"""The transaction coordinator (KIP-98): transactional ids, epochs, ``__transaction_state``."""
