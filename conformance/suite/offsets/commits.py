"""Moved to :mod:`conformance.suite.groups.commits` (the offsets package imports the groups
package, never the reverse). This name remains only for code written before the move; import
the groups module instead."""

from conformance.suite.groups.commits import (  # noqa: F401
    Fetched,
    Offsets,
    Partition,
    commit,
    commit_body,
    fetch,
    fetch_body,
)
