"""The ``kafka-conformance`` command line (also ``python -m conformance``).

Each subcommand is one ``add_<command>(subparsers)`` function that builds its parser and sets
``handler`` to a function taking the parsed arguments and returning the exit code. ``COMMANDS``
lists them; ``serve``, ``specs``, ``codec`` and ``fetch`` are defined here, the others beside
what they run (``run.add_run``, ``matrix.cli.add_matrix``, ``suite.catalog.add_requirements``,
``diff.cli.add_diff``). This module is the only place that knows both the suite and the bundled
reference cluster (``serve``); see ARCHITECTURE.md for the import contracts.

Exit codes: 0 success, 1 the checked thing is bad (``specs check`` found errors), 2 the command
could not do its work (bad arguments, unknown API or version, malformed input). Errors of the
last kind are one line on stderr, ``kafka-conformance: error: ...``, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from conformance.diff.cli import add_diff
from conformance.matrix.cli import add_matrix
from conformance.protocol.codec import Codec
from conformance.protocol.errors import DecodeError, EncodeError, SpecError, UnknownMessageError
from conformance.protocol.jsonform import JsonFormError, from_json, to_json
from conformance.protocol.spec import SPEC_DIR, SpecSet
from conformance.protocol.spec_check import check_spec_dir
from conformance.run import add_run
from conformance.suite.catalog import add_requirements

PROG = "kafka-conformance"

Handler = Callable[[argparse.Namespace], int]


class CliError(Exception):
    """A failure the user can fix; printed as one line, exit code 2."""


#: The failures printed as ``kafka-conformance: error: <message>`` with exit code 2.
USER_ERRORS = (CliError, SpecError, UnknownMessageError, DecodeError, EncodeError)


def _spec_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--spec-dir",
        type=Path,
        default=SPEC_DIR,
        metavar="DIR",
        help="folder of Kafka message specs (default: the project's own specs/messages)",
    )


# --- specs ---------------------------------------------------------------------------------


def add_specs(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("specs", help="check or list a folder of message specs")
    actions = parser.add_subparsers(dest="action", required=True, metavar="check|list")
    check = actions.add_parser("check", help="validate every file; one line per bad file")
    _spec_dir_option(check)
    check.add_argument(
        "--lenient",
        action="store_true",
        help="ignore content after a file's top-level object, as Kafka's generator does",
    )
    check.set_defaults(handler=specs_check)
    listing = actions.add_parser("list", help="a table of the APIs the specs define")
    _spec_dir_option(listing)
    listing.set_defaults(handler=specs_list)


def specs_check(args: argparse.Namespace) -> int:
    if not Path(args.spec_dir).is_dir():
        raise CliError(f"{args.spec_dir}: not a folder of message specs")
    errors = check_spec_dir(args.spec_dir, strict=not args.lenient)
    for error in errors:
        print(error)
    if errors:
        return 1
    print(f"ok: {len(list(Path(args.spec_dir).glob('*.json')))} files")
    return 0


def specs_list(args: argparse.Namespace) -> int:
    specs = SpecSet.load(args.spec_dir, strict=False)
    header = ("API KEY", "NAME", "VALID", "FLEXIBLE", "LISTENERS")
    rows = [
        (
            str(key),
            spec.name.removesuffix("Request"),
            str(spec.valid_versions),
            str(spec.flexible_versions),
            ",".join(spec.listeners) or "-",
        )
        for (key, kind), spec in sorted(specs.by_key.items())
        if kind == "request"
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return 0


# --- codec ---------------------------------------------------------------------------------


def add_codec(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "codec",
        help="decode a message body to JSON, or encode JSON to a body",
        description="decode: hex (whitespace allowed) or, with --binary, raw bytes in; JSON out. "
        "encode: JSON in; hex out, or raw bytes with --binary. The JSON form is the one "
        "documented in conformance.protocol.jsonform (bytes as hex, uuid as 8-4-4-4-12).",
    )
    parser.add_argument("direction", choices=("decode", "encode"))
    parser.add_argument("--api", type=int, required=True, metavar="K", help="api key")
    parser.add_argument("--version", type=int, required=True, metavar="V", help="api version")
    parser.add_argument("--kind", choices=("request", "response"), required=True)
    _spec_dir_option(parser)
    parser.add_argument(
        "--input", default="-", metavar="FILE", help="read from FILE (default: stdin, also '-')"
    )
    parser.add_argument("--binary", action="store_true", help="raw bytes instead of hex")
    parser.set_defaults(handler=codec_command)


def _read_input(name: str, binary: bool) -> bytes | str:
    try:
        if name == "-":
            return sys.stdin.buffer.read() if binary else sys.stdin.read()
        path = Path(name)
        return path.read_bytes() if binary else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise CliError(f"cannot read {name}: {e}") from None


def parse_hex(text: str) -> bytes:
    """Bytes from hex digits; any whitespace (line breaks, spaces between bytes) is ignored."""
    digits = "".join(text.split())
    try:
        return bytes.fromhex(digits)
    except ValueError:
        bad = next((i for i, c in enumerate(digits) if c not in "0123456789abcdefABCDEF"), None)
        if bad is not None:
            raise CliError(f"malformed hex: {digits[bad]!r} at digit {bad}") from None
        raise CliError(f"malformed hex: odd number of digits ({len(digits)})") from None


def codec_command(args: argparse.Namespace) -> int:
    codec = Codec.from_specs(args.spec_dir, strict=False)
    spec = codec.message(args.api, args.kind)
    spec.check_version(args.version)
    data = _read_input(args.input, args.binary and args.direction == "decode")
    if args.direction == "decode":
        raw = data if isinstance(data, bytes) else parse_hex(data)
        value = codec.decode(args.api, args.version, args.kind, raw)
        print(json.dumps(to_json(spec, value, args.version), indent=2))
        return 0
    try:
        obj: Any = json.loads(data)
    except json.JSONDecodeError as e:
        raise CliError(f"malformed JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    try:
        value = from_json(spec, obj)
    except JsonFormError as e:
        raise CliError(f"invalid {spec.name} JSON at {e}") from None
    raw = codec.encode(args.api, args.version, args.kind, value)
    if args.binary:
        sys.stdout.flush()
        sys.stdout.buffer.write(raw)
        sys.stdout.buffer.flush()
    else:
        print(raw.hex())
    return 0


# --- serve --------------------------------------------------------------------------------


def add_serve(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "serve",
        help="run the bundled reference cluster until SIGINT/SIGTERM",
        description="Start one controller and N brokers on loopback; write the ready file once "
        "every broker is Online; stop gracefully on SIGINT/SIGTERM.",
    )
    parser.add_argument("--brokers", type=int, default=3, metavar="N")
    parser.add_argument(
        "--metadata-store",
        default="embedded",
        metavar="embedded|zookeeper://H:P[/chroot]",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="node data (default: a temporary dir, removed on exit)",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port-base", type=int, default=None, metavar="P")
    parser.add_argument(
        "--controllers",
        type=int,
        default=1,
        metavar="N",
        help="controller processes (more than one needs ZooKeeper)",
    )
    parser.add_argument("--ready-file", type=Path, default=None, metavar="FILE")
    parser.add_argument(
        "--restart-failed",
        action="store_true",
        help="start again a node that dies (its log and stderr say how it died)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="start-up timeout (s)")
    parser.add_argument(
        "--release",
        default=None,
        metavar="V",
        help="the brokers advertise and serve the API ranges of Apache Kafka release V (the "
        "release table) where the reference implements them",
    )
    parser.add_argument(
        "--client-controller-listener",
        action="store_true",
        help="also a client listener on each controller, at port base+50+k (as the reference "
        "target has, for the requirements judged on a controller's client connections)",
    )
    parser.set_defaults(handler=serve_command)


def serve_command(args: argparse.Namespace) -> int:
    # imported here: the other commands never load the reference cluster
    from reference_impl.launcher import ClusterError, serve

    broker_settings = None
    if args.release is not None:
        from conformance.protocol.releases import broker_settings as release_settings

        try:
            broker_settings = release_settings(args.release)
        except ValueError as e:
            raise CliError(str(e)) from None
    try:
        return serve(
            brokers=args.brokers,
            metadata_store=args.metadata_store,
            data_dir=args.data_dir,
            host=args.host,
            port_base=args.port_base,
            controllers=args.controllers,
            ready_file=args.ready_file,
            restart_failed=args.restart_failed,
            timeout=args.timeout,
            client_controller_listener=args.client_controller_listener,
            broker_settings=broker_settings,
        )
    except ClusterError as e:
        raise CliError(str(e)) from None


# --- fetch ---------------------------------------------------------------------------------


def add_fetch(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "fetch",
        help="fetch Apache Kafka releases from Maven Central for offline runs",
        description="Fetch each release's jars with Maven into the cache (KC_CACHE_DIR, else "
        "~/.cache/kafka-conformance), so that --target kafka:VERSION and --client java:VERSION "
        "(kafka-clients, with the KIP-42 harness compiled against it) run without a network.",
    )
    parser.add_argument("releases", nargs="+", metavar="kafka:VERSION|java:VERSION")
    parser.set_defaults(handler=fetch_command)


def fetch_command(args: argparse.Namespace) -> int:
    from conformance.targets import TargetError
    from conformance.targets.java_client import cached_client, harness_classes
    from conformance.targets.maven import cached_broker, fetch_broker

    for release in args.releases:
        kind, sep, version = release.partition(":")
        if kind not in ("kafka", "java") or not sep:
            raise CliError(
                f"cannot fetch {release!r}: name a release as kafka:VERSION or java:VERSION"
            )
        try:
            if kind == "java":
                was = cached_client(version)
                libs = harness_classes(version).parent / "libs"
            else:
                was = cached_broker(version)
                libs = was or fetch_broker(version)
        except TargetError as e:
            raise CliError(str(e)) from None
        print(f"{release}: {libs}{' (cached)' if was else ''}")
    return 0


# --- entry point ---------------------------------------------------------------------------

#: The subcommands, in help order.
COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [
    add_run,
    add_serve,
    add_specs,
    add_codec,
    add_matrix,
    add_requirements,
    add_fetch,
    add_diff,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Conformance suite for the Apache Kafka wire protocol."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (argparse's own errors included)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, or a usage error argparse has already printed
        return e.code if isinstance(e.code, int) else 2
    handler: Handler = args.handler
    try:
        return handler(args)
    except USER_ERRORS as e:
        message = " ".join(str(e).split("\n"))
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return 2
