"""The broker node: metadata cache, controller channel, lifecycle, forwarding."""
