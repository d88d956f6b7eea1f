"""The cluster metadata's model, which the controller writes and the handlers of both roles
build records of: the image and its records (``image``), replica placement (``placement``).
Imports only the kernel and the leaves, so a handler needs nothing of the controller package."""
