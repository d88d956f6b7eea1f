"""The codec's code cache: an entry is found by its source and file name, a damaged or foreign
entry is compiled anew, and nothing is written where bytecode may not be."""

from __future__ import annotations

import marshal
import os
import sys
import time
from pathlib import Path

import pytest

from conformance.protocol import ApiKey, Codec, code_cache, compiler
from conformance.protocol.code_cache import load_or_compile

SOURCE = "def f(x):\n    return x + 1\n"


def _run(code) -> int:
    ns: dict = {}
    exec(code, ns)
    return ns["f"](1)


def test_an_entry_is_written_once_and_read_back(tmp_path: Path) -> None:
    first = load_or_compile(SOURCE, "<codec T>", folder=tmp_path, write=True)
    (entry,) = tmp_path.iterdir()
    assert marshal.loads(entry.read_bytes()) == first == compile(SOURCE, "<codec T>", "exec")
    # what is read is the entry: one holding other (valid) code for this key is what comes back
    entry.write_bytes(marshal.dumps(compile("def f(x):\n    return 7\n", "<codec T>", "exec")))
    assert _run(load_or_compile(SOURCE, "<codec T>", folder=tmp_path)) == 7


def test_source_and_file_name_make_the_key(tmp_path: Path) -> None:
    load_or_compile(SOURCE, "<codec T>", folder=tmp_path, write=True)
    plus_two = "def f(x):\n    return x + 2\n"
    other = load_or_compile(plus_two, "<codec T>", folder=tmp_path, write=True)
    renamed = load_or_compile(SOURCE, "<codec U>", folder=tmp_path, write=True)
    assert len(list(tmp_path.iterdir())) == 3
    assert (_run(other), renamed.co_filename) == (3, "<codec U>")


@pytest.mark.parametrize("damage", [b"", b"\xe3\x00", b"not marshal", marshal.dumps(42)])
def test_a_damaged_entry_is_compiled_and_replaced(tmp_path: Path, damage: bytes) -> None:
    load_or_compile(SOURCE, "<codec T>", folder=tmp_path, write=True)
    (entry,) = tmp_path.iterdir()
    entry.write_bytes(damage)
    assert _run(load_or_compile(SOURCE, "<codec T>", folder=tmp_path, write=True)) == 2
    assert marshal.loads(entry.read_bytes()) == compile(SOURCE, "<codec T>", "exec")


def test_written_only_where_bytecode_may_be(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert _run(load_or_compile(SOURCE, "<codec T>", folder=tmp_path / "a")) == 2
    assert not (tmp_path / "a").exists()
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    load_or_compile(SOURCE, "<codec T>", folder=tmp_path / "b")
    assert len(list((tmp_path / "b").iterdir())) == 1


def test_units_from_the_cache_encode_and_decode(tmp_path: Path, monkeypatch) -> None:
    """A fresh process (an empty in-memory table) served from the cache encodes and decodes
    as the compiled units do."""
    body = {"Topics": [{"Name": "t", "TopicId": None}], "AllowAutoTopicCreation": False}
    want = Codec.from_specs().encode(ApiKey.METADATA, 9, "request", body)
    monkeypatch.setattr("conformance.protocol.code_cache.CACHE_DIR", tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    for _ in range(2):  # written, then read
        monkeypatch.setattr(compiler, "_CODE", {})
        codec = Codec.from_specs()
        assert codec.encode(ApiKey.METADATA, 9, "request", body) == want
        assert codec.decode(ApiKey.METADATA, 9, "request", want)["Topics"][0]["Name"] == "t"
    assert list(tmp_path.iterdir())


def test_prune_keeps_what_is_used_and_what_is_new(tmp_path: Path, monkeypatch) -> None:
    """warm()'s pruning: entries the compiled units use stay; an unused entry or a writer's
    leftover goes once an hour old; a new unused one (another version's process may have just
    written it) stays; a missing entry is compiled again, so removing is safe beside it."""
    monkeypatch.setattr("conformance.protocol.code_cache.CACHE_DIR", tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(compiler, "_CODE", {})
    Codec.from_specs().encode(ApiKey.METADATA, 9, "request", {"Topics": None})
    used = code_cache.used_entries()
    assert used and used <= set(tmp_path.iterdir())
    old = time.time() - 2 * code_cache.PRUNE_AFTER_S
    load_or_compile(SOURCE, "<codec T>", folder=tmp_path, write=True)
    (stale,) = set(tmp_path.iterdir()) - used
    leftover = tmp_path / "x.123.tmp"
    leftover.write_bytes(b"")
    new = tmp_path / "0f.code"
    new.write_bytes(b"")
    for path in (*used, stale, leftover):
        os.utime(path, (old, old))
    assert code_cache.prune(tmp_path, used) == 2
    assert set(tmp_path.iterdir()) == {*used, new}
