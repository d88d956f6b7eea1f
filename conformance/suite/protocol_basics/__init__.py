"""The wire protocol itself (PROTOCOL.*): framing, versions, headers and robustness, for every API
the specs define.

    test_spec_derived.py   every (API, version): generated valid requests answered well-formed
    test_api_versions.py   ApiVersions honesty, KIP-511's v0 error answer
    test_versions.py       versions outside the advertised range are refused
    test_headers.py        null client ids, unknown tagged fields, pipelining order
    test_robustness.py     malformed frames, oversize and negative sizes, abrupt disconnects
"""
