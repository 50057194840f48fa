"""Which IP addresses a user URL may reach, and every spelling of an address a URL host can hide.

`literal_address(host)` reads a URL host the way resolvers and browsers do (WHATWG URL "ends in a
number", glibc `inet_aton`): `2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1` and `127.0.0.1.` all mean
127.0.0.1, so they are addresses, never names to look up. `forbidden_reason(ip)` says why an address
must not be reached, or None when it is globally routable.
"""

from __future__ import annotations

import ipaddress
import re

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Ranges `is_global` lets through on some Python versions, or that embed another (possibly private)
# IPv4 address: carrier-grade NAT, IETF protocol assignments, benchmarking, "this network", multicast,
# NAT64, 6to4.
_EXTRA_V4 = tuple(
    ipaddress.IPv4Network(n)
    for n in ("0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4")
)
_EXTRA_V6 = tuple(
    ipaddress.IPv6Network(n) for n in ("64:ff9b::/96", "64:ff9b:1::/48", "2002::/16", "2001::/32", "ff00::/8")
)
_V4_COMPATIBLE = ipaddress.IPv6Network("::/96")

_HEX_PART = re.compile(r"0[xX][0-9a-fA-F]*")
_DEC_PART = re.compile(r"[0-9]+")


class BadHost(ValueError):
    """The host is spelled as an address but is not a valid one (e.g. `1.2.3.999`, `0x1g.1`)."""


def _number(part: str) -> int | None:
    """One dotted part in inet_aton's notation: 0x.. hex, 0.. octal, else decimal; None if not numeric."""
    if _HEX_PART.fullmatch(part):
        return int(part[2:] or "0", 16)
    if not _DEC_PART.fullmatch(part):
        return None
    if len(part) > 1 and part.startswith("0"):
        if any(c in "89" for c in part):
            raise BadHost(f"{part!r} is not an octal number")
        return int(part, 8)
    return int(part)


def _ipv4_spelling(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address an inet_aton-style host means; None if the host is a name."""
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts = parts[:-1]  # one trailing dot is allowed, as in DNS
    last = parts[-1] if parts else ""
    # WHATWG: a host whose last label is a number is an IPv4 address (or invalid), never a DNS name.
    if not (_DEC_PART.fullmatch(last) or _HEX_PART.fullmatch(last)):
        return None
    if len(parts) > 4:
        raise BadHost("too many parts for an IPv4 address")
    numbers = []
    for part in parts:
        value = _number(part)
        if value is None:
            raise BadHost(f"{part!r} is not a number")
        numbers.append(value)
    *head, tail = numbers
    if any(n > 255 for n in head) or tail >= 256 ** (4 - len(head)):
        raise BadHost("a part of the address is out of range")
    value = tail
    for i, n in enumerate(head):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def literal_address(host: str) -> IPAddress | None:
    """The address a URL host spells, in any notation; None for a DNS name. Raises BadHost if malformed.

    IPv6 literals come without their brackets; a zone id (`fe80::1%eth0`) is refused as malformed.
    """
    if ":" in host:
        if "%" in host:
            raise BadHost("IPv6 zone ids are not allowed")
        try:
            return ipaddress.IPv6Address(host)
        except ValueError as exc:
            raise BadHost(f"{host!r} is not a valid IPv6 address") from exc
    return _ipv4_spelling(host)


def forbidden_reason(ip: IPAddress) -> str | None:
    """Why `ip` must not be reached from the server ("private", "loopback", ...), or None if it is public."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return "an IPv4-mapped IPv6 address"
        if ip in _V4_COMPATIBLE:
            return "an IPv4-compatible IPv6 address"
        if any(ip in net for net in _EXTRA_V6):
            return "an address that embeds another address or is multicast"
    elif any(ip in net for net in _EXTRA_V4):
        return "a reserved, shared or multicast address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast:
        return "a multicast address"
    if not ip.is_global:
        return "a private or reserved address"
    return None
