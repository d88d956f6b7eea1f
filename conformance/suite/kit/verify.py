"""Small reusable checks, each naming the requirement ids it checks.

Every check records, under each id it names, that it ran and what it saw (``conformance.suite.
credit``): that is what credits a requirement with PASS; a listed requirement no check of which
ran is never PASS. A check that fails raises :class:`Failed` naming its requirement ids, so a test
that checks several requirements records a failure only against the ones whose check failed (the
others are recorded as not evaluated). ``soft`` records a failure without stopping the test: used
for SHOULD checks made in passing, so that they never hide or mask the MUST checks of the same
test. A check that names no requirement id is a suite bug (ValueError, an ERROR verdict).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.client.wire import ConnectionClosed, ProtocolViolation, Response
from conformance.protocol import ErrorCode
from conformance.protocol.errors import DecodeError
from conformance.protocol.kafka_errors import error_name, is_defined
from conformance.protocol.spec import FieldSpec, StructSpec
from conformance.suite.kit import credit
from conformance.suite.kit.harness import Unanswered

if TYPE_CHECKING:
    from conformance.suite.kit.harness import Harness, SyncConnection

DOCUMENTED_ERRORS_FILE = Path(__file__).with_name("data") / "documented_errors.json"


class Failed(AssertionError):
    """A check failed; ``req_ids`` are the requirements it concerns (empty: all of the test's).

    Its text puts each requirement's statement beside its id, then what was seen (``detail``)."""

    def __init__(self, message: str, *req_ids: str) -> None:
        super().__init__(explain(message, req_ids))
        self.detail = message
        self.req_ids = tuple(req_ids)


def explain(message: str, req_ids: tuple[str, ...] | list[str]) -> str:
    """``message`` preceded by the statement of each requirement it concerns."""
    from conformance.requirements import requirements

    reqs = requirements()
    said = [f"{r} ({reqs[r].statement})" if r in reqs else r for r in dict.fromkeys(req_ids)]
    return f"{'; '.join(said)}: {message}" if said else message


def check(condition: object, message: str, *req_ids: str, saw: str | None = None) -> None:
    """``condition`` must hold; ``message`` says what was expected and what came back (it is
    also what the check saw, unless ``saw`` says it better). Names at least one requirement."""
    if saw is None:
        saw = f"held (it fails as: {message})" if condition else message
    credit.ran(req_ids, saw, bool(condition))
    if not condition:
        raise Failed(message, *req_ids)


def answered_none(answer: dict, what: str, *req_ids: str) -> dict:
    """``answer``'s ErrorCode is NONE, else FAIL with "``what`` <code> (<ErrorMessage>)" (so
    ``what`` ends in "answered" or ": error"); ``answer`` is returned."""
    code = answer["ErrorCode"]
    check(code == ErrorCode.NONE, f"{what} {code} ({answer.get('ErrorMessage')})", *req_ids)
    return answer


def soft(harness: Harness, condition: object, message: str, req_id: str) -> bool:
    """Record a failure of ``req_id`` without stopping the test; returns ``condition``."""
    credit.ran((req_id,), message, bool(condition))
    if not condition:
        harness.notes.fail_soft(req_id, explain(message, (req_id,)))
    return bool(condition)


def ran(saw: str, *req_ids: str) -> None:
    """Credit ``req_ids`` with a check that held where no ``check`` call expresses it (an
    outcome the test accepted among several, say): ``saw`` is what the target did."""
    credit.ran(req_ids, saw, True)


def describe(harness: Harness, api_key: int, version: int, body: dict, limit: int = 600) -> str:
    """A request body as short JSON, for failure messages."""
    from conformance.protocol.jsonform import to_json

    try:
        text = json.dumps(
            to_json(harness.codec.message(api_key, "request"), body, version),
            separators=(",", ":"),
        )
    except Exception:
        text = repr(body)
    return text if len(text) <= limit else text[:limit] + "..."


# --- answers ---------------------------------------------------------------------------------


def expect_response(
    conn: SyncConnection,
    api_key: int,
    version: int,
    body: dict,
    *,
    served: str = "PROTOCOL.R9",
    framing: str = "PROTOCOL.R1",
    correlation: str = "PROTOCOL.R2",
    decoding: str = "PROTOCOL.R3",
    timeout: float | None = None,
) -> Response:
    """Send a request that must be answered; a missing or malformed answer fails the
    requirement it breaks (closed or silent: ``served``; bad frame: ``framing``; wrong
    correlation id: ``correlation``; body not of that version: ``decoding``)."""
    what = f"{conn.harness.api_name(api_key)} v{version}"
    try:
        if timeout is None:
            resp = conn.request(api_key, version, body)
        else:
            resp = conn.request(api_key, version, body, timeout=timeout)
    except ConnectionClosed as e:
        raise Failed(
            f"{what}: the target closed the connection instead of answering ({e})", served
        ) from None
    except Unanswered as e:  # not sent: the run's evidence (which tests saw it) is the message
        raise Failed(f"{what}: {e}", served) from None
    except TimeoutError as e:
        why = f" ({e})" if str(e) else ""
        raise Failed(f"{what}: no answer within the timeout{why}", served) from None
    except DecodeError as e:
        raise Failed(f"{what}: the response does not decode as {what}: {e}", decoding) from None
    except ProtocolViolation as e:
        req = correlation if "correlation" in str(e) else framing
        raise Failed(f"{what}: {e}", req) from None
    credit.ran((served, framing, correlation, decoding), f"{what} answered, well-formed")
    return resp


def setup_response(
    conn: SyncConnection,
    api_key: int,
    body: Any,
    within: str | None = None,
    *,
    served: str = "PROTOCOL.R9",
    **kw: Any,
) -> Response:
    """``Harness.setup_request`` (a version whose answers do not decode: one set-up defect,
    then another version; issue 42), its other failures worded and filed as
    :func:`expect_response` words them (closed, unanswered: PROTOCOL.R9; a bad frame)."""
    what = conn.harness.api_name(api_key)
    try:
        return conn.harness.setup_request(conn, api_key, body, within, **kw)
    except ConnectionClosed as e:
        raise Failed(
            f"{what}: the target closed the connection instead of answering ({e})", served
        ) from None
    except Unanswered as e:
        raise Failed(f"{what}: {e}", served) from None
    except TimeoutError as e:
        why = f" ({e})" if str(e) else ""
        raise Failed(f"{what}: no answer within the timeout{why}", served) from None
    except ProtocolViolation as e:
        req = "PROTOCOL.R2" if "correlation" in str(e) else "PROTOCOL.R1"
        raise Failed(f"{what}: {e}", req) from None


def expect_disconnect(conn: SyncConnection, timeout: float, message: str, *req_ids: str) -> None:
    closed = conn.closed_by_peer(timeout)
    check(closed, message, *req_ids, saw=f"closed within {timeout} s: {closed}")


def expect_error_or_disconnect(
    conn: SyncConnection,
    fut: Any,
    api_key: int,
    *,
    timeout: float,
    accept: set[int],
    message: str,
    req_ids: tuple[str, ...],
) -> str:
    """The request behind ``fut`` must be refused: answered with one of ``accept`` (in every
    error code of the answer) or the connection closed. Returns "closed" or "error"."""
    try:
        resp = conn.wait(fut, timeout)
    except ConnectionClosed:
        credit.ran(req_ids, f"{message}: the target closed the connection")
        return "closed"
    except (ProtocolViolation, DecodeError) as e:
        raise Failed(
            f"{message}: answered with something that is not an error answer ({e})", *req_ids
        ) from None
    except TimeoutError:
        check(
            conn.closed_by_peer(0.5),
            f"{message}: neither answered nor closed within {timeout} s",
            *req_ids,
            saw=f"{message}: no answer, then the connection closed",
        )
        return "closed"
    codes = [code for _, code in error_codes(conn.harness, resp.body, api_key)]
    check(
        codes and all(c in accept for c in codes if c != 0) and any(c in accept for c in codes),
        f"{message}: answered as if accepted (error codes {codes or 'none'})",
        *req_ids,
        saw=f"{message}: answered with error codes {codes}",
    )
    return "error"


def expect_error_code(
    body: dict, expected: int | set[int], field: str = "ErrorCode", *req_ids: str
) -> None:
    got = body.get(field)
    allowed = {expected} if isinstance(expected, int) else expected
    check(
        got in allowed,
        f"{field} is {got}, expected {' or '.join(map(str, sorted(allowed)))}",
        *req_ids,
    )


def expect_still_serving(harness: Harness, *req_ids: str) -> None:
    """A fresh connection still gets ApiVersions answered."""
    try:
        conn = harness.connect("client")
        conn.api_versions()
    except (ConnectionError, OSError, TimeoutError, DecodeError) as e:
        raise Failed(f"the target stopped serving new connections: {e}", *req_ids) from None
    credit.ran(req_ids, "a fresh connection still got ApiVersions answered")


# --- error codes -----------------------------------------------------------------------------


@cache
def documented_errors() -> dict[str, Any]:
    return json.loads(DOCUMENTED_ERRORS_FILE.read_text(encoding="utf-8"))


def documented_codes(api_name: str) -> set[int] | None:
    """Codes documented for ``api_name`` (common ones included); None when the table has no row."""
    table = documented_errors()
    names = table["apis"].get(api_name)
    if names is None:
        return None
    return {int(ErrorCode[n]) for n in (*table["common"], *names)}


def _is_error_field(f: FieldSpec) -> bool:
    return f.type == "int16" and f.name.endswith("ErrorCode")


def _walk(struct: StructSpec, value: dict, path: str) -> Iterator[tuple[str, int]]:
    for f in struct.fields:
        v = value.get(f.name)
        if v is None:
            continue
        if _is_error_field(f):
            yield f"{path}{f.name}", v
        elif f.is_struct:
            items = v if f.is_array else [v]
            for i, item in enumerate(items):
                if isinstance(item, dict):
                    where = f"{path}{f.name}[{i}]." if f.is_array else f"{path}{f.name}."
                    yield from _walk(f.struct, item, where)


def error_codes(harness: Harness, body: dict, api_key: int) -> list[tuple[str, int]]:
    """Every (field path, error code) of a response body."""
    if api_key < 0:
        return [("ErrorCode", body["ErrorCode"])] if "ErrorCode" in body else []
    spec = harness.codec.message(api_key, "response")
    return list(_walk(spec.struct, body, ""))


def check_error_codes(
    harness: Harness,
    api_key: int,
    body: dict,
    *,
    defined: str = "PROTOCOL.R4",
    documented: str = "PROTOCOL.R5",
) -> None:
    """Every error code is one Kafka defines (hard) and one documented for the API (soft)."""
    name = harness.api_name(api_key)
    allowed = documented_codes(name)
    for path, code in error_codes(harness, body, api_key):
        defines = f"{name}: {path} = {code} is not an error code Kafka defines"
        check(is_defined(code), defines, defined)
        if allowed is not None:
            soft(
                harness,
                code in allowed,
                f"{name}: {path} = {code} ({error_name(code)}) is not documented for {name}",
                documented,
            )
