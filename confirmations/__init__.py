"""Hand confirmations on the wire: standalone scripts that send the requests themselves (the
project's codec and wire client, no suite code) to Apache Kafka's releases and to tansu, and
print what came back. Their output (``*.out`` beside each script) is the evidence cited by
requirement readings, truth-table rows and tests. Not shipped in the wheel; run from a checkout:
``.venv/bin/python -m confirmations.<script>`` (README.md)."""
