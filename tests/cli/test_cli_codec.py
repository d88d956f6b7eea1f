"""``kafka-conformance codec decode|encode`` and the JSON form of values it prints and reads."""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.cli import main
from conformance.protocol import Codec
from conformance.protocol.jsonform import JsonFormError, from_json, to_json
from conformance.protocol.spec import SPEC_DIR, SpecSet
from conformance.strategies.messages import message_values

ROOT = Path(__file__).resolve().parents[2]
SPECS = SpecSet.load(SPEC_DIR)
CODEC = Codec(SPECS)
MESSAGES = [s for (_, kind), s in sorted(SPECS.by_key.items()) if kind in ("request", "response")]
#: ApiVersionsRequest v3: two compact strings and tagged fields.
API_VERSIONS_V3 = ["--api", "18", "--version", "3", "--kind", "request"]
API_VERSIONS_V3_HEX = "027804312e30010501ab"
API_VERSIONS_V3_VALUE = {
    "ClientSoftwareName": "x",
    "ClientSoftwareVersion": "1.0",
    "_unknown_tagged_fields": {5: b"\xab"},
}


def run(argv: list[str], stdin: bytes = b"") -> tuple[int, bytes, str]:
    """Run the CLI in-process with the given stdin; returns (exit code, stdout bytes, stderr)."""
    saved = sys.stdin, sys.stdout, sys.stderr
    out, err = io.BytesIO(), io.StringIO()
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = err
    try:
        code = main(argv)
        sys.stdout.flush()
        return code, out.getvalue(), err.getvalue()
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


def codec_args(direction: str, spec, version: int) -> list[str]:
    return ["codec", direction, "--api", str(spec.api_key), "--version", str(version),
            "--kind", spec.type]  # fmt: skip


@st.composite
def messages_and_values(draw: st.DrawFn):
    spec = draw(st.sampled_from(MESSAGES))
    version = draw(st.sampled_from(list(spec.valid_versions)))
    return spec, version, draw(message_values(spec, version))


@given(messages_and_values())
def test_encode_then_decode_through_the_cli_gives_the_value(case) -> None:
    spec, version, value = case
    text = json.dumps(to_json(spec, value))
    code, hex_out, err = run(codec_args("encode", spec, version), text.encode())
    assert (code, err) == (0, "")
    assert bytes.fromhex(hex_out.decode()) == CODEC.encode(spec.api_key, version, spec.type, value)
    code, json_out, err = run(codec_args("decode", spec, version), hex_out)
    assert (code, err) == (0, "")
    # the JSON shows the version's fields only: the bytes, not the defaults, must come back
    shown = from_json(spec, json.loads(json_out))
    assert CODEC.encode(spec.api_key, version, spec.type, shown) == bytes.fromhex(hex_out.decode())


@given(messages_and_values())
def test_binary_encode_then_decode_gives_the_value(case) -> None:
    spec, version, value = case
    text = json.dumps(to_json(spec, value))
    code, raw, err = run([*codec_args("encode", spec, version), "--binary"], text.encode())
    assert (code, err) == (0, "")
    code, json_out, err = run([*codec_args("decode", spec, version), "--binary"], raw)
    assert (code, err) == (0, "")
    assert (
        CODEC.encode(spec.api_key, version, spec.type, from_json(spec, json.loads(json_out))) == raw
    )


@pytest.mark.parametrize("spec", MESSAGES, ids=lambda s: s.name)
@given(data=st.data())
def test_json_form_round_trips_every_message(spec, data: st.DataObject) -> None:
    version = data.draw(st.sampled_from(list(spec.valid_versions)))
    value = data.draw(message_values(spec, version))
    text = json.dumps(to_json(spec, value), allow_nan=False)  # strict JSON, no NaN literals
    assert from_json(spec, json.loads(text)) == value


def test_decode_hex_with_whitespace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spaced = " ".join(API_VERSIONS_V3_HEX[i : i + 2] for i in range(0, 20, 2))
    (tmp_path / "frame.hex").write_text(f"{spaced[:9]}\n\t{spaced[9:]}\n")
    assert main(["codec", "decode", *API_VERSIONS_V3, "--input", str(tmp_path / "frame.hex")]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert json.loads(out) == {
        "ClientSoftwareName": "x",
        "ClientSoftwareVersion": "1.0",
        "_unknown_tagged_fields": {"5": "ab"},
    }


def test_encode_prints_hex(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = tmp_path / "body.json"
    body.write_text(json.dumps(to_json(SPECS.message(18, "request"), API_VERSIONS_V3_VALUE)))
    assert main(["codec", "encode", *API_VERSIONS_V3, "--input", str(body)]) == 0
    assert capsys.readouterr() == (API_VERSIONS_V3_HEX + "\n", "")


def test_binary_in_and_out(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    frame = tmp_path / "frame.bin"
    frame.write_bytes(bytes.fromhex(API_VERSIONS_V3_HEX))
    assert main(["codec", "decode", *API_VERSIONS_V3, "--binary", "--input", str(frame)]) == 0
    printed = capsysbinary.readouterr().out
    body = tmp_path / "body.json"
    body.write_bytes(printed)
    assert main(["codec", "encode", *API_VERSIONS_V3, "--binary", "--input", str(body)]) == 0
    assert capsysbinary.readouterr().out == frame.read_bytes()


def test_json_form_of_uuid_bytes_floats_and_nulls() -> None:
    metadata = SPECS.message(3, "response")
    topic_id = uuid.UUID("12345678-9abc-def0-1234-56789abcdef0")
    value = CODEC.decode(3, 12, "response", CODEC.encode(3, 12, "response", {
        "Topics": [{"Name": None, "TopicId": topic_id, "Partitions": []}],
    }))  # fmt: skip
    form = to_json(metadata, value)
    assert form["Topics"][0]["TopicId"] == "12345678-9abc-def0-1234-56789abcdef0"
    assert form["Topics"][0]["Name"] is None
    assert form["ClusterId"] is None
    assert from_json(metadata, form) == value

    sasl = SPECS.message(36, "request")
    assert to_json(sasl, {"AuthBytes": b"\x00\xff"}) == {"AuthBytes": "00ff"}
    assert from_json(sasl, {"AuthBytes": "00 FF"}) == {"AuthBytes": b"\x00\xff"}

    quotas = SPECS.message(48, "response")
    entries = [{"Entity": [], "Values": [{"Key": "k", "Value": v}]}
               for v in (math.inf, -math.inf, 0.5)]  # fmt: skip
    form = to_json(quotas, {"Entries": entries})
    assert [e["Values"][0]["Value"] for e in form["Entries"]] == ["Infinity", "-Infinity", 0.5]
    assert from_json(quotas, form) == {"Entries": entries}
    nan = from_json(quotas, {"Entries": [{"Values": [{"Value": "NaN"}]}]})
    assert math.isnan(nan["Entries"][0]["Values"][0]["Value"])


@pytest.mark.parametrize(
    ("obj", "path", "reason"),
    [
        ({"Bogus": 1}, "Bogus", "not a field of this struct"),
        ([], "", "expected an object"),
        ({"ClientSoftwareName": 5}, "ClientSoftwareName", "expected a string"),
        ({"_unknown_tagged_fields": {"x": "00"}}, "_unknown_tagged_fields.x", "decimal"),
        ({"_unknown_tagged_fields": {"1": "0g"}}, "_unknown_tagged_fields.1", "not hex"),
    ],
)
def test_json_form_errors_name_the_path(obj, path: str, reason: str) -> None:
    with pytest.raises(JsonFormError) as info:
        from_json(SPECS.message(18, "request"), obj)
    assert info.value.path == path
    assert reason in info.value.reason


def test_json_form_type_errors_in_nested_fields() -> None:
    metadata = SPECS.message(3, "response")
    with pytest.raises(JsonFormError) as info:
        from_json(metadata, {"Topics": [{"Partitions": [{"LeaderId": True}]}]})
    assert info.value.path == "Topics[0].Partitions[0].LeaderId"
    with pytest.raises(JsonFormError) as info:
        from_json(metadata, {"Topics": [{"TopicId": "not-a-uuid"}]})
    assert info.value.path == "Topics[0].TopicId"


ERRORS = [
    ("unknown api key", ["codec", "decode", "--api", "99", "--version", "0", "--kind", "request"],
     b"00", "no request spec for api key 99"),
    ("version out of range", ["codec", "decode", "--api", "18", "--version", "9",
                              "--kind", "request"], b"00", "has no version 9"),
    ("malformed hex", ["codec", "decode", *API_VERSIONS_V3], b"02 7g", "malformed hex: 'g'"),
    ("odd hex", ["codec", "decode", *API_VERSIONS_V3], b"027", "odd number of digits"),
    ("decode error", ["codec", "decode", *API_VERSIONS_V3], b"0278", "cannot decode "
     "ApiVersionsRequest.ClientSoftwareVersion at byte 2: truncated"),
    ("trailing bytes", ["codec", "decode", *API_VERSIONS_V3], API_VERSIONS_V3_HEX.encode() + b"00",
     "1 trailing bytes"),
    ("malformed JSON", ["codec", "encode", *API_VERSIONS_V3], b'{"a": ', "malformed JSON"),
    ("unknown JSON field", ["codec", "encode", *API_VERSIONS_V3], b'{"Nme": "x"}',
     "invalid ApiVersionsRequest JSON at Nme: not a field"),
    ("encode error", ["codec", "encode", *API_VERSIONS_V3], b'{"ClientSoftwareName": null}',
     "cannot encode ApiVersionsRequest.ClientSoftwareName"),
    ("unreadable input", ["codec", "decode", *API_VERSIONS_V3, "--input", "/nonexistent/x"], b"",
     "cannot read /nonexistent/x"),
    ("bad spec dir", ["codec", "decode", *API_VERSIONS_V3, "--spec-dir", "/nonexistent"], b"00",
     "/nonexistent: $: not a folder of message specs"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "stdin", "problem"), [e[1:] for e in ERRORS],
                         ids=[e[0] for e in ERRORS])  # fmt: skip
def test_errors_are_one_line_and_exit_2(argv: list[str], stdin: bytes, problem: str) -> None:
    code, out, err = run(argv, stdin)
    assert code == 2
    assert out == b""
    assert err.count("\n") == 1 and err.endswith("\n")
    assert err.startswith("kafka-conformance: error: ")
    assert problem in err


def test_python_dash_m_conformance_codec() -> None:
    def cli(*args: str, stdin: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "conformance", "codec", *args, *API_VERSIONS_V3],
            cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    decoded = cli("decode", stdin=API_VERSIONS_V3_HEX)
    assert (decoded.returncode, decoded.stderr) == (0, "")
    encoded = cli("encode", stdin=decoded.stdout)
    assert (encoded.returncode, encoded.stdout, encoded.stderr) == (
        0,
        API_VERSIONS_V3_HEX + "\n",
        "",
    )
    failed = cli("decode", stdin="02 7g")
    assert (failed.returncode, failed.stdout) == (2, "")
    assert failed.stderr == "kafka-conformance: error: malformed hex: 'g' at digit 3\n"


def test_decode_prints_only_the_fields_of_the_version() -> None:
    """Metadata v0 is a topic list only: no AllowAutoTopicCreation (v4+) nor the v8+ flags."""
    code, out, err = run(["codec", "decode", "--api", "3", "--version", "0", "--kind", "request"],
                         b"00000001 0003 6b6331")  # fmt: skip
    assert (code, err) == (0, "")
    assert json.loads(out) == {"Topics": [{"Name": "kc1"}]}
    code, out, err = run(["codec", "decode", "--api", "3", "--version", "4", "--kind", "request"],
                         b"ffffffff 00")  # fmt: skip
    assert (code, err) == (0, "")
    assert json.loads(out) == {"Topics": None, "AllowAutoTopicCreation": False}


def _keys_outside(fields, obj, version: int) -> list[str]:
    """Keys of a JSON form that are no field of ``version``, nested structs included."""
    by_name = {f.name: f for f in fields}
    bad = []
    for key, item in obj.items():
        f = by_name.get(key)
        if f is None:
            continue  # unknown tagged fields
        if version not in f.versions:
            bad.append(key)
        elif f.is_struct and item is not None:
            for element in item if f.is_array else [item]:
                bad += [f"{key}.{k}" for k in _keys_outside(f.struct.fields, element, version)]
    return bad


@given(messages_and_values())
def test_decoded_json_has_no_field_outside_its_version(case) -> None:
    spec, version, value = case
    raw = CODEC.encode(spec.api_key, version, spec.type, value)
    code, json_out, err = run(codec_args("decode", spec, version), raw.hex().encode())
    assert (code, err) == (0, "")
    shown = json.loads(json_out)
    assert _keys_outside(spec.fields, shown, version) == []
    # nothing on the wire is left out: encoding what was shown gives the same bytes
    assert CODEC.encode(spec.api_key, version, spec.type, from_json(spec, shown)) == raw
