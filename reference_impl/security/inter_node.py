"""The connections a node opens to other nodes, authenticated as this node's broker principal.

Kafka's brokers log in to other nodes' listeners with the inter-broker credentials; here the
``inter_node`` credentials of the ``security`` settings play that part, for the controller
channel, the controller's propagation to brokers and replica fetches. ``configure`` is called
once per node process (``security_hooks.authorizer_for``); without credentials ``connect`` is
plain ``Connection.open``, and so is a connection to a listener without SASL (its handshake
answer is ILLEGAL_SASL_STATE).

The credentials are per process on purpose: a node is one OS process, and every connection it
opens to another node is that node's broker identity.
"""

from __future__ import annotations

from conformance.client.sasl import SaslAuthenticationError, authenticate
from conformance.client.wire import Connection
from conformance.protocol import Codec, ErrorCode
from reference_impl.security.settings import ClientCredentials

_credentials: ClientCredentials | None = None


def configure(credentials: ClientCredentials | None) -> None:
    global _credentials
    _credentials = credentials


def credentials() -> ClientCredentials | None:
    return _credentials


async def connect(
    host: str,
    port: int,
    *,
    codec: Codec,
    client_id: str | None = "reference",
    timeout: float = 10.0,
) -> Connection:
    """A connection to another node, SASL-authenticated when inter-node credentials are set."""
    conn = await Connection.open(host, port, codec=codec, client_id=client_id, timeout=timeout)
    creds = _credentials
    if creds is None:
        return conn
    try:
        await authenticate(conn, creds.mechanism, creds.username, creds.password, timeout=timeout)
    except SaslAuthenticationError as e:
        if e.error_code == ErrorCode.ILLEGAL_SASL_STATE:
            return conn  # a listener without SASL answers so: this connection is as good as it gets
        await conn.close()
        raise
    except BaseException:
        await conn.close()
        raise
    return conn
