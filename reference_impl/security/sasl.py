"""SASL on a listener: PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (via ``scramp``), with Kafka's
exchange rules.

A connection to a SASL listener starts unauthenticated as ``User:ANONYMOUS``; the listener then
serves only ApiVersions, SaslHandshake and SaslAuthenticate (``net/listener.py``). The exchange
is Kafka's (``SaslServerAuthenticator``):

- SaslHandshake (v1 only: v0, followed by raw tokens outside Kafka's framing, is deprecated and
  not offered; clients pick v1 from ApiVersions) names the mechanism; one that is not enabled
  gets UNSUPPORTED_SASL_MECHANISM (33) listing the enabled ones, then the connection is closed;
  a second handshake during an exchange closes it;
- SaslAuthenticate carries the mechanism's tokens; a SaslAuthenticate before any handshake
  closes the connection; wrong credentials get SASL_AUTHENTICATION_FAILED (58) with Kafka's
  message, then the connection is closed; success makes the session ``User:<username>`` and only
  then authenticated; v1+ answers carry SessionLifetimeMs (0 unless ``session_lifetime_ms``,
  for the ``session_lifetime_mechanisms`` if named);
- with a session lifetime, the session stops counting as authenticated when it expires (the
  listener then closes on the next request) unless the client re-authenticates (KIP-368: a new
  handshake with the same mechanism, ending in the same principal);
- on a listener without SASL, or after authentication without re-authentication enabled, the
  SASL APIs are answered ILLEGAL_SASL_STATE (34), as Kafka's request handler does.
"""

from __future__ import annotations

import base64
import hmac
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from scramp import ScramMechanism

from conformance.protocol import ErrorCode
from reference_impl.net.listener import CLOSE, Security, Session
from reference_impl.security.scram import Scram
from reference_impl.security.settings import PLAIN, SCRAM_MECHANISMS, SecuritySettings

ANONYMOUS = "User:ANONYMOUS"
AFTER_AUTHENTICATION = "SaslAuthenticate request received after successful authentication"


_UNKNOWN_USER = "Authentication failed: Invalid user credentials"
_NONE_HELD: dict = {}


class SaslFailure(Exception):
    """Wrong credentials or a malformed token; the message is what the client is told."""


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


class Credentials:
    """The users a node knows: PLAIN passwords, and each SCRAM's credentials derived from them
    once."""

    def __init__(
        self, users: dict[str, str], iterations: int = 4096, *, any_password: bool = False
    ) -> None:
        #: the ``accept_wrong_password`` fault (settings.py): any password of a known user
        self.any_password = any_password
        self._passwords = {u: p.encode("utf-8") for u, p in users.items()}
        self.mechanisms = {m: ScramMechanism(m) for m in SCRAM_MECHANISMS}
        self._scram: dict[tuple[str, str], ScramCredential] = {}
        for name, mechanism in self.mechanisms.items():
            for user, password in users.items():
                salt, stored, server, i = mechanism.make_auth_info(
                    password, iteration_count=iterations
                )
                self._scram[name, user] = ScramCredential(salt, stored, server, i)

    def check_password(self, username: str, password: bytes) -> bool:
        expected = self._passwords.get(username)
        # compare even for unknown users, so that timing says nothing about who exists
        ok = hmac.compare_digest(expected or b"\0" * 32, password) or self.any_password
        return expected is not None and ok

    def any_password_of(self, username: str | None) -> bool:
        """The ``accept_wrong_password`` fault, for the configured users only (a credential of
        the cluster metadata, SECURITY.R11's, keeps its password)."""
        return self.any_password and username in self._passwords

    def scram(
        self, username: str, mechanism: str = SCRAM_MECHANISMS[0], held: Scram = _NONE_HELD
    ) -> ScramCredential | None:
        """The user's credential: from the cluster metadata's ``held`` (KIP-554) first, else
        the configured one."""
        stored = held.get(username, _NONE_HELD).get(mechanism)
        if stored is not None:
            return ScramCredential(
                base64.b64decode(stored["salt"]),
                base64.b64decode(stored["stored_key"]),
                base64.b64decode(stored["server_key"]),
                int(stored["iterations"]),
            )
        return self._scram.get((mechanism, username))


class MechanismServer:
    """One exchange of one mechanism: ``step`` takes a client token and returns the server's
    token; ``username`` is set once the exchange has succeeded."""

    name = ""
    username: str | None = None

    def step(self, token: bytes) -> bytes:
        raise NotImplementedError


def _credentials_message(mechanism: str) -> str:
    return (
        "Authentication failed during authentication due to invalid credentials with SASL "
        f"mechanism {mechanism}"
    )


class PlainServer(MechanismServer):
    """RFC 4616: ``[authzid] NUL authcid NUL passwd`` in one token."""

    name = PLAIN

    def __init__(self, credentials: Credentials) -> None:
        self.credentials = credentials

    def step(self, token: bytes) -> bytes:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise SaslFailure(_credentials_message(PLAIN))
        try:
            authzid, username, password = parts[0].decode(), parts[1].decode(), parts[2]
        except UnicodeDecodeError:
            raise SaslFailure(_credentials_message(PLAIN)) from None
        if not username:
            raise SaslFailure("Authentication failed: username not specified")
        if not password:
            raise SaslFailure("Authentication failed: password not specified")
        if not self.credentials.check_password(username, password):
            raise SaslFailure("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslFailure(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self.username = username
        return b""


class ScramServer(MechanismServer):
    """RFC 5802/7677 through scramp: client-first, server-first, client-final, server-final;
    SCRAM-SHA-256 or SCRAM-SHA-512."""

    def __init__(
        self,
        credentials: Credentials,
        mechanism: str = SCRAM_MECHANISMS[0],
        held: Scram = _NONE_HELD,
    ) -> None:
        self.name = mechanism
        self.credentials = credentials
        self.held = held
        self._user: str | None = None
        self._server = credentials.mechanisms[mechanism].make_server(self._auth_info)
        self._round = 0
        self._unknown_user = False

    def _auth_info(self, username: str) -> tuple[bytes, bytes, bytes, int]:
        cred = self.credentials.scram(username, self.name, self.held)
        if cred is None:
            self._unknown_user = True
            raise SaslFailure(_UNKNOWN_USER)
        self._user = username
        return cred.salt, cred.stored_key, cred.server_key, cred.iterations

    def step(self, token: bytes) -> bytes:
        self._round += 1
        try:
            message = token.decode("utf-8")
            if self._round == 1:
                self._server.set_client_first(message)
                return self._server.get_server_first().encode()
            if self._round == 2:
                self._server.set_client_final(message)
                final = self._server.get_server_final()
                self.username = self._user
                return final.encode()
        except Exception:
            if self._round == 2 and self.credentials.any_password_of(self._user):
                self.username = self._user  # the fault: success, with a signature of nothing
                return b"v=" + base64.b64encode(bytes(32))
            # scramp may wrap what the credential lookup raised
            reason = _UNKNOWN_USER if self._unknown_user else _credentials_message(self.name)
            raise SaslFailure(reason) from None
        raise SaslFailure(_credentials_message(self.name))


class SaslSession(Session):
    """A connection of a SASL listener: authenticated only once an exchange has succeeded (and,
    with a session lifetime, until it expires)."""

    def __init__(self, security: SaslSecurity) -> None:
        #: the ``serve_before_authentication`` fault: served as ANONYMOUS from the start
        self._authenticated = security.serve_unauthenticated
        super().__init__(principal=ANONYMOUS, authenticated=self._authenticated)
        self.security = security
        self.exchange: MechanismServer | None = None
        self.expires_at: float | None = None
        self.reauthenticating = False

    @property  # type: ignore[override]
    def authenticated(self) -> bool:
        if not self._authenticated:
            return False
        if self.security.keep_expired:  # the ``ignore_session_lifetime`` fault (settings.py)
            return True
        return self.expires_at is None or time.monotonic() < self.expires_at

    @authenticated.setter
    def authenticated(self, value: bool) -> None:
        self._authenticated = value


class SaslSecurity(Security):
    """The listener hook of a SASL_PLAINTEXT listener."""

    def __init__(
        self,
        mechanisms: Iterable[str],
        credentials: Credentials,
        *,
        session_lifetime_ms: int = 0,
        lifetime_mechanisms: Iterable[str] | None = None,
        serve_unauthenticated: bool = False,
        accept_any_mechanism: bool = False,
        keep_expired: bool = False,
    ) -> None:
        self.serve_unauthenticated = serve_unauthenticated
        self.keep_expired = keep_expired
        self.accept_any_mechanism = accept_any_mechanism
        self.mechanisms = list(mechanisms)
        self.credentials = credentials
        self.session_lifetime_ms = session_lifetime_ms
        #: the mechanisms whose sessions have that lifetime (None: all), as Kafka's
        #: listener.name.L.M.connections.max.reauth.ms sets it per mechanism
        self.lifetime_mechanisms = None if lifetime_mechanisms is None else set(lifetime_mechanisms)

    def lifetime_ms(self, mechanism: str | None) -> int:
        """The session lifetime of an exchange of ``mechanism`` (0: none, no re-authentication)."""
        if self.lifetime_mechanisms is not None and mechanism not in self.lifetime_mechanisms:
            return 0
        return max(self.session_lifetime_ms, 0)

    @classmethod
    def from_settings(cls, settings: SecuritySettings) -> SaslSecurity:
        return cls(
            settings.sasl_mechanisms,
            Credentials(
                settings.users,
                settings.scram_iterations,
                any_password="accept_wrong_password" in settings.faults,
            ),
            session_lifetime_ms=settings.session_lifetime_ms,
            lifetime_mechanisms=settings.session_lifetime_mechanisms,
            serve_unauthenticated="serve_before_authentication" in settings.faults,
            accept_any_mechanism="accept_any_mechanism" in settings.faults,
            keep_expired="ignore_session_lifetime" in settings.faults,
        )

    def new_session(self) -> Session:
        return SaslSession(self)

    def exchange(self, mechanism: str, held: Scram = _NONE_HELD) -> MechanismServer:
        if mechanism == PLAIN:
            return PlainServer(self.credentials)
        return ScramServer(self.credentials, mechanism, held)


def _close_after(session: Session) -> None:
    session.close_after_response = True


def handshake(session: Session, body: dict[str, Any], held: Scram = _NONE_HELD) -> Any:
    """The SaslHandshake answer (or CLOSE) for ``session``; ``held``: the SCRAM credentials of
    the node's metadata (``scram.scram_view``)."""
    if not isinstance(session, SaslSession):
        return {"ErrorCode": ErrorCode.ILLEGAL_SASL_STATE, "Mechanisms": []}
    security = session.security
    mechanism = body["Mechanism"]
    if session.exchange is not None:
        return CLOSE  # a second handshake in one exchange
    if session.authenticated and session.mechanism is not None:  # (not the fault's ANONYMOUS)
        if security.lifetime_ms(session.mechanism) <= 0:
            return {"ErrorCode": ErrorCode.ILLEGAL_SASL_STATE, "Mechanisms": []}
        if mechanism != session.mechanism:
            _close_after(session)
            return {
                "ErrorCode": ErrorCode.ILLEGAL_SASL_STATE,
                "Mechanisms": list(security.mechanisms),
            }
        session.reauthenticating = True
    if mechanism not in security.mechanisms:
        _close_after(session)
        if security.accept_any_mechanism:  # the fault (settings.py)
            return {"ErrorCode": 0, "Mechanisms": []}
        return {
            "ErrorCode": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
            "Mechanisms": list(security.mechanisms),
        }
    session.exchange = security.exchange(mechanism, held)
    session.mechanism = mechanism
    return {"ErrorCode": 0, "Mechanisms": list(security.mechanisms)}


def authenticate(session: Session, body: dict[str, Any], version: int) -> Any:
    """The SaslAuthenticate answer (or CLOSE) for ``session``."""
    if not isinstance(session, SaslSession):
        return {"ErrorCode": ErrorCode.ILLEGAL_SASL_STATE, "ErrorMessage": AFTER_AUTHENTICATION}
    exchange = session.exchange
    if exchange is None:
        if session.authenticated:
            return {"ErrorCode": ErrorCode.ILLEGAL_SASL_STATE, "ErrorMessage": AFTER_AUTHENTICATION}
        return CLOSE  # SaslAuthenticate before any handshake
    try:
        token = exchange.step(body["AuthBytes"])
        if exchange.username is not None:
            principal = f"User:{exchange.username}"
            if session.reauthenticating and principal != session.principal:
                raise SaslFailure(
                    f"Cannot change principals during re-authentication from "
                    f"{session.principal}: {principal}"
                )
    except SaslFailure as e:
        session.exchange = None
        session.authenticated = False
        _close_after(session)
        return {
            "ErrorCode": ErrorCode.SASL_AUTHENTICATION_FAILED,
            "ErrorMessage": str(e),
            "AuthBytes": b"",
        }
    answer: dict[str, Any] = {"ErrorCode": 0, "ErrorMessage": None, "AuthBytes": token}
    if exchange.username is None:
        return answer  # more rounds to come
    session.exchange = None
    session.reauthenticating = False
    session.principal = f"User:{exchange.username}"
    lifetime = session.security.lifetime_ms(exchange.name)
    session.expires_at = time.monotonic() + lifetime / 1000 if lifetime > 0 else None
    session.authenticated = True
    if version >= 1:
        answer["SessionLifetimeMs"] = max(lifetime, 0)
    return answer
