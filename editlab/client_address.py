"""The address of the client that sent a request.

Without trusted proxies it is REMOTE_ADDR: a header any client can write is never believed.
With TRUSTED_PROXIES (addresses or networks), a request arriving from one of them has its client
taken from the proxy header (X-Forwarded-For by default): read from the right, the first address
that is not itself a trusted proxy is the client. Entries further left were written by the
client or by proxies nobody vouches for, so they are ignored.
"""

import ipaddress
from functools import lru_cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def parse_networks(variable: str, values: list[str]) -> tuple[Network, ...]:
    """`10.0.0.0/8`, `127.0.0.1`, `::1` -> networks; a bad entry fails naming the variable."""
    networks = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value, strict=False))
        except ValueError:
            raise ImproperlyConfigured(f"{variable}: {value!r} is not an IP address or network.") from None
    return tuple(networks)


@lru_cache(maxsize=8)
def _trusted(proxies: tuple[str, ...]) -> tuple[Network, ...]:
    return parse_networks("TRUSTED_PROXIES", list(proxies))


def _address(value: str) -> Address | None:
    value = value.strip()
    if value.startswith("[") and "]" in value:  # [::1]:443
        value = value[1 : value.index("]")]
    elif value.count(":") == 1:  # 203.0.113.5:443
        value = value.split(":", 1)[0]
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def _is_trusted(address: Address, networks: tuple[Network, ...]) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in network for network in networks)


def from_trusted_proxy(request: HttpRequest) -> bool:
    peer = _address(request.META.get("REMOTE_ADDR", "") or "")
    networks = _trusted(tuple(settings.TRUSTED_PROXIES))
    return peer is not None and bool(networks) and _is_trusted(peer, networks)


def client_address(request: HttpRequest) -> str:
    remote = request.META.get("REMOTE_ADDR", "") or ""
    networks = _trusted(tuple(settings.TRUSTED_PROXIES))
    peer = _address(remote)
    if not networks or peer is None or not _is_trusted(peer, networks):
        return remote
    header = "HTTP_" + settings.CLIENT_ADDRESS_HEADER.upper().replace("-", "_")
    hops = [hop for hop in request.META.get(header, "").split(",") if hop.strip()]
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            # Garbage where an address should be: what lies to its left cannot be trusted either.
            return str(peer)
        if not _is_trusted(address, networks):
            return str(address)
    # Every hop is a trusted proxy (or there is no header): the leftmost one is the best we know.
    first = _address(hops[0]) if hops else None
    return str(first or peer)
