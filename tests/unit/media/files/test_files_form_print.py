"""`FormPrint`: the Idempotency-Key fingerprint of an upload is what the form says, whatever its framing or
however its bytes arrive in chunks."""

from __future__ import annotations

import pytest

from modelport.errors import InvalidParameters
from modelport.media.files.form_print import FormPrint

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40


def _form(boundary: str, parts: list[tuple[list[str], bytes]]) -> bytes:
    out = b""
    for headers, data in parts:
        out += f"--{boundary}\r\n".encode() + "".join(f"{h}\r\n" for h in headers).encode() + b"\r\n" + data + b"\r\n"
    return out + f"--{boundary}--\r\n".encode()


def _print(boundary: str, body: bytes, chunk: int = 7) -> str:
    form = FormPrint(boundary.encode())
    for i in range(0, len(body), chunk):
        form.feed(body[i : i + chunk])
    return form.hexdigest()


FILE = ['Content-Disposition: form-data; name="file"; filename="a.png"', "Content-Type: image/png"]
FIELD = ['Content-Disposition: form-data; name="purpose"']


def test_the_framing_does_not_count() -> None:
    first = _print("b1", _form("b1", [(FILE, PNG), (FIELD, b"avatar")]), chunk=64)
    # Another boundary, chunking, header order and case, and order of differently named parts.
    swapped = [h.lower() for h in reversed(FILE)]
    assert _print("other-boundary", _form("other-boundary", [(FIELD, b"avatar"), (swapped, PNG)]), chunk=3) == first


@pytest.mark.parametrize(
    "changed",
    [
        [(['Content-Disposition: form-data; name="file"; filename="b.png"', "Content-Type: image/png"], PNG)],
        [(['Content-Disposition: form-data; name="file"; filename="a.png"', "Content-Type: image/jpeg"], PNG)],
        [(['Content-Disposition: form-data; name="file"; filename="a.png"'], PNG)],
        [(FILE, PNG[:-1] + b"\0")],
        [(FILE, PNG), (FIELD, b"banner")],
        [(FILE, PNG), (FIELD, b"avatar"), (FIELD, b"avatar")],
    ],
)
def test_what_the_form_says_counts(changed: list[tuple[list[str], bytes]]) -> None:
    first = _print("b", _form("b", [(FILE, PNG), (FIELD, b"avatar")]))
    assert _print("b", _form("b", changed)) != first


def test_parts_of_one_name_keep_their_order() -> None:
    a, b = (FIELD, b"one"), (FIELD, b"two")
    assert _print("b", _form("b", [a, b])) != _print("b", _form("b", [b, a]))


def test_a_malformed_body_is_a_400() -> None:
    with pytest.raises(InvalidParameters):
        _print("b", b"--b\r\nno colon here\r\n\r\n")
