"""The aiohttp resolver that pins a connection to checked addresses.

aiohttp connects to the addresses its resolver returns while keeping the URL's host for the `Host`
header and TLS SNI/certificate checks. This resolver resolves once, refuses the whole name if ANY answer
is not globally routable (a name with one public and one private answer could be steered to the private
one), and returns exactly the answers it checked, so there is no second lookup to race (DNS rebinding).
Allow-listed `host:port` pairs resolve without the check. Hosts spelled as odd IPv4 notations
(`0x7f.1`) never reach getaddrinfo, which would read them as addresses.
"""

from __future__ import annotations

import asyncio
import socket

from aiohttp.abc import AbstractResolver, ResolveResult

from modelport.net.addresses import BadHost, forbidden_reason, literal_address
from modelport.net.errors import UrlRefused
from modelport.net.urls import host_key


class CheckingResolver(AbstractResolver):
    def __init__(self, allow_hosts: frozenset[str]) -> None:
        self._allow = allow_hosts

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        name = host.lower()
        bare = name.rstrip(".") if ":" not in name else name  # `example.com.` is `example.com`
        allowed = host_key(bare, port) in self._allow
        try:
            spelled = literal_address(bare)
        except BadHost as exc:
            raise UrlRefused("bad_url", f"url host is not a valid address: {exc}") from exc
        if spelled is not None:
            if not allowed and (reason := forbidden_reason(spelled)) is not None:
                raise UrlRefused("forbidden_address", f"url points to {reason}, which the server does not fetch")
            fam = socket.AF_INET6 if spelled.version == 6 else socket.AF_INET
            return [_result(host, str(spelled), port, fam)]
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(name, port, type=socket.SOCK_STREAM, family=family)
        except (socket.gaierror, UnicodeError) as exc:
            raise UrlRefused("unresolvable", f"url host {host!r} does not resolve") from exc
        results: list[ResolveResult] = []
        for fam, _type, _proto, _canon, sockaddr in infos:
            address = str(sockaddr[0]).split("%", 1)[0]
            ip = literal_address(address)
            if ip is None:
                continue
            if not allowed and (reason := forbidden_reason(ip)) is not None:
                raise UrlRefused(
                    "forbidden_address", f"url host {host!r} resolves to {reason}, which the server does not fetch"
                )
            results.append(_result(host, str(ip), port, socket.AddressFamily(fam)))
        if not results:
            raise UrlRefused("unresolvable", f"url host {host!r} does not resolve")
        return results

    async def close(self) -> None:
        return None


def _result(hostname: str, address: str, port: int, family: socket.AddressFamily) -> ResolveResult:
    return ResolveResult(
        hostname=hostname, host=address, port=port, family=family, proto=0, flags=socket.AI_NUMERICHOST
    )
