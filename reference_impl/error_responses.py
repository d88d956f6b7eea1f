"""A whole-request error answer for an API, shaped after the request (Kafka's getErrorResponse).

Used where a request fails as a whole: a forwarded request the controller refused
(KIP-590: CLUSTER_AUTHORIZATION_FAILED becomes UNKNOWN_SERVER_ERROR for the client), a request
timing out while the controller is rediscovered, or a handler that broke.
"""

from __future__ import annotations

from collections.abc import Callable

from conformance.protocol import Codec

Builder = Callable[[dict, int, int, str | None], dict]


def _create_topics(body: dict, version: int, code: int, message: str | None) -> dict:
    return {
        "Topics": [
            {"Name": t["Name"], "ErrorCode": code, "ErrorMessage": message} for t in body["Topics"]
        ]
    }


def _delete_topics(body: dict, version: int, code: int, message: str | None) -> dict:
    if version >= 6:
        topics = [
            {"Name": t["Name"], "TopicId": t["TopicId"], "ErrorCode": code, "ErrorMessage": message}
            for t in body["Topics"]
        ]
    else:
        topics = [
            {"Name": name, "ErrorCode": code, "ErrorMessage": message}
            for name in body["TopicNames"]
        ]
    return {"Responses": topics}


def _create_partitions(body: dict, version: int, code: int, message: str | None) -> dict:
    return {
        "Results": [
            {"Name": t["Name"], "ErrorCode": code, "ErrorMessage": message} for t in body["Topics"]
        ]
    }


def _alter_configs(body: dict, version: int, code: int, message: str | None) -> dict:
    return {
        "Responses": [
            {
                "ErrorCode": code,
                "ErrorMessage": message,
                "ResourceType": r["ResourceType"],
                "ResourceName": r["ResourceName"],
            }
            for r in body["Resources"]
        ]
    }


def _describe_configs(body: dict, version: int, code: int, message: str | None) -> dict:
    return {
        "Results": [
            {
                "ErrorCode": code,
                "ErrorMessage": message,
                "ResourceType": r["ResourceType"],
                "ResourceName": r["ResourceName"],
                "Configs": [],
            }
            for r in body["Resources"]
        ]
    }


def _create_acls(body: dict, version: int, code: int, message: str | None) -> dict:
    return {"Results": [{"ErrorCode": code, "ErrorMessage": message} for _ in body["Creations"]]}


def _delete_acls(body: dict, version: int, code: int, message: str | None) -> dict:
    return {
        "FilterResults": [
            {"ErrorCode": code, "ErrorMessage": message, "MatchingAcls": []}
            for _ in body["Filters"]
        ]
    }


def _alter_client_quotas(body: dict, version: int, code: int, message: str | None) -> dict:
    return {
        "Entries": [
            {"ErrorCode": code, "ErrorMessage": message, "Entity": e["Entity"]}
            for e in body["Entries"]
        ]
    }


def _describe_user_scram_credentials(
    body: dict, version: int, code: int, message: str | None
) -> dict:
    """Kafka's: a result per user asked, its name left empty (none when no user is named)."""
    results = [
        {"User": "", "ErrorCode": code, "ErrorMessage": message, "CredentialInfos": []}
        for _ in body["Users"] or []
    ]
    return {"ErrorCode": code, "ErrorMessage": message, "Results": results}


def _alter_user_scram_credentials(body: dict, version: int, code: int, message: str | None) -> dict:
    names = [c["Name"] for c in (*body["Deletions"], *body["Upsertions"])]
    return {
        "Results": [
            {"User": n, "ErrorCode": code, "ErrorMessage": message} for n in dict.fromkeys(names)
        ]
    }


def _metadata(body: dict, version: int, code: int, message: str | None) -> dict:
    topics = body["Topics"] or []
    return {
        "Topics": [
            {"ErrorCode": code, "Name": t["Name"], "TopicId": t["TopicId"], "Partitions": []}
            for t in topics
        ]
    }


BUILDERS: dict[int, Builder] = {
    3: _metadata,
    19: _create_topics,
    20: _delete_topics,
    30: _create_acls,
    31: _delete_acls,
    32: _describe_configs,
    33: _alter_configs,
    37: _create_partitions,
    44: _alter_configs,
    49: _alter_client_quotas,
    50: _describe_user_scram_credentials,
    51: _alter_user_scram_credentials,
}


def error_response(
    codec: Codec, api_key: int, version: int, body: dict, code: int, message: str | None = None
) -> dict | None:
    """The error answer to ``body``, or None when the API has no way to say it (then close)."""
    builder = BUILDERS.get(api_key)
    if builder is not None:
        return builder(body, version, code, message)
    spec = codec.message(api_key, "response")
    names = {f.name for f in spec.fields if version in f.versions}
    if "ErrorCode" not in names:
        return None
    answer: dict = {"ErrorCode": code}
    if "ErrorMessage" in names:
        answer["ErrorMessage"] = message
    return answer
