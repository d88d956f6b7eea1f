"""``python -m conformance``: the kafka-conformance command line."""

from conformance.cli import main

raise SystemExit(main())
