"""KIP-590 (forwarding to the controller, Envelope: KIP-590.*)."""
