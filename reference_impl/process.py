"""What a node process shares with the launcher that starts it and with every part that may
stop it: a leaf module, so neither the launcher nor a subsystem imports ``node.py`` for them."""

from __future__ import annotations

#: names the node's stdin as its lifeline to the process that started it
LIFELINE_ENV = "KC_NODE_LIFELINE_FD"


class NodeFatal(Exception):
    """The node cannot go on; the message is the one-line reason printed on exit."""
