"""The sidecar's address: ``A2A_COMMANDS_ADDR`` and the ``target`` a client is given.

Two forms, as ``a2a-commands ctl --addr`` takes them (docs/kit-contract.md, section 7):
a URL, ``http://host:port`` or ``https://host:port`` (TLS), or ``host:port``. Pinned by
``docs/vectors/addresses.json``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

ADDRESS_ENV = "A2A_COMMANDS_ADDR"
DEFAULT_ADDRESS = "http://127.0.0.1:50051"

_ADDRESS = re.compile(r"(?:(?P<scheme>[A-Za-z]+)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[^\s:/?#@\[\]]+):(?P<port>[0-9]+)(?P<slash>/?)")


@dataclass(frozen=True)
class Address:
    """Where the sidecar is: ``target`` (``host:port``) and whether to use TLS."""

    target: str
    tls: bool


def parse_address(value: str) -> Address:
    """Reads an address in either form; ``ValueError`` names what is wrong."""
    match = _ADDRESS.fullmatch(value)
    scheme = (match.group("scheme") or "").lower() if match else ""
    if not match or scheme not in ("", "http", "https") or (match.group("slash") and not scheme):
        raise ValueError(f"{value!r} is not host:port, http://host:port or https://host:port")
    port = int(match.group("port"))
    if not 1 <= port <= 65535:
        raise ValueError(f"{value!r}: the port must be 1 to 65535")
    return Address(f"{match.group('host')}:{port}", scheme == "https")


def address_from_env() -> Address:
    """``$A2A_COMMANDS_ADDR``, else :data:`DEFAULT_ADDRESS`."""
    value = os.environ.get(ADDRESS_ENV) or DEFAULT_ADDRESS
    try:
        return parse_address(value)
    except ValueError as error:
        raise ValueError(f"{ADDRESS_ENV}: {error}") from None
