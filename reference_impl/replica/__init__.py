"""Partitions on a broker: leader/follower, ISR, high watermark, fetchers (the data plane).

``api.py`` is the interface the broker's control side calls.
"""
