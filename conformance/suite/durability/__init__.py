"""DURABILITY: what an acks=all acknowledgement promises when brokers crash, pause and come back."""
