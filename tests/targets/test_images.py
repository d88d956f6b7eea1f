"""The Debian mirror the images are built from is the machine's apt sources' (one-line
``*.list`` and deb822 ``*.sources``), or the environment's; no registry host is written in the
code. Sample source files only: no engine, no network."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.targets import TargetError, images

ONE_LINE = """\
# a comment, then an entry for source packages and one for another suite
deb-src http://src.example/debian bookworm main
deb http://old.example/debian bullseye main
deb [arch=amd64 signed-by=/k.gpg] http://one.example/debian/ bookworm main contrib  # c
deb http://one.example/debian-security bookworm-security main
"""

DEB822 = """\
Types: deb deb-src
# a comment inside the stanza
URIs: http://ignored.example/debian
Suites: bookworm
Components: main
Enabled: no

Types: deb
URIs: http://first.example/debian
  http://second.example/debian
Suites: bookworm
 bookworm-updates
Components: contrib main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://security.example/debian-security
Suites: bookworm-security
Components: main
"""


def _apt(tmp_path: Path, sources: str | None, parts: dict[str, str]) -> dict[str, Path]:
    main, folder = tmp_path / "sources.list", tmp_path / "sources.list.d"
    folder.mkdir(parents=True)
    if sources is not None:
        main.write_text(sources)
    for name, text in parts.items():
        (folder / name).write_text(text)
    return {"sources": main, "parts": folder}


def test_one_line_sources(tmp_path: Path) -> None:
    where = _apt(tmp_path, ONE_LINE, {})
    assert images.apt_sources(**where) == [
        ("http://old.example/debian", ["bullseye"], ["main"]),
        ("http://one.example/debian/", ["bookworm"], ["main", "contrib"]),
        ("http://one.example/debian-security", ["bookworm-security"], ["main"]),
    ]
    assert images.mirror({}, **where) == "http://one.example/debian"


def test_deb822_sources(tmp_path: Path) -> None:
    where = _apt(tmp_path, None, {"debian.sources": DEB822})
    assert images.apt_sources(**where)[:2] == [
        ("http://first.example/debian", ["bookworm", "bookworm-updates"], ["contrib", "main"]),
        ("http://second.example/debian", ["bookworm", "bookworm-updates"], ["contrib", "main"]),
    ]
    assert images.mirror({}, **where) == "http://first.example/debian"


def test_apts_order_and_the_files_it_ignores(tmp_path: Path) -> None:
    """sources.list first, then the folder's *.list and *.sources by name; other names (a
    disabled file) are not read."""
    where = _apt(
        tmp_path,
        "deb http://old.example/debian bullseye main\n",
        {
            "a.list.disabled": "deb http://disabled.example/debian bookworm main\n",
            "b.sources": DEB822,
            "a.list": "deb http://a.example/debian bookworm contrib\n",  # no main
        },
    )
    assert [uri for uri, _, _ in images.apt_sources(**where)][:3] == [
        "http://old.example/debian",
        "http://a.example/debian",
        "http://first.example/debian",
    ]
    assert images.mirror({}, **where) == "http://first.example/debian"


def test_the_environment_overrides_and_none_found_says_so(tmp_path: Path) -> None:
    where = _apt(tmp_path, ONE_LINE, {})
    env = {images.MIRROR_ENV: "http://mine.example/debian/"}
    assert images.mirror(env, **where) == "http://mine.example/debian"
    nothing = _apt(tmp_path / "x", "deb http://old.example/debian bullseye main\n", {})
    with pytest.raises(TargetError, match=f"no apt source .* {images.MIRROR_ENV}"):
        images.mirror({}, **nothing)


def test_no_registry_host_in_the_code() -> None:
    source = Path(images.__file__).read_text()
    assert not re.findall(r"https?://[\w.-]+\.(?:org|com|net|io)\b", source)
