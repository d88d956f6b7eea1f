"""Compile a (message, version) into specialised Python encode and decode functions.

The generator walks the spec once and writes straight-line Python source: consecutive
fixed-size fields become one ``struct`` call, compact lengths are inlined, a struct made only
of fixed-size fields and arrays of fixed-size elements is written by one ``pack`` chosen by its
arrays' counts (:class:`FusedStructs`), and nothing on the hot path looks at the spec again.
``Compiled.source`` holds the generated text, for reading.

Each unit is generated twice from the same walk:
- *fast*: no bookkeeping; any exception just means "malformed".
- *checked*: bounds-checks every field and tracks the field path and byte offset. It runs
  only after the fast code failed, to turn the failure into a precise DecodeError/EncodeError,
  so it is generated and compiled on that first failure: its source is nearly twice the fast
  one's, and ``compile`` of it was about 60 % of a process's codec start-up (every reference
  node and suite process compiles the units it uses; well-formed traffic never needs it).
"""

from __future__ import annotations

import functools
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from types import CodeType
from typing import Any

from conformance.protocol.code_cache import load_or_compile
from conformance.protocol.errors import DecodeError, EncodeError
from conformance.protocol.spec import FieldSpec, MessageSpec, StructSpec

UNKNOWN_TAGS = "_unknown_tagged_fields"

#: struct format letters and sizes of the fixed-size primitives.
FIXED: dict[str, tuple[str, int]] = {
    "bool": ("?", 1),
    "int8": ("b", 1),
    "int16": ("h", 2),
    "uint16": ("H", 2),
    "int32": ("i", 4),
    "uint32": ("I", 4),
    "int64": ("q", 8),
    "float64": ("d", 8),
    "uuid": ("16s", 16),
}


class Malformed(Exception):
    """Raised by generated checked code; carries the reason only (path/offset come from Trace)."""


class Trace:
    """Where the checked code is: a stack of field names / array indexes, and the byte offset."""

    __slots__ = ("off", "path")

    def __init__(self) -> None:
        self.path: list[str | int] = []
        self.off = 0

    def dotted(self) -> str:
        out = ""
        for p in self.path:
            out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
        return out


# --- runtime helpers the generated code calls -------------------------------------------------

_UV = [bytes((i,)) for i in range(128)]


def _ruv(buf: bytes, off: int) -> tuple[int, int]:
    """Read an unsigned varint of at most 5 bytes (Kafka's int32 varints)."""
    result = shift = 0
    while True:
        b = buf[off]
        off += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, off
        shift += 7
        if shift > 28:
            raise Malformed("unsigned varint longer than 5 bytes")


def _wuv(n: int) -> bytes:
    if n < 0:
        raise Malformed(f"cannot write {n} as an unsigned varint")
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class CountStructs(dict):
    """``Struct`` objects for "n items of one format", made on first use of each n.

    Arrays of fixed-size elements are packed and unpacked in one call; small counts are
    cached, large ones (which may come from untrusted input) are built and not kept.
    """

    CACHED = 256

    def __init__(self, template: str) -> None:
        super().__init__()
        self.template = template

    def __missing__(self, n: int) -> struct.Struct:
        made = struct.Struct(self.template % n)
        if n <= self.CACHED:
            self[n] = made
        return made


@functools.cache
def _count_unpackers(template: str) -> dict[int, Callable[[bytes, int], tuple[Any, ...]]]:
    """Bound ``unpack_from`` for "n items of one format", n = 0 .. ``CountStructs.CACHED``;
    made once per format and shared by every compiled message."""
    return {n: struct.Struct(template % n).unpack_from for n in range(CountStructs.CACHED + 1)}


@functools.cache
def _count_packers(template: str) -> dict[int, Callable[..., bytes]]:
    """Bound ``pack`` for "a compact length byte and n items of one format", n = 0 .. 126 (the
    counts whose length is one byte); made once per format and shared, as a plain dict: its
    subscript is the interpreter's fastest, and no attribute is looked up per call."""
    return {n: struct.Struct(template % n).pack for n in range(127)}


class FusedStructs(dict):
    """Bound ``pack`` of a whole struct of fixed-size fields and fixed-size-element arrays, by
    the arrays' counts: ``template % counts`` is the struct's layout, lengths and tag byte
    included. Made on first use of each count tuple; kept when every count is small (an array
    count may come from anyone's value), else built and not kept."""

    CACHED = 32

    def __init__(self, template: str) -> None:
        super().__init__()
        self.template = template

    def __missing__(self, counts: tuple[int, ...]) -> Callable[..., bytes]:
        made = struct.Struct(self.template % counts).pack
        if max(counts, default=0) <= self.CACHED:
            self[counts] = made
        return made


_new_object = object.__new__
_set_slot = object.__setattr__
_SAFE_UNKNOWN = uuid.SafeUUID.unknown


def _uuid(raw: bytes) -> uuid.UUID:
    """``uuid.UUID(bytes=raw)`` without its argument parsing (a third of a topic's decode time):
    the same two slots ``UUID.__init__`` sets. ``tests/protocol`` checks the two agree."""
    u = _new_object(uuid.UUID)
    _set_slot(u, "int", int.from_bytes(raw))
    _set_slot(u, "is_safe", _SAFE_UNKNOWN)
    return u


_RUNTIME: dict[str, Any] = {
    "_ruv": _ruv,
    "_wuv": _wuv,
    "_UV": _UV,
    "_uuid": _uuid,
    "_Malformed": Malformed,
    "_UNKNOWN": UNKNOWN_TAGS,
}


@dataclass
class Compiled:
    """The functions of one (message, version): the fast pair at once, the checked pair (and
    its source) on first use, from the same spec and the same constants."""

    message: MessageSpec
    version: int
    decode_fast: Callable[[bytes, int], tuple[dict, int]]
    encode_fast: Callable[[dict, Callable], None]
    fast_source: str
    consts: dict[str, Any]

    @functools.cached_property
    def _checked(self) -> tuple[Callable, Callable, str]:
        source = _Unit(self.message, self.version, True, self.consts).generate()
        ns = _exec(source, self.message, self.consts)
        top = self.message.struct.name
        return ns[f"dec_checked_{top}"], ns[f"enc_checked_{top}"], source

    @property
    def decode_checked(self) -> Callable[[bytes, int, Trace], tuple[dict, int]]:
        return self._checked[0]

    @property
    def encode_checked(self) -> Callable[[dict, Callable, Trace], None]:
        return self._checked[1]

    @property
    def source(self) -> str:
        """The generated text of both modes, for reading."""
        return self.fast_source + "\n" + self._checked[2]

    def decode(self, raw: bytes) -> dict:
        """The whole of ``raw`` as this message; trailing bytes are an error."""
        value, off = self.decode_prefix(raw)
        if off != len(raw):
            raise DecodeError(self.message.name, "", off, f"{len(raw) - off} trailing bytes")
        return value

    def decode_prefix(self, raw: bytes) -> tuple[dict, int]:
        """This message at the start of ``raw``, and the offset where it ends."""
        try:
            return self.decode_fast(raw, 0)
        except Exception:
            pass  # diagnosed precisely by the checked code below
        tr = Trace()
        try:
            return self.decode_checked(raw, 0, tr)
        except Malformed as e:
            raise DecodeError(self.message.name, tr.dotted(), tr.off, str(e)) from None
        except Exception as e:
            raise DecodeError(self.message.name, tr.dotted(), tr.off, _describe(e)) from None

    def encode(self, body: dict) -> bytes:
        parts: list[bytes] = []
        try:
            self.encode_fast(body, parts.append)
            return b"".join(parts)
        except Exception:
            pass
        tr = Trace()
        parts.clear()
        try:
            self.encode_checked(body, parts.append, tr)
        except Exception as e:
            reason = str(e) if isinstance(e, (Malformed, struct.error)) else _describe(e)
            raise EncodeError(self.message.name, tr.dotted(), reason) from None
        return b"".join(parts)  # fast path failed for a reason the checked one accepts


def _describe(e: Exception) -> str:
    if isinstance(e, UnicodeDecodeError):
        return f"invalid UTF-8 in a string ({e.reason})"
    if isinstance(e, (struct.error, IndexError)):
        return "truncated: the data ends inside this field"
    return f"{type(e).__name__}: {e}"


# --- the generator ----------------------------------------------------------------------------


class _Src:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def __call__(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def indent(self) -> _Indent:
        return _Indent(self)


class _Indent:
    def __init__(self, src: _Src) -> None:
        self.src = src

    def __enter__(self) -> None:
        self.src.depth += 1

    def __exit__(self, *exc: object) -> None:
        self.src.depth -= 1


class _Unit:
    """Generates every function one (message, version) needs, in one mode."""

    #: How many levels of struct-array elements the fast decoder writes inline.
    INLINE_DEPTH = 2

    def __init__(self, msg: MessageSpec, version: int, checked: bool, consts: dict) -> None:
        self.msg, self.v, self.checked = msg, version, checked
        self.flex = msg.flexible(version)
        self.src = _Src()
        self.consts = consts
        self.mode = "checked" if checked else "fast"
        self.inlined = 0
        self.done: dict[tuple[int, str], str] = {}
        self.todo: list[tuple[StructSpec, str, str]] = []
        self.n = 0

    # names and constants
    def tmp(self, stem: str = "t") -> str:
        self.n += 1
        return f"{stem}{self.n}"

    def const(self, value: Any) -> str:
        if isinstance(value, (int, float, str, bytes, bool, type(None))) and not isinstance(
            value, float
        ):
            return repr(value)
        for name, v in self.consts.items():
            if v is value or (
                type(v) is type(value) and v == value and not isinstance(v, (list, dict))
            ):
                return name
        name = f"_k{len(self.consts)}"
        self.consts[name] = value
        return name

    def counted(self, template: str) -> str:
        """A CountStructs for ``template`` (with %d for the count), as a namespace name."""
        name = "_A_" + template.replace(">", "").replace("%d", "n").replace("?", "Z")
        self.consts.setdefault(name, CountStructs(template))
        return name

    def counted_unpack(self, template: str) -> str:
        """The bound ``unpack_from`` of ``template``'s structs for every count up to
        ``CountStructs.CACHED``, as a plain dict, by namespace name."""
        name = "_X_" + template.replace(">", "").replace("%d", "n").replace("?", "Z")
        if name not in self.consts:
            self.consts[name] = _count_unpackers(template)
        return name

    def count_packers(self, template: str) -> str:
        """:func:`_count_packers` of ``template``, as a namespace name."""
        name = "_P_" + template.replace(">", "").replace("%d", "n").replace("?", "Z")
        if name not in self.consts:
            self.consts[name] = _count_packers(template)
        return name

    def fused(self, template: str) -> str:
        """A :class:`FusedStructs` of ``template``, as a namespace name (one per layout)."""
        for name, v in self.consts.items():
            if isinstance(v, FusedStructs) and v.template == template:
                return name
        name = f"_F{len(self.consts)}"
        self.consts[name] = FusedStructs(template)
        return name

    def fmt(self, fmt: str) -> str:
        name = f"_S_{fmt.replace('?', 'Z')}"
        self.consts.setdefault(name, struct.Struct(">" + fmt))
        return name

    def func(self, st: StructSpec, kind: str) -> str:
        key = (id(st), kind)
        if key not in self.done:
            name = f"{kind}_{self.mode}_{st.name}"
            self.done[key] = name
            self.todo.append((st, kind, name))
        return self.done[key]

    def field_flexible(self, f: FieldSpec) -> bool:
        if f.flexible_versions is not None:
            return self.v in f.flexible_versions
        return self.flex

    def default_expr(self, f: FieldSpec) -> str:
        d = f.default_value()
        if f.is_array and d is not None:
            return "[]"
        if isinstance(d, dict):
            return f"{self.func(f.struct, 'dflt')}()"
        return self.const(d)

    def generate(self) -> str:
        self.func(self.msg.struct, "dec")
        self.func(self.msg.struct, "enc")
        while self.todo:
            st, kind, name = self.todo.pop()
            {"dec": self.gen_decode, "enc": self.gen_encode, "dflt": self.gen_default}[kind](
                st, name
            )
        return "\n".join(self.src.lines)

    # --- defaults ---------------------------------------------------------------------------

    def gen_default(self, st: StructSpec, name: str) -> None:
        s = self.src
        s(f"def {name}():")
        with s.indent():
            items = ", ".join(f"{f.name!r}: {self.default_expr(f)}" for f in st.fields)
            s(f"return {{{items}}}")
        s("")

    # --- decode -----------------------------------------------------------------------------

    def gen_decode(self, st: StructSpec, name: str) -> None:
        s = self.src
        args = "buf, off, tr" if self.checked else "buf, off"
        s(f"def {name}({args}):")
        with s.indent():
            s("end = len(buf)")
            self.dec_struct_body(st, "o")
            s("return o, off")
        s("")

    def dec_struct_body(self, st: StructSpec, target: str) -> None:
        """Decode the fields of ``st`` at ``buf[off:]`` into a new dict named ``target``."""
        s, v = self.src, self.v
        present = [f for f in st.fields if v in f.versions and not f.tagged_in(v)]
        tagged = [f for f in st.fields if f.tagged_in(v)]
        var = {f.name: self.tmp("v") for f in st.fields}
        run: list[FieldSpec] = []
        for f in present:
            if f.type in FIXED and not self.checked:
                run.append(f)
                continue
            self.dec_fixed_run(run, var)
            run = []
            self.dec_field(f, var[f.name])
        self.dec_fixed_run(run, var)
        for f in tagged:
            s(f"{var[f.name]} = {self.default_expr(f)}")
        unknown = None
        if self.flex:
            unknown = self.dec_tags(st, tagged, var)
        items = []
        for f in st.fields:
            expr = var[f.name] if v in f.versions else self.default_expr(f)
            items.append(f"{f.name!r}: {expr}")
        s(f"{target} = {{{', '.join(items)}}}")
        if unknown:
            s(f"if {unknown}:")
            with s.indent():
                s(f"{target}[_UNKNOWN] = {unknown}")

    def enter(self, label: str | int) -> None:
        if self.checked:
            self.src(f"tr.path.append({label!r})")
            self.src("tr.off = off")

    def leave(self) -> None:
        if self.checked:
            self.src("tr.path.pop()")

    def need(self, nbytes: str) -> None:
        """Checked mode: fail with a clear reason before reading past the end."""
        if self.checked:
            self.src(f"if off + {nbytes} > end:")
            with self.src.indent():
                self.src(
                    f"raise _Malformed('truncated: needs ' + str({nbytes}) + ' bytes, ' "
                    f"+ str(end - off) + ' remain')"
                )

    def dec_fixed_run(self, run: list[FieldSpec], var: dict[str, str]) -> None:
        if not run:
            return
        s = self.src
        fmt = "".join(FIXED[f.type][0] for f in run)
        size = sum(FIXED[f.type][1] for f in run)
        names = [var[f.name] for f in run]
        s(f"{', '.join(names)}, = {self.fmt(fmt)}.unpack_from(buf, off)")
        s(f"off += {size}")
        for f, n in zip(run, names, strict=True):
            if f.type == "uuid":
                s(f"{n} = _uuid({n})")

    def dec_length(self, target: str, flexible: bool, wide: bool) -> None:
        """Read a length: int16/int32 classic, or uvarint-1 compact."""
        s = self.src
        if flexible:
            self.need("1")
            b = self.tmp("b")
            s(f"{b} = buf[off]")
            s(f"if {b} < 128:")
            with s.indent():
                s(f"{target} = {b} - 1")
                s("off += 1")
            s("else:")
            with s.indent():
                s(f"{target}, off = _ruv(buf, off)")
                s(f"{target} -= 1")
        else:
            fmt = "i" if wide else "h"
            self.need("4" if wide else "2")
            s(f"{target}, = {self.fmt(fmt)}.unpack_from(buf, off)")
            s(f"off += {4 if wide else 2}")

    def dec_null_or(self, f: FieldSpec, target: str, length: str, what: str) -> None:
        s = self.src
        s(f"if {length} < 0:")
        with s.indent():
            if f.nullable_in(self.v):
                s(f"{target} = None")
            else:
                reason = f"'{what} length ' + str({length}) + ' in a non-nullable field'"
                s(f"raise _Malformed({reason})")
        s("else:")

    def dec_field(self, f: FieldSpec, target: str) -> None:
        self.enter(f.name)
        self.dec_value(f, target)
        self.leave()

    def dec_value(self, f: FieldSpec, target: str) -> None:
        s = self.src
        flexible = self.field_flexible(f)
        t = f.type
        if t in FIXED:
            fmt, size = FIXED[t]
            self.need(str(size))
            s(f"{target}, = {self.fmt(fmt)}.unpack_from(buf, off)")
            s(f"off += {size}")
            if t == "uuid":
                s(f"{target} = _uuid({target})")
            return
        if t in ("string", "bytes", "records"):
            n = self.tmp("n")
            self.dec_length(n, flexible, wide=t != "string")
            self.dec_null_or(f, target, n, t)
            with s.indent():
                s(f"if {n} > end - off:")
                with s.indent():
                    s(
                        f"raise _Malformed('{t} length ' + str({n}) + ' exceeds the ' "
                        f"+ str(end - off) + ' bytes that remain')"
                    )
                slice_ = f"buf[off:off + {n}]"
                s(
                    f"{target} = {slice_}.decode('utf-8')"
                    if t == "string"
                    else f"{target} = {slice_}"
                )
                s(f"off += {n}")
            return
        if f.is_array:
            n = self.tmp("n")
            self.dec_length(n, flexible, wide=True)
            et = f.element_type
            if et in FIXED and et != "uuid" and not self.checked and not f.nullable_in(self.v):
                # No checks here: unpack_from refuses a negative count or one past the end
                # before allocating, and the checked decoder then names the problem.
                self.dec_fixed_array(target, n, et)
                return
            self.dec_null_or(f, target, n, "array")
            with s.indent():
                s(f"if {n} > end - off:")
                with s.indent():
                    s(
                        f"raise _Malformed('array length ' + str({n}) + ' exceeds the ' "
                        f"+ str(end - off) + ' bytes that remain')"
                    )
                et = f.element_type
                if et in FIXED and et != "uuid" and not self.checked:
                    self.dec_fixed_array(target, n, et)
                    return
                s(f"{target} = []")
                i = self.tmp("i")
                s(f"for {i} in range({n}):")
                with s.indent():
                    self.enter_index(i)
                    e = self.tmp("e")
                    if f.is_struct and not self.checked and self.inlined < self.INLINE_DEPTH:
                        # elements decoded in the loop itself: no call per element
                        self.inlined += 1
                        self.dec_struct_body(f.struct, e)
                        self.inlined -= 1
                    elif f.is_struct:
                        fn = self.func(f.struct, "dec")
                        call = f"{fn}(buf, off, tr)" if self.checked else f"{fn}(buf, off)"
                        s(f"{e}, off = {call}")
                    else:
                        elem = FieldSpec(name=f.name, type=et, versions=f.versions)
                        elem.flexible_versions = f.flexible_versions
                        self.dec_value(elem, e)
                    s(f"{target}.append({e})")
                    self.leave()
            return
        # a single struct, preceded by a presence byte when nullable
        fn = self.func(f.struct, "dec")
        call = f"{fn}(buf, off, tr)" if self.checked else f"{fn}(buf, off)"
        if f.nullable_in(self.v):
            self.need("1")
            s("if buf[off] >= 128:")
            with s.indent():
                s(f"{target} = None")
                s("off += 1")
            s("else:")
            with s.indent():
                s("off += 1")
                s(f"{target}, off = {call}")
        else:
            s(f"{target}, off = {call}")

    def dec_fixed_array(self, target: str, n: str, element_type: str) -> None:
        """Fast mode: ``n`` fixed-size elements in one ``unpack_from``. Counts up to
        ``CountStructs.CACHED`` come from a plain dict of bound methods (the interpreter's
        fastest subscript and no attribute lookup: 5% of a MetadataResponse decode); a
        larger count raises KeyError, at no cost when none does, and takes the general path."""
        s = self.src
        fmt, size = FIXED[element_type]
        template = ">%d" + fmt
        s("try:")
        with s.indent():
            s(f"{target} = [*{self.counted_unpack(template)}[{n}](buf, off)]")
        s("except KeyError:")
        with s.indent():
            s(f"{target} = [*{self.counted(template)}[{n}].unpack_from(buf, off)]")
        s(f"off += {n} * {size}")

    def enter_index(self, i: str) -> None:
        if self.checked:
            self.src(f"tr.path.append({i})")
            self.src("tr.off = off")

    def dec_tags(self, st: StructSpec, tagged: list[FieldSpec], var: dict[str, str]) -> str:
        """The tagged-field section; returns the name of the unknown-tags dict."""
        s = self.src
        unknown = self.tmp("unk")
        s(f"{unknown} = None")
        self.enter("<tagged fields>")
        cnt = self.tmp("nt")
        k = self.tmp("")  # suffix for this section's names
        tag, size, outer, outer_off, outer_end = (
            f"tag{k}",
            f"size{k}",
            f"outer{k}",
            f"outer_off{k}",
            f"outer_end{k}",
        )
        self.need("1")
        s("if buf[off] == 0:")
        with s.indent():
            s("off += 1")
        s("else:")
        with s.indent():
            s(f"{cnt}, off = _ruv(buf, off)")
            s(f"for _ in range({cnt}):")
            with s.indent():
                s(f"{tag}, off = _ruv(buf, off)")
                s(f"{size}, off = _ruv(buf, off)")
                s(f"if {size} > end - off:")
                with s.indent():
                    s(
                        f"raise _Malformed('tagged field ' + str({tag}) + ' claims ' + str({size}) "
                        "+ ' bytes, ' + str(end - off) + ' remain')"
                    )
                kw = "if"
                for f in sorted(tagged, key=lambda f: f.tag if f.tag is not None else -1):
                    s(f"{kw} {tag} == {f.tag}:")
                    kw = "elif"
                    with s.indent():
                        self.enter(f.name)
                        s(f"{outer}, {outer_off}, {outer_end} = buf, off, end")
                        s(f"buf, off, end = buf[off:off + {size}], 0, {size}")
                        self.dec_value(f, var[f.name])
                        s(f"if off != {size}:")
                        with s.indent():
                            s(
                                f"raise _Malformed('tagged field {f.name} (tag {f.tag}) used ' "
                                f"+ str(off) + ' of its ' + str({size}) + ' bytes')"
                            )
                        s(f"buf, off, end = {outer}, {outer_off} + {size}, {outer_end}")
                        self.leave()
                s(f"{'else' if tagged else 'if True'}:")
                with s.indent():
                    s(f"if {unknown} is None:")
                    with s.indent():
                        s(f"{unknown} = {{}}")
                    s(f"{unknown}[{tag}] = buf[off:off + {size}]")
                    s(f"off += {size}")
        self.leave()
        return unknown

    # --- encode -----------------------------------------------------------------------------

    def gen_encode(self, st: StructSpec, name: str) -> None:
        s, v = self.src, self.v
        args = "o, ap, tr" if self.checked else "o, ap"
        s(f"def {name}({args}):")
        with s.indent():
            s("pass  # a struct may have no fields in this version")
            if self.checked:
                s("if not isinstance(o, dict):")
                with s.indent():
                    s("raise _Malformed('expected a dict (struct), got ' + type(o).__name__)")
            present = [f for f in st.fields if v in f.versions and not f.tagged_in(v)]
            if not self.checked and self.enc_fused(st, present):
                s("")
                return
            run: list[FieldSpec] = []
            for f in present:
                if f.type in FIXED and f.type != "uuid" and not self.checked:
                    run.append(f)
                    continue
                self.enc_fixed_run(run)
                run = []
                self.enter_enc(f.name)
                x = self.tmp("x")
                s(f"{x} = o.get({f.name!r}, {self.default_expr(f)})")
                self.enc_value(f, x)
                self.leave()
            self.enc_fixed_run(run)
            if self.flex:
                self.enc_tags([f for f in st.fields if f.tagged_in(v)])
        s("")

    def _fixed_elements(self, f: FieldSpec) -> bool:
        """An array of fixed-size elements (no uuid), never null in this version."""
        et = f.element_type if f.is_array else None
        return (
            f.is_array
            and not f.is_struct
            and et in FIXED
            and et != "uuid"
            and not f.nullable_in(self.v)
        )

    def enc_fused(self, st: StructSpec, present: list[FieldSpec]) -> bool:
        """A struct of fixed-size fields and arrays of fixed-size elements (MetadataResponse's
        partitions, Fetch's and Produce's responses' ones ...) written in one ``pack`` of a
        layout chosen by its arrays' counts, the tag byte included; the general code follows
        for a count of 127 or more (a longer compact length) or tagged fields to write. True
        when the struct needs nothing else (not flexible: the fused write is all of it)."""
        if not present or any(
            not (f.type in FIXED and f.type != "uuid") and not self._fixed_elements(f)
            for f in present
        ):
            return False
        if self.flex and any(f.tagged_in(self.v) for f in st.fields):
            return False  # known tagged fields: the general code weighs their defaults
        s = self.src
        layout, args, conds, counts = [">"], [], [], []
        for f in present:
            if f.type in FIXED:
                layout.append(FIXED[f.type][0])
                args.append(f"o.get({f.name!r}, {self.default_expr(f)})")
                continue
            x, n = self.tmp("x"), self.tmp("n")
            s(f"{x} = o.get({f.name!r}, [])")
            s(f"{n} = len({x})")
            counts.append(n)
            letter = FIXED[f.element_type][0]
            if self.field_flexible(f):
                layout.append(f"B%d{letter}")
                args += [f"{n} + 1", f"*{x}"]
                conds.append(f"{n} < 127")
            else:
                layout.append(f"i%d{letter}")
                args += [n, f"*{x}"]
        if self.flex:
            layout.append("B")
            args.append("0")
            conds.append("not o.get(_UNKNOWN)")
        key = ", ".join(counts) + ("," if len(counts) == 1 else "")
        write = f"ap({self.fused(''.join(layout))}[{key or '()'}]({', '.join(args)}))"
        if not conds:
            s(write)
            return True
        s(f"if {' and '.join(conds)}:")
        with s.indent():
            s(write)
            s("return")
        return False

    def enter_enc(self, label: str) -> None:
        if self.checked:
            self.src(f"tr.path.append({label!r})")

    def enc_fixed_run(self, run: list[FieldSpec]) -> None:
        if not run:
            return
        fmt = "".join(FIXED[f.type][0] for f in run)
        vals = ", ".join(f"o.get({f.name!r}, {self.default_expr(f)})" for f in run)
        self.src(f"ap({self.fmt(fmt)}.pack({vals}))")

    def enc_length(self, n: str, flexible: bool, wide: bool) -> None:
        s = self.src
        if flexible:
            s(f"ap(_UV[{n} + 1] if {n} < 127 else _wuv({n} + 1))")
        else:
            s(f"ap({self.fmt('i' if wide else 'h')}.pack({n}))")

    def enc_fixed_array(self, x: str, fmt: str, flexible: bool) -> None:
        """Length and elements of a fixed-size-element array in one ``pack`` call."""
        s = self.src
        n = self.tmp("n")
        s(f"{n} = len({x})")
        if flexible:
            s(f"if {n} < 127:")
            with s.indent():
                s(f"ap({self.count_packers('>B%d' + fmt)}[{n}]({n} + 1, *{x}))")
            s("else:")
            with s.indent():
                s(f"ap(_wuv({n} + 1))")
                s(f"ap({self.counted('>%d' + fmt)}[{n}].pack(*{x}))")
        else:
            s(f"ap({self.counted('>i%d' + fmt)}[{n}].pack({n}, *{x}))")

    def enc_null(self, f: FieldSpec, x: str, flexible: bool, wide: bool) -> bool:
        """Emit the null case; returns True when an ``else:`` block must follow."""
        s = self.src
        if f.nullable_in(self.v):
            s(f"if {x} is None:")
            with s.indent():
                minus_one = bytes([0xFF] * (4 if wide else 2))
                s("ap(b'\\x00')" if flexible else f"ap({self.const(minus_one)})")
            s("else:")
            return True
        if self.checked:
            s(f"if {x} is None:")
            with s.indent():
                s("raise _Malformed('null in a field that is not nullable in this version')")
        return False

    def enc_value(self, f: FieldSpec, x: str) -> None:
        s = self.src
        flexible = self.field_flexible(f)
        t = f.type
        if t in FIXED:
            if t == "uuid":
                if self.checked:
                    s(f"if not isinstance({x}, _UUID):")
                    with s.indent():
                        s(f"raise _Malformed('expected a uuid.UUID, got ' + type({x}).__name__)")
                s(f"ap({x}.bytes)")
            else:
                s(f"ap({self.fmt(FIXED[t][0])}.pack({x}))")
            return
        if t in ("string", "bytes", "records"):
            wide = t != "string"
            block = self.enc_null(f, x, flexible, wide)
            with _maybe_indent(s, block):
                if t == "string":
                    if self.checked:
                        s(f"if not isinstance({x}, str):")
                        with s.indent():
                            s(f"raise _Malformed('expected a str, got ' + type({x}).__name__)")
                    b = self.tmp("b")
                    s(f"{b} = {x}.encode('utf-8')")
                    if self.checked and not flexible:
                        s(f"if len({b}) > 32767:")
                        with s.indent():
                            s("raise _Malformed('string longer than 32767 bytes')")
                else:
                    b = x
                    if self.checked:
                        s(f"if not isinstance({x}, (bytes, bytearray, memoryview)):")
                        with s.indent():
                            s(f"raise _Malformed('expected bytes, got ' + type({x}).__name__)")
                self.enc_length(f"len({b})", flexible, wide)
                s(f"ap({b})")
            return
        if f.is_array:
            block = self.enc_null(f, x, flexible, True)
            with _maybe_indent(s, block):
                if self.checked:
                    s(f"if not isinstance({x}, (list, tuple)):")
                    with s.indent():
                        s(f"raise _Malformed('expected a list, got ' + type({x}).__name__)")
                et = f.element_type
                if et in FIXED and et != "uuid" and not self.checked:
                    self.enc_fixed_array(x, FIXED[et][0], flexible)
                    return
                self.enc_length(f"len({x})", flexible, True)
                e, i = self.tmp("e"), self.tmp("i")
                s(f"for {i}, {e} in enumerate({x}):" if self.checked else f"for {e} in {x}:")
                with s.indent():
                    if self.checked:
                        s(f"tr.path.append({i})")
                    if f.is_struct:
                        fn = self.func(f.struct, "enc")
                        s(f"{fn}({e}, ap, tr)" if self.checked else f"{fn}({e}, ap)")
                    else:
                        elem = FieldSpec(name=f.name, type=et, versions=f.versions)
                        elem.flexible_versions = f.flexible_versions
                        self.enc_value(elem, e)
                    self.leave()
            return
        fn = self.func(f.struct, "enc")
        call = f"{fn}({x}, ap, tr)" if self.checked else f"{fn}({x}, ap)"
        if f.nullable_in(self.v):
            s(f"if {x} is None:")
            with s.indent():
                s("ap(b'\\xff')")
            s("else:")
            with s.indent():
                s("ap(b'\\x01')")
                s(call)
        else:
            if self.checked:
                s(f"if {x} is None:")
                with s.indent():
                    s("raise _Malformed('null in a struct field that is not nullable')")
            s(call)

    def enc_tags(self, tagged: list[FieldSpec]) -> None:
        """Known tagged fields that differ from their default, merged with unknown ones by tag."""
        s = self.src
        s("unk = o.get(_UNKNOWN)")
        conds = []
        for f in tagged:
            conds.append(f"o.get({f.name!r}, {self.default_expr(f)}) != {self.default_expr(f)}")
        if not tagged:
            s("if not unk:")
            with s.indent():
                s("ap(b'\\x00')")
                s("return")
        else:
            s(f"if not unk and not ({' or '.join(conds)}):")
            with s.indent():
                s("ap(b'\\x00')")
                s("return")
        self.enter_enc("<tagged fields>")
        s("tags = dict(unk) if unk else {}")
        for f, cond in zip(tagged, conds, strict=True):
            s(f"if {cond}:")
            with s.indent():
                self.enter_enc(f.name)
                s("sub = []")
                s("outer_ap, ap = ap, sub.append")
                x = self.tmp("x")
                s(f"{x} = o[{f.name!r}]")
                self.enc_value(f, x)
                s("ap = outer_ap")
                s(f"tags[{f.tag}] = b''.join(sub)")
                self.leave()
        s("ap(_wuv(len(tags)))")
        s("for tag in sorted(tags):")
        with s.indent():
            s("data = tags[tag]")
            s("ap(_wuv(tag))")
            s("ap(_wuv(len(data)))")
            s("ap(data)")
        self.leave()


class _maybe_indent:
    def __init__(self, src: _Src, on: bool) -> None:
        self.src, self.on = src, on

    def __enter__(self) -> None:
        if self.on:
            self.src.depth += 1

    def __exit__(self, *exc: object) -> None:
        if self.on:
            self.src.depth -= 1


#: generated source -> its code object: versions of a message that differ in no field the
#: generator looks at (FetchResponse v16-v18, ...) give the same text: 741 units, 491 texts,
#: 28 % less to compile; each unit still runs the code in a namespace of its own constants.
#: Across processes, ``code_cache`` keeps them on disk.
_CODE: dict[str, CodeType] = {}


def _exec(source: str, msg: MessageSpec, consts: dict[str, Any]) -> dict[str, Any]:
    code = _CODE.get(source)
    if code is None:
        code = _CODE[source] = load_or_compile(source, f"<codec {msg.name}>")
    ns: dict[str, Any] = dict(_RUNTIME, _UUID=uuid.UUID, **consts)
    exec(code, ns)
    return ns


def compile_message(msg: MessageSpec, version: int) -> Compiled:
    """Generate, compile and return the fast encode/decode functions of one (message,
    version); the checked ones follow on first use (:class:`Compiled`)."""
    msg.check_version(version)
    consts: dict[str, Any] = {}
    source = _Unit(msg, version, False, consts).generate()
    ns = _exec(source, msg, consts)
    top = msg.struct.name
    return Compiled(
        message=msg,
        version=version,
        decode_fast=ns[f"dec_fast_{top}"],
        encode_fast=ns[f"enc_fast_{top}"],
        fast_source=source,
        consts=consts,
    )
