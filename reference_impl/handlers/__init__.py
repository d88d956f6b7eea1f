"""One module per API, named after the spec message; each exposes ``api(node) -> Api | None``.

``ROLES`` (default ``("broker",)``) says which node roles call ``api``; the listener type then
decides exposure per the spec's ``listeners`` (``reference_impl/net/listener.py``).
"""
