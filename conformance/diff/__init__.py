"""Differential mode: the same request stream sent to two targets, their answers compared.

``kafka-conformance diff --target reference --target kafka:4.4.0`` starts the first target,
sends it the spec-derived request stream (the edges and hypothesis examples of the suite's
spec-derived tests, at the run's seed) and records every request and answer; then it starts the
second target set up alike (same broker count) and replays the recorded requests, byte for byte
the same values. Each pair of answers is compared field by field after the mask
(``mask.json``: what legitimately differs, each entry with its reason; every masked value is
counted and reported, none silently).

    stream.py    the request stream: which (API, version) pairs, which requests, names made alike
    mask.py      the mask file's loader and matcher
    compare.py   field-by-field comparison of two decoded answers
    runner.py    start, send, record, replay, stop; the outputs (lines, summary, diff.json)
    cli.py       the ``diff`` subcommand
"""
