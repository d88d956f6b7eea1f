"""SASL authentication of a wire connection: SaslHandshake v1, then SaslAuthenticate rounds.

PLAIN sends ``NUL username NUL password`` in one round; SCRAM-SHA-256 and SCRAM-SHA-512 run
scramp's client through two rounds and verify the server's signature. A refused handshake or
failed round raises ``SaslAuthenticationError`` carrying Kafka's error code and message (the
server closes the connection after it, as Kafka does).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from conformance.client.wire import Connection, pick_version
from conformance.protocol import ApiKey, Codec

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
MECHANISMS = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512)
#: the ScramMechanism codes of DescribeUserScramCredentials/AlterUserScramCredentials (KIP-554)
SCRAM_TYPES = {1: SCRAM_SHA_256, 2: SCRAM_SHA_512}
#: the iteration counts a SCRAM credential may have, both mechanisms (Kafka's ScramMechanism)
SCRAM_ITERATIONS = (4096, 16384)
_HASHES = {SCRAM_SHA_256: "sha256", SCRAM_SHA_512: "sha512"}


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """RFC 5802's Hi(password, salt, i): what an AlterUserScramCredentials upsertion carries."""
    return hashlib.pbkdf2_hmac(_HASHES[mechanism], password.encode(), salt, iterations)


def scram_upsertion(name: str, password: str, mechanism: int, iterations: int) -> dict:
    """An AlterUserScramCredentials upsertion as a client makes it: a fresh 16-byte salt and
    the salted password (a code that is no SCRAM mechanism is salted as SHA-256: it is there to
    be refused)."""
    salt = os.urandom(16)
    salted = salted_password(SCRAM_TYPES.get(mechanism, SCRAM_SHA_256), password, salt, iterations)
    return {
        "Name": name,
        "Mechanism": mechanism,
        "Iterations": iterations,
        "Salt": salt,
        "SaltedPassword": salted,
    }


class SaslAuthenticationError(ConnectionError):
    """The server refused the mechanism or the credentials (or its answer did not verify)."""

    def __init__(self, message: str, error_code: int | None = None) -> None:
        super().__init__(message)
        self.error_code = error_code


@dataclass(frozen=True)
class Authenticated:
    mechanism: str
    #: the server's enabled mechanisms, from the handshake
    enabled: tuple[str, ...]
    #: SessionLifetimeMs of the last round (0: no re-authentication required)
    session_lifetime_ms: int


async def authenticate(
    conn: Connection,
    mechanism: str,
    username: str,
    password: str,
    *,
    versions: dict[int, tuple[int, int]] | None = None,
    timeout: float = 10.0,
) -> Authenticated:
    """Authenticate ``conn``; ``versions`` is the peer's ApiVersions (asked when None)."""
    if mechanism not in MECHANISMS:
        raise ValueError(
            f"unsupported SASL mechanism {mechanism!r} (known: {', '.join(MECHANISMS)})"
        )
    if versions is None:
        versions = await conn.api_versions()
    hv = pick_version(versions, conn.codec, ApiKey.SASL_HANDSHAKE)
    av = pick_version(versions, conn.codec, ApiKey.SASL_AUTHENTICATE)
    if hv is None or hv < 1 or av is None:
        raise SaslAuthenticationError("the server offers no SaslHandshake v1 / SaslAuthenticate")
    resp = await conn.request(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": mechanism}, timeout=timeout)
    enabled = tuple(resp.body["Mechanisms"])
    if resp.body["ErrorCode"] != 0:
        raise SaslAuthenticationError(
            f"SASL handshake for {mechanism} refused (error {resp.body['ErrorCode']}; "
            f"enabled: {', '.join(enabled) or 'none'})",
            resp.body["ErrorCode"],
        )

    async def round_trip(token: bytes) -> tuple[bytes, int]:
        r = await conn.request(ApiKey.SASL_AUTHENTICATE, av, {"AuthBytes": token}, timeout=timeout)
        if r.body["ErrorCode"] != 0:
            raise SaslAuthenticationError(
                r.body["ErrorMessage"] or f"SASL authentication failed ({r.body['ErrorCode']})",
                r.body["ErrorCode"],
            )
        return r.body["AuthBytes"], r.body.get("SessionLifetimeMs", 0)

    if mechanism == PLAIN:
        _, lifetime = await round_trip(b"\0" + username.encode() + b"\0" + password.encode())
        return Authenticated(mechanism, enabled, lifetime)
    # imported here: scramp (and its asn1crypto) is ~12 ms of every node's and worker's start,
    # and most connections never authenticate with SCRAM
    from scramp import ScramClient, ScramException

    client = ScramClient([mechanism], username, password)
    try:
        server_first, _ = await round_trip(client.get_client_first().encode())
        client.set_server_first(server_first.decode())
        server_final, lifetime = await round_trip(client.get_client_final().encode())
        client.set_server_final(server_final.decode())
    except (ScramException, UnicodeDecodeError) as e:
        raise SaslAuthenticationError(f"SCRAM exchange did not verify: {e}") from None
    return Authenticated(mechanism, enabled, lifetime)


async def open_authenticated(
    host: str,
    port: int,
    *,
    codec: Codec,
    mechanism: str,
    username: str,
    password: str,
    client_id: str | None = "kafka-conformance",
    timeout: float = 10.0,
) -> Connection:
    """A new connection, authenticated (closed again when authentication fails)."""
    conn = await Connection.open(host, port, codec=codec, client_id=client_id, timeout=timeout)
    try:
        await authenticate(conn, mechanism, username, password, timeout=timeout)
    except BaseException:
        await conn.close()
        raise
    return conn
