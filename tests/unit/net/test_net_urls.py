"""URL and address checks of the SSRF-safe fetcher, without any network."""

from __future__ import annotations

import ipaddress
import random
import socket

import pytest

from modelport.net.addresses import BadHost, forbidden_reason, literal_address
from modelport.net.errors import UrlFormatRefused, UrlRefused
from modelport.net.urls import check_url
from modelport.settings import NetSettings

# Every one of these means a loopback, private, reserved or otherwise non-global address.
FORBIDDEN_HOSTS = [
    "127.0.0.1",
    "127.1",
    "127.0.1",
    "2130706433",
    "017700000001",
    "0x7f000001",
    "0x7f.1",
    "0x7F.0x0.0x0.0x1",
    "0177.0.0.1",
    "0177.0.0.01",
    "127.0.0.1.",
    "localhost.",  # a name: refused at resolution, not here (see test_names_are_not_addresses)
    "0",
    "0.0.0.0",
    "0.1.2.3",
    "10.0.0.1",
    "012.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "3232235777",
    "169.254.169.254",
    "0xa9fea9fe",
    "100.64.0.1",
    "100.127.255.254",
    "192.0.0.1",
    "192.0.0.9",
    "192.0.0.170",
    "198.18.0.1",
    "198.19.255.255",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "[::1]",
    "[::]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[::ffff:8.8.8.8]",
    "[::127.0.0.1]",
    "[::8.8.8.8]",
    "[64:ff9b::7f00:1]",
    "[64:ff9b::808:808]",
    "[2002:7f00:1::]",
    "[2002:808:808::1]",
    "[2001::1]",
    "[fe80::1]",
    "[fc00::1]",
    "[fd12:3456::1]",
    "[ff02::1]",
    "[ff0e::1]",
]


@pytest.mark.parametrize("host", [h for h in FORBIDDEN_HOSTS if h != "localhost."])
def test_every_spelling_of_a_forbidden_address_is_refused(host: str) -> None:
    with pytest.raises(UrlRefused) as info:
        check_url(f"https://{host}/x.png")
    assert info.value.kind == "forbidden_address"
    assert info.value.status == 400


@pytest.mark.parametrize(
    ("spelling", "address"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("10.1.2", "10.1.0.2"),
        ("0x8.0x8.0x8.0x8", "8.8.8.8"),
        ("134744072", "8.8.8.8"),
        ("8.8.8.8.", "8.8.8.8"),
        ("0x", "0.0.0.0"),
    ],
)
def test_odd_ipv4_spellings_read_as_resolvers_read_them(spelling: str, address: str) -> None:
    assert literal_address(spelling) == ipaddress.IPv4Address(address)


@pytest.mark.parametrize("host", ["1.2.3.256", "256.1.1.1", "1.2.3.4.5", "08.1.1.1", "0x1g.1", "a.1", "4294967296"])
def test_malformed_addresses_are_refused_not_resolved(host: str) -> None:
    with pytest.raises(BadHost):
        literal_address(host)
    with pytest.raises(UrlRefused) as info:
        check_url(f"https://{host}/")
    assert info.value.kind == "bad_url"


@pytest.mark.parametrize("host", ["example.com", "localhost", "a1.example", "1a.example", "xn--n3h.com"])
def test_names_are_not_addresses(host: str) -> None:
    assert literal_address(host) is None
    checked = check_url(f"https://{host}/")
    assert checked.address is None and not checked.allowed


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "2a00:1450:4001::1"])
def test_public_addresses_pass(address: str) -> None:
    assert forbidden_reason(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/a.png",
        "ftp://example.com/a.png",
        "file:///etc/passwd",
        "gopher://example.com/",
        "//example.com/a.png",
        "example.com/a.png",
        "https://user@example.com/a.png",
        "https://user:pass@example.com/a.png",
        "https://:pass@example.com/a.png",
        "https://@example.com/a.png",
    ],
)
def test_scheme_and_userinfo_give_the_format_message(url: str) -> None:
    with pytest.raises(UrlFormatRefused) as info:
        check_url(url)
    assert info.value.media_message == "Invalid format: url must be an https URL without userinfo"


@pytest.mark.parametrize(
    "url",
    [
        "https:///a.png",
        "https://exa mple.com/",
        "https://example.com:99999/",
        "https://127.0.0.1%2f@x/",
        "https://[fe80::1%25eth0]/",
        "https://example.com\t/",
    ],
)
def test_malformed_urls_are_refused(url: str) -> None:
    with pytest.raises(UrlRefused):
        check_url(url)


def test_fullwidth_digits_are_normalised_before_the_check() -> None:
    with pytest.raises(UrlRefused) as info:
        check_url("https://２１３０７０６４３３/")
    assert info.value.kind == "forbidden_address"


def test_allow_list_matches_the_literal_host_and_port_only() -> None:
    allow = NetSettings(allow_hosts="127.0.0.1:8443, localhost:9000").allowed_pairs()
    assert check_url("https://127.0.0.1:8443/a", allow).allowed
    assert check_url("http://127.0.0.1:8443/a", allow).allowed  # plain http too, for allowed hosts only
    assert check_url("http://localhost:9000/a", allow).allowed
    assert check_url("http://LOCALHOST.:9000/a", allow).allowed
    for other in [
        "https://127.0.0.1:8444/a",
        "https://2130706433:8443/a",
        "https://127.1:8443/a",
        "https://[::ffff:127.0.0.1]:8443/a",
        "https://127.0.0.2:8443/a",
    ]:
        with pytest.raises(UrlRefused):
            check_url(other, allow)
    with pytest.raises(UrlFormatRefused):
        check_url("http://localhost:9001/a", allow)


@pytest.mark.parametrize("bad", ["localhost", "localhost:0", "localhost:x", ":80", "a:70000"])
def test_allow_list_entries_must_be_host_and_port(bad: str) -> None:
    with pytest.raises(ValueError, match="host:port"):
        NetSettings(allow_hosts=bad)


def _spell(value: int, parts: int, rng: random.Random) -> str:
    """`value` as an inet_aton string of `parts` parts, each in decimal, octal or hex."""
    sizes = [1] * (parts - 1) + [4 - (parts - 1)]
    numbers, shift = [], 32
    for size in sizes:
        shift -= 8 * size
        numbers.append((value >> shift) & ((1 << (8 * size)) - 1))
    out = []
    for n in numbers:
        style = rng.choice(["dec", "oct", "hex", "HEX"])
        out.append({"dec": str(n), "oct": "0" + format(n, "o"), "hex": hex(n), "HEX": "0X" + format(n, "X")}[style])
    return ".".join(out)


def test_address_spellings_agree_with_the_c_library() -> None:
    # glibc's inet_aton is what getaddrinfo applies to numeric hosts: ours must read every spelling the same.
    rng = random.Random(11)
    for _ in range(3000):
        value = rng.choice([rng.getrandbits(32), rng.getrandbits(8) << 24, 0x7F000001, rng.getrandbits(16)])
        text = _spell(value, rng.randint(1, 4), rng)
        expected = ipaddress.IPv4Address(socket.inet_aton(text))
        assert literal_address(text) == expected == ipaddress.IPv4Address(value), text
