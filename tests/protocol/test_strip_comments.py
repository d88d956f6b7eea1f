"""``strip_comments`` (one regular expression) against a character-by-character walk of the
same rules: comments outside strings go, line numbers stay, strings (escapes, unterminated
ones) are kept whole."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol.spec import strip_comments


def walk(text: str) -> str:
    """The rules, one character at a time."""
    out: list[str] = []
    i, n, in_string = 0, len(text), False
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\":
                out.append(text[i : i + 2])
                i += 2
                continue
            in_string = c != '"'
            out.append(c)
            i += 1
        elif c == '"':
            in_string = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            chunk = text[i : n if j < 0 else j + 2]
            out.append("\n" * chunk.count("\n"))
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


#: the characters the rules turn on, and a few others
_TEXT = st.lists(
    st.sampled_from(['"', "\\", "/", "*", "\n", "a", " ", "{", "}", ":", "//", "/*", "*/"]),
    max_size=40,
).map("".join)


@given(_TEXT)
def test_strip_comments_follows_the_rules(text: str) -> None:
    assert strip_comments(text) == walk(text)


def test_examples() -> None:
    cases = {
        '{"a": "x//y"} // c\n': '{"a": "x//y"} \n',
        '{"a": "q\\"/*"}/* b\nc */1': '{"a": "q\\"/*"}\n1',
        "/* open": "",
        '"open // string': '"open // string',
        "x // end": "x ",
        '"\\\\"//c': '"\\\\"',
        '{"k": 1}': '{"k": 1}',
    }
    for text, want in cases.items():
        assert strip_comments(text) == want, text
