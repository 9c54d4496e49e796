"""The strict image-reference grammar: examples from real registries, then properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envcheck.contracts.errors import UsageError
from envcheck.contracts.exitcodes import ExitStatus
from envcheck.image.reference import (
    InvalidReference,
    Reference,
    is_valid_reference,
    parse_reference,
)

DIGEST = "sha256:" + "ab" * 32
BAIDU = "ccr-2vdh3abv-pub.cnc.bj.baidubce.com"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("busybox", Reference("docker.io", "library/busybox")),
        ("paddlepaddle/paddle:3.3.1", Reference("docker.io", "paddlepaddle/paddle", "3.3.1")),
        (
            "docker.io/paddlepaddle/paddle:3.3.1-gpu-cuda12.9-cudnn9.9",
            Reference("docker.io", "paddlepaddle/paddle", "3.3.1-gpu-cuda12.9-cudnn9.9"),
        ),
        ("index.docker.io/library/ubuntu:22.04", Reference("docker.io", "library/ubuntu", "22.04")),
        (f"{BAIDU}/paddlepaddle/paddle:3.0.0", Reference(BAIDU, "paddlepaddle/paddle", "3.0.0")),
        (
            "127.0.0.1:5000/envcheck-test/busybox:1",
            Reference("127.0.0.1:5000", "envcheck-test/busybox", "1"),
        ),
        ("localhost/a/b", Reference("localhost", "a/b")),
        (f"busybox@{DIGEST}", Reference("docker.io", "library/busybox", None, DIGEST)),
        (
            f"r.example:443/a__b/c-d--e.f:t_1@{DIGEST}",
            Reference("r.example:443", "a__b/c-d--e.f", "t_1", DIGEST),
        ),
    ],
    ids=[
        "official",
        "hub-user",
        "hub-explicit",
        "legacy-index",
        "baidu",
        "loopback-port",
        "localhost",
        "digest",
        "everything",
    ],
)
def test_parses_real_references(text: str, expected: Reference) -> None:
    assert parse_reference(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        " busybox",
        "busybox ",
        "bus box",
        "Busybox",
        "busybox:",
        "busybox:-x",
        "busybox:.x",
        "busybox:" + "t" * 129,
        "busybox@sha256:abc",
        f"busybox@md5:{'a' * 32}",
        "a//b",
        "/a",
        "a/",
        "a..b",
        "a-",
        "-a",
        "a/_b",
        "127.0.0.1:99999/a",
        "127.0.0.1:/a",
        "-r.io/a",
        "r-.io/a",
        "busybox\x00",
        "busybox\n",
        "bu\u0131sybox",
        "a/b:c:d",
        "a/b@",
        "r.io/" + "a" * 260,
        "$(reboot)",
        "a;rm -rf /",
        "--help",
        "a/b:tag\ttab",
    ],
)
def test_rejects_odd_references(text: str) -> None:
    with pytest.raises(InvalidReference) as info:
        parse_reference(text)
    assert info.value.status == ExitStatus.USAGE
    assert isinstance(info.value, UsageError)
    assert not is_valid_reference(text)


def test_hub_names_are_familiar_in_engine_output() -> None:
    assert parse_reference("busybox:1").familiar_name == "busybox"
    assert parse_reference("paddlepaddle/paddle").familiar_name == "paddlepaddle/paddle"
    ref = parse_reference("127.0.0.1:5000/x/y:1")
    assert ref.familiar_name == ref.name == "127.0.0.1:5000/x/y"
    assert ref.api_host == "127.0.0.1:5000"
    assert parse_reference("busybox").api_host == "registry-1.docker.io"


def test_reference_asks_the_digest_when_pinned() -> None:
    assert parse_reference("a/b").reference == "latest"
    assert parse_reference("a/b:1").reference == "1"
    assert parse_reference(f"a/b:1@{DIGEST}").reference == DIGEST
    assert str(parse_reference("a/b").tagged()) == "docker.io/a/b:latest"


# -- properties ---------------------------------------------------------------------------------

_alnum = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=6)
_sep = st.sampled_from([".", "_", "__", "-", "--"])
_component = st.builds(
    lambda a, rest: a + "".join(s + b for s, b in rest),
    _alnum,
    st.lists(st.tuples(_sep, _alnum), max_size=2),
)
_host_label = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9-]{0,6}[A-Za-z0-9])?", fullmatch=True)
_domain = st.one_of(
    st.builds(lambda a, b: f"{a}.{b}", _host_label, _host_label),
    st.builds(
        lambda h, p: f"{h}:{p}",
        st.sampled_from(["localhost", "127.0.0.1", "r.io"]),
        st.integers(1, 65535),
    ),
)
_tag = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}", fullmatch=True)
_digest = st.builds(lambda h: "sha256:" + h, st.text("0123456789abcdef", min_size=64, max_size=64))


@st.composite
def valid_references(draw: st.DrawFn) -> str:
    text = "/".join(draw(st.lists(_component, min_size=1, max_size=3)))
    # A first part with a "." is a registry host by the grammar: give such names a real one.
    if draw(st.booleans()) or "." in text.split("/")[0]:
        text = f"{draw(_domain)}/{text}"
    if draw(st.booleans()):
        text += f":{draw(_tag)}"
    if draw(st.booleans()):
        text += f"@{draw(_digest)}"
    return text


@given(valid_references())
@settings(max_examples=300)
def test_valid_references_round_trip(text: str) -> None:
    ref = parse_reference(text)
    assert parse_reference(str(ref)) == ref
    assert str(ref).endswith(text.split("/")[-1])


@given(st.text(max_size=80))
@settings(max_examples=500)
def test_any_text_parses_or_is_refused_cleanly(text: str) -> None:
    try:
        ref = parse_reference(text)
    except InvalidReference:
        return
    # Whatever gets through is printable ASCII with no whitespace, and normalises stably.
    assert str(ref).isascii() and not any(c.isspace() for c in str(ref))
    assert parse_reference(str(ref)) == ref


@given(
    valid_references(),
    st.sampled_from([" ", "\t", "\n", "\x00", "é", ";", "$", "`", "|", "&", "'"]),
    st.data(),
)
def test_an_odd_character_anywhere_is_refused(text: str, odd: str, data: st.DataObject) -> None:
    at = data.draw(st.integers(0, len(text)))
    with pytest.raises(InvalidReference):
        parse_reference(text[:at] + odd + text[at:])
