"""A listener of a reference node: Kafka's framing, per-listener API exposure, in-order answers.

What Kafka does, and so what this does:
- an API that is not exposed on this listener (the spec's ``listeners``), or a version outside
  the advertised range, closes the connection — except ApiVersions, which answers an unknown
  version with UNSUPPORTED_VERSION (35) and a v0 body listing what is supported;
- a frame that does not parse closes that connection; other connections never notice;
- requests on one connection are answered one at a time, in order;
- before SASL authentication completes only ApiVersions and the SASL APIs are served.
"""

from __future__ import annotations

import asyncio
import logging
import re
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.protocol import ApiKey, Codec, DecodeError, ErrorCode
from conformance.protocol.framing import (
    decode_header_prefix,
    encode_response,
    request_header_version,
)

log = logging.getLogger(__name__)

FAILED_AUTHENTICATION_CLOSE_DELAY = 0.1
_SIZE = struct.Struct(">i")
#: what ApiVersions v3+ accepts as a client software name and version (KIP-511)
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
_KEY_VERSION = struct.Struct(">hhi")


@dataclass
class Session:
    """What a connection has established: who it is, and whether SASL has completed."""

    principal: str = "User:ANONYMOUS"
    authenticated: bool = True
    mechanism: str | None = None
    state: dict[str, Any] = field(default_factory=dict)
    #: set by a handler whose answer must be the connection's last (failed SASL, as Kafka)
    close_after_response: bool = False


@dataclass
class RequestContext:
    listener: Listener
    api_key: int
    version: int
    header: dict
    session: Session
    client_address: str
    #: the raw request (header + body), for forwarding inside an Envelope
    raw: bytes = b""


Handler = Callable[[RequestContext, dict], Awaitable[dict | None]]


@dataclass(frozen=True)
class Api:
    """A served API: its handler and the versions this node serves (within the spec's range)."""

    key: int
    handler: Handler
    min_version: int | None = None
    #: None: every version of the spec; a handler not written for the newest ones declares the
    #: highest it serves (with the reason where it is set)
    max_version: int | None = None
    #: listener types it is exposed on besides its spec's ``listeners``: Kafka's KIP-932 APIs
    #: are "broker"-only, and the reference's brokers listen as "zkBroker" in either store
    also_on: tuple[str, ...] = ()


@dataclass(frozen=True)
class Features:
    """The feature levels ApiVersions v3+ advertises (KIP-584): what this node supports and the
    cluster's finalized levels. The reference finalizes them by configuration
    (``settings["features"]``); UpdateFeatures validates updates and changes no level."""

    supported: dict[str, tuple[int, int]] = field(default_factory=dict)
    finalized: dict[str, int] = field(default_factory=dict)
    #: Kafka's epoch is the metadata offset of the last feature change; -1: none finalized
    epoch: int = -1

    def body(self, version: int) -> dict[str, Any]:
        """ApiVersions v``version``'s feature fields (v3+). v3 leaves out the supported features
        whose range starts at 0, which older clients cannot take (KIP-1022), as Kafka does."""
        return {
            "SupportedFeatures": [
                {"Name": n, "MinVersion": lo, "MaxVersion": hi}
                for n, (lo, hi) in sorted(self.supported.items())
                if lo > 0 or version >= 4
            ],
            "FinalizedFeaturesEpoch": self.epoch if self.finalized else -1,
            "FinalizedFeatures": [
                {"Name": n, "MaxVersionLevel": level, "MinVersionLevel": level}
                for n, level in sorted(self.finalized.items())
            ],
        }


class Security:
    """The listener's authentication hook; the default authenticates everyone as ANONYMOUS."""

    def new_session(self) -> Session:
        return Session()


class Listener:
    def __init__(
        self,
        name: str,
        listener_type: str,
        codec: Codec,
        apis: list[Api],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        security: Security | None = None,
        max_request_size: int = 100 * 1024 * 1024,
        idle_timeout: float | None = None,
        features: Features | None = None,
        limits: dict[int, tuple[int, int]] | None = None,
        identity: Callable[[], tuple[str | None, int]] | None = None,
    ) -> None:
        """``limits``: the API ranges of the Kafka release this listener stands for (an API
        absent from them is not served, the others only where both ranges meet); None: all
        that the handlers serve. ``identity``: a broker's cluster id and node id, which
        ApiVersions v5 compares with the client's (a controller's listener has none)."""
        self.name, self.listener_type, self.codec = name, listener_type, codec
        self.host, self.port = host, port
        self.security = security or Security()
        self.max_request_size = max_request_size
        #: Kafka's connections.max.idle.ms, in seconds (None: never)
        self.idle_timeout = idle_timeout
        self.features = features or Features()
        self.identity = identity
        self.served: dict[int, Api] = {}
        self.ranges: dict[int, tuple[int, int]] = {}
        if not any(api.key == ApiKey.API_VERSIONS for api in apis):
            apis = [*apis, Api(ApiKey.API_VERSIONS, self._api_versions)]
        for api in apis:
            spec = codec.message(api.key, "request")
            if listener_type not in spec.listeners and listener_type not in api.also_on:
                continue
            # a handler serves every version of its spec unless it declares the highest it is
            # written for (issue 37: no Kafka 3.9 cap)
            lo = max(spec.valid_versions.lo, api.min_version or 0)
            hi = spec.valid_versions.hi
            if api.max_version is not None:
                hi = min(hi, api.max_version)
            if limits is not None:
                if api.key not in limits:
                    continue
                lo, hi = max(lo, limits[api.key][0]), min(hi, limits[api.key][1])
            if lo <= hi:
                self.served[api.key] = api
                self.ranges[api.key] = (lo, hi)
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task] = set()
        self.connections = 0

    async def _api_versions(self, ctx: RequestContext, body: dict) -> dict:
        if ctx.version >= 3 and not all(
            _SOFTWARE.fullmatch(body.get(f) or "")
            for f in ("ClientSoftwareName", "ClientSoftwareVersion")
        ):  # KIP-511: Kafka refuses a name or version outside its pattern, listing no API
            return {"ErrorCode": int(ErrorCode.INVALID_REQUEST), "ApiKeys": [], "ThrottleTimeMs": 0}
        if ctx.version >= 5 and self._elsewhere(body):
            code = int(ErrorCode.REBOOTSTRAP_REQUIRED)
            return {"ErrorCode": code, "ApiKeys": [], "ThrottleTimeMs": 0}
        body: dict[str, Any] = {
            "ErrorCode": 0,
            "ApiKeys": self.api_versions_body(),
            "ThrottleTimeMs": 0,
        }
        if ctx.version >= 3:
            body.update(self.features.body(ctx.version))
        return body

    def _elsewhere(self, body: dict) -> bool:
        """ApiVersions v5: a client that names the cluster id (and node id) it expects to find
        here, and finds another broker, must bootstrap again (REBOOTSTRAP_REQUIRED, listing no
        API). The node id is compared only with a cluster id given, and a controller does not
        compare (Kafka 4.4.0's KafkaApis.clusterIdOrNodeIdIsInvalid; ControllerApis has none)."""
        if self.identity is None or body.get("ClusterId") is None:
            return False
        cluster_id, node_id = self.identity()
        return body["ClusterId"] != cluster_id or body.get("NodeId", -1) != node_id

    def api_versions_body(self) -> list[dict]:
        return [
            {"ApiKey": k, "MinVersion": lo, "MaxVersion": hi}
            for k, (lo, hi) in sorted(self.ranges.items())
        ]

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        self.connections += 1
        peer = writer.get_extra_info("peername")
        address = f"{peer[0]}:{peer[1]}" if peer else "unknown"
        session = self.security.new_session()
        try:
            while True:
                async with asyncio.timeout(self.idle_timeout):  # idle: no request begun
                    head = await reader.readexactly(4)
                (size,) = _SIZE.unpack(head)
                if not 8 <= size <= self.max_request_size:
                    log.debug(
                        "%s: closing %s: request size %d out of range", self.name, address, size
                    )
                    return
                raw = await self._read_frame(reader, size)
                answer = await self._handle(raw, session, address)
                if answer is _CLOSE:
                    return
                if answer is not None:
                    writer.write(_SIZE.pack(len(answer)) + answer)
                    await writer.drain()
                if session.close_after_response:
                    # Kafka's connection.failed.authentication.delay.ms: the client reads the
                    # answer before the close (closing on unread bytes would reset it away)
                    await asyncio.sleep(FAILED_AUTHENTICATION_CLOSE_DELAY)
                    return
        except TimeoutError:
            log.debug("%s: closing %s: idle for %s s", self.name, address, self.idle_timeout)
            return
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            return
        except asyncio.CancelledError:
            return
        finally:
            self.connections -= 1
            self._tasks.discard(task)
            writer.close()

    async def _read_frame(self, reader: asyncio.StreamReader, size: int) -> bytes:
        """The rest of a frame; a frame whose bytes stop coming for the idle time is abandoned
        (TimeoutError), however slowly it had been trickling before."""
        if self.idle_timeout is None:
            return await reader.readexactly(size)
        parts, left = [], size
        while left:
            async with asyncio.timeout(self.idle_timeout):
                chunk = await reader.read(min(left, 1 << 20))
            if not chunk:
                raise asyncio.IncompleteReadError(b"".join(parts), size)
            parts.append(chunk)
            left -= len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    async def _handle(self, raw: bytes, session: Session, address: str) -> bytes | object | None:
        api_key, version, cid = _KEY_VERSION.unpack_from(raw, 0)
        rng = self.ranges.get(api_key)
        if rng is None:
            log.debug(
                "%s: closing %s: api key %d not served on this listener",
                self.name,
                address,
                api_key,
            )
            return _CLOSE
        if not rng[0] <= version <= rng[1]:
            if api_key == ApiKey.API_VERSIONS:
                body = {
                    "ErrorCode": ErrorCode.UNSUPPORTED_VERSION,
                    "ApiKeys": self.api_versions_body(),
                }
                return encode_response(self.codec, ApiKey.API_VERSIONS, 0, cid, body)
            log.debug(
                "%s: closing %s: api %d version %d not served", self.name, address, api_key, version
            )
            return _CLOSE
        if not session.authenticated and api_key not in (
            ApiKey.API_VERSIONS,
            ApiKey.SASL_HANDSHAKE,
            ApiKey.SASL_AUTHENTICATE,
        ):
            log.debug("%s: closing %s: api %d before authentication", self.name, address, api_key)
            return _CLOSE
        try:
            hv = request_header_version(self.codec, api_key, version)
            header, off = decode_header_prefix(self.codec.compiled_header("request", hv), raw)
            # Like Kafka's request parser, ignore bytes after a well-formed body: some clients
            # send them (librdkafka's Metadata requests in flexible versions, for one).
            body, _ = self.codec.decode_prefix(api_key, version, "request", raw[off:])
        except DecodeError as e:
            return self._refuse(address, str(e))
        ctx = RequestContext(self, api_key, version, header, session, address, raw)
        response = await self.served[api_key].handler(ctx, body)
        if response is None:
            return None
        if response is CLOSE:
            return _CLOSE
        return encode_response(self.codec, api_key, version, cid, response)

    def _refuse(self, address: str, reason: str) -> object:
        log.debug("%s: closing %s: %s", self.name, address, reason)
        return _CLOSE


_BEFORE_AUTH = (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE)


class _Close:
    def __repr__(self) -> str:
        return "CLOSE"


#: A handler returns CLOSE to have the connection closed without an answer.
CLOSE: Any = _Close()
_CLOSE = CLOSE
