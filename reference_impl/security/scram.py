"""SCRAM credentials as cluster metadata (KIP-554): what AlterUserScramCredentials may change and
what DescribeUserScramCredentials tells, with Kafka 4.4.0's answers
(``confirmations/kafka_scram_and_operations.out``).

A credential is kept as RFC 5802's salt, StoredKey and ServerKey with its iteration count, never
the salted password: the image's ``scram`` (records ``scram`` / ``remove_scram``), which brokers
learn with the rest of the metadata (``MetadataCache.scram``). A SCRAM login looks there first,
then at the users configured in the ``security`` settings (``sasl.Credentials``), which
DescribeUserScramCredentials lists too, as Kafka lists the users formatted into its metadata;
a configured user's credentials are fixed (deleting one answers RESOURCE_NOT_FOUND). A salt
shorter than 12 bytes is kept but cannot log in (scramp's minimum; Kafka takes any).

The rules of an alteration, in Kafka's order: deletions first, then upsertions; a user met again
after an entry of theirs was accepted is DUPLICATE_RESOURCE (KRaft's rule: in ZooKeeper mode
Kafka 3.9.1 refuses only the same user and mechanism twice); after one was refused, later
entries of that user are not looked at. A mechanism other than SHA-256 (1) and SHA-512 (2) is
UNSUPPORTED_SASL_MECHANISM, an iteration count outside 4096-16384 UNACCEPTABLE_CREDENTIAL, an
empty name UNACCEPTABLE_CREDENTIAL, deleting a credential that does not exist
RESOURCE_NOT_FOUND. One result per user, in the order the users first appear.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

from conformance.client.sasl import SCRAM_ITERATIONS, SCRAM_TYPES
from conformance.protocol import ErrorCode
from reference_impl.roles import NodeView

Scram = Mapping[str, Mapping[str, Mapping[str, Any]]]
DUPLICATE = "A user credential cannot be altered twice in the same request"
_HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}
_EMPTY: dict = {}


def scram_view(node: NodeView) -> Scram:
    """``node``'s SCRAM credentials: the controller's image, a broker's metadata cache."""
    image = getattr(node, "image", None)
    if getattr(node, "role", None) == "controller":
        return image.scram if image is not None else _EMPTY
    cache = getattr(node, "metadata_cache", None)
    return getattr(cache, "scram", None) or _EMPTY


def credential(mechanism: str, salt: bytes, salted: bytes, iterations: int) -> dict[str, Any]:
    """The record fields of a credential: RFC 5802's StoredKey and ServerKey of the salted
    password (base64), the salt and the iterations."""
    digest = _HASHES[mechanism]
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    server_key = hmac.new(salted, b"Server Key", digest).digest()
    return {
        "salt": base64.b64encode(salt).decode(),
        "stored_key": base64.b64encode(digest(client_key).digest()).decode(),
        "server_key": base64.b64encode(server_key).decode(),
        "iterations": iterations,
    }


def _error(code: int, message: str) -> dict[str, Any]:
    return {"ErrorCode": code, "ErrorMessage": message}


def _mechanism_error(mechanism: int) -> dict[str, Any] | None:
    if mechanism not in SCRAM_TYPES:
        return _error(ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
    return None


def _upsertion_error(u: dict[str, Any]) -> dict[str, Any] | None:
    if not u["Name"]:
        return _error(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    wrong = _mechanism_error(u["Mechanism"])
    if wrong is not None:
        return wrong
    low, high = SCRAM_ITERATIONS
    if u["Iterations"] < low:
        return _error(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
    if u["Iterations"] > high:
        return _error(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
    return None


def alter(
    held: Scram, body: dict[str, Any], *, checked: bool = True, deletes: bool = True
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The results and the records of an AlterUserScramCredentials ``body`` against the
    credentials ``held``. ``checked=False`` is the ``accept_any_credential`` fault (nothing
    refused), ``deletes=False`` the ``keep_deleted_credentials`` one (deletions answered NONE,
    nothing removed)."""
    order: list[str] = []
    errors: dict[str, dict[str, Any]] = {}
    deletions: dict[str, dict[str, Any]] = {}
    upsertions: dict[str, dict[str, Any]] = {}

    def accept(name: str, entry: dict[str, Any], into: dict, error: dict | None) -> None:
        if name not in order:
            order.append(name)
        if name in errors:
            return
        if checked and (name in deletions or name in upsertions):
            deletions.pop(name, None)
            upsertions.pop(name, None)
            errors[name] = _error(ErrorCode.DUPLICATE_RESOURCE, DUPLICATE)
        elif checked and error is not None:
            errors[name] = error
        else:
            into[name] = entry

    for d in body["Deletions"]:
        error = _mechanism_error(d["Mechanism"])
        if error is None and SCRAM_TYPES[d["Mechanism"]] not in held.get(d["Name"], _EMPTY):
            error = _error(
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            )
        accept(d["Name"], d, deletions, error)
    for u in body["Upsertions"]:
        accept(u["Name"], u, upsertions, _upsertion_error(u))
    records: list[dict[str, Any]] = []
    for name, d in deletions.items():
        if deletes and d["Mechanism"] in SCRAM_TYPES:
            records.append(
                {"type": "remove_scram", "user": name, "mechanism": SCRAM_TYPES[d["Mechanism"]]}
            )
    for name, u in upsertions.items():
        mechanism = SCRAM_TYPES.get(u["Mechanism"])
        if mechanism is None:
            continue  # (the fault's unchecked entries: no credential can be made of them)
        made = credential(mechanism, u["Salt"], u["SaltedPassword"], u["Iterations"])
        records.append({"type": "scram", "user": name, "mechanism": mechanism, **made})
    results = [
        {"User": name, **errors.get(name, {"ErrorCode": 0, "ErrorMessage": None})} for name in order
    ]
    return results, records


def describe(
    held: Scram, configured: Mapping[str, int], body: dict[str, Any]
) -> list[dict[str, Any]]:
    """DescribeUserScramCredentials' results: ``held`` over the ``configured`` users (name ->
    iterations, both mechanisms); null or no user names: every user."""
    codes = {name: code for code, name in SCRAM_TYPES.items()}

    def infos(user: str) -> list[dict[str, int]]:
        found = {m: c["iterations"] for m, c in held.get(user, _EMPTY).items()}
        if user in configured:
            found = {m: configured[user] for m in codes} | found
        # SHA-512 first, as Kafka 4.4.0 lists them
        return [{"Mechanism": codes[m], "Iterations": i} for m, i in sorted(found.items())[::-1]]

    asked = [u["Name"] for u in body["Users"] or []]
    if not asked:
        return [
            {"User": u, "ErrorCode": 0, "ErrorMessage": "", "CredentialInfos": infos(u)}
            for u in sorted(set(configured) | set(held))
        ]
    out = []
    for user in dict.fromkeys(asked):
        if asked.count(user) > 1:
            code = ErrorCode.DUPLICATE_RESOURCE
            message = (
                "Cannot describe SCRAM credentials for the same user twice in a single "
                f"request: {user}"
            )
        elif not infos(user):
            code = ErrorCode.RESOURCE_NOT_FOUND
            message = f"Attempt to describe a user credential that does not exist: {user}"
        else:
            out.append(
                {"User": user, "ErrorCode": 0, "ErrorMessage": "", "CredentialInfos": infos(user)}
            )
            continue
        out.append(
            {"User": user, "ErrorCode": code, "ErrorMessage": message, "CredentialInfos": []}
        )
    return out
