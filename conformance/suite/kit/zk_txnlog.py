"""Which ZooKeeper session wrote which znode: the server's transaction log.

A znode's stat tells when it was written (mzxid) but not by whom; ZooKeeper's transaction log
does: every write is a record whose header carries the writing session's id. KIP-590 (and the
registration draft's /cluster/brokers/N record) promise that only the controller writes, so the
suite reads the log of a ZooKeeper on this machine: the ``conf`` four-letter word names its
``dataLogDir``, and the files there are ZooKeeper's documented format (``FileTxnLog``):

    file:  magic "ZKLG" (int32), version 2 (int32), dbid (int64), then entries
    entry: checksum (int64), length (int32), txn bytes, end-of-record byte 0x42
    txn:   TxnHeader (clientId = session id int64, cxid int32, zxid int64, time int64,
           type int32), then the operation's record: for create, delete, setData, check and
           their variants the first field is the path (int32 length + UTF-8); a multi holds
           a vector of (type int32, record as int32 length + bytes)

Files are preallocated with zeros: a zero length ends the log. Where the server does not answer
``conf`` (not whitelisted, another host) or its files cannot be read, the observable is missing
and the checks that need it say so.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from pathlib import Path

MAGIC = 0x5A4B4C47  # "ZKLG"
_HEADER = struct.Struct(">iiq")
_ENTRY = struct.Struct(">qi")
_TXN_HEADER = struct.Struct(">qiqqi")
_INT = struct.Struct(">i")
EOR = 0x42

CREATE, DELETE, SET_DATA, CHECK, MULTI = 1, 2, 5, 13, 14
CREATE2, CREATE_CONTAINER, DELETE_CONTAINER, CREATE_TTL = 15, 19, 20, 21
ERROR = -1
#: operations whose record starts with the path
PATH_FIRST = {
    CREATE,
    DELETE,
    SET_DATA,
    CHECK,
    CREATE2,
    CREATE_CONTAINER,
    DELETE_CONTAINER,
    CREATE_TTL,
}
#: operations that change a znode
WRITES = {CREATE, DELETE, SET_DATA, CREATE2, CREATE_CONTAINER, DELETE_CONTAINER, CREATE_TTL}
NAMES = {
    CREATE: "create",
    DELETE: "delete",
    SET_DATA: "setData",
    CREATE2: "create2",
    CREATE_CONTAINER: "createContainer",
    DELETE_CONTAINER: "deleteContainer",
    CREATE_TTL: "createTTL",
}


class TxnLogUnavailable(Exception):
    """The transaction log cannot be found or read (the message says why)."""


@dataclass(frozen=True)
class Write:
    """One znode write: the session that made it, its zxid, the operation and the path."""

    session: int
    zxid: int
    op: int
    path: str

    def __str__(self) -> str:
        op = NAMES.get(self.op, self.op)
        return f"{op} {self.path} by session 0x{self.session:x} (zxid 0x{self.zxid:x})"


def four_letter_word(host: str, port: int, word: str, timeout: float = 2.0) -> str:
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(word.encode())
        chunks = []
        while data := s.recv(65536):
            chunks.append(data)
    return b"".join(chunks).decode(errors="replace")


def log_dir(hosts: str) -> Path:
    """The ``dataLogDir`` the first server of ``hosts`` reports through ``conf``."""
    first = hosts.split(",")[0]
    host, _, port = first.rpartition(":")
    host = host.strip("[]")
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise TxnLogUnavailable(f"ZooKeeper at {first} is not on this machine")
    try:
        text = four_letter_word(host, int(port), "conf")
    except OSError as e:
        raise TxnLogUnavailable(f"ZooKeeper at {first} does not answer 'conf': {e}") from None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "dataLogDir" and value.strip():
            path = Path(value.strip())
            if not path.is_dir():
                raise TxnLogUnavailable(f"ZooKeeper's dataLogDir {path} is not readable here")
            return path
    raise TxnLogUnavailable(
        f"ZooKeeper at {first} does not report its dataLogDir ('conf' answered "
        f"{' '.join(text.split())[:120]!r}; is 'conf' in 4lw.commands.whitelist?)"
    )


def _string(raw: bytes, pos: int) -> tuple[str, int]:
    (n,) = _INT.unpack_from(raw, pos)
    pos += 4
    if n < 0:
        return "", pos
    return raw[pos : pos + n].decode("utf-8", errors="replace"), pos + n


def _writes(session: int, zxid: int, op: int, record: bytes) -> list[Write]:
    if op in WRITES:
        path, _ = _string(record, 0)
        return [Write(session, zxid, op, path)]
    if op != MULTI:
        return []
    out: list[Write] = []
    (count,) = _INT.unpack_from(record, 0)
    pos = 4
    for _ in range(max(count, 0)):
        (sub,) = _INT.unpack_from(record, pos)
        (length,) = _INT.unpack_from(record, pos + 4)
        body = record[pos + 8 : pos + 8 + max(length, 0)]
        pos += 8 + max(length, 0)
        if sub in WRITES:
            path, _ = _string(body, 0)
            out.append(Write(session, zxid, sub, path))
    return out


def read_file(path: Path) -> list[Write]:
    """Every znode write recorded in one log file, in order."""
    raw = path.read_bytes()
    if len(raw) < _HEADER.size:
        return []
    magic, _version, _ = _HEADER.unpack_from(raw, 0)
    if magic != MAGIC:
        raise TxnLogUnavailable(f"{path} is not a ZooKeeper transaction log")
    pos = _HEADER.size
    out: list[Write] = []
    while pos + _ENTRY.size <= len(raw):
        _, length = _ENTRY.unpack_from(raw, pos)
        pos += _ENTRY.size
        if length <= 0 or pos + length + 1 > len(raw):
            break
        txn = raw[pos : pos + length]
        pos += length
        if raw[pos] != EOR:
            break
        pos += 1
        session, _, zxid, _, op = _TXN_HEADER.unpack_from(txn, 0)
        try:
            out.extend(_writes(session, zxid, op, txn[_TXN_HEADER.size :]))
        except struct.error:
            continue  # a record we cannot parse names no path we look for
    return out


def writes(hosts: str) -> list[Write]:
    """Every znode write in the server's transaction logs, oldest first."""
    folder = log_dir(hosts)
    files = sorted(folder.glob("log.*"), key=lambda p: int(p.suffix[1:], 16))
    if not files:
        raise TxnLogUnavailable(f"no transaction log files in {folder}")
    out: list[Write] = []
    for f in files:
        try:
            out.extend(read_file(f))
        except OSError as e:
            raise TxnLogUnavailable(f"cannot read {f}: {e}") from None
    return out


def under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix.rstrip("/") + "/")
