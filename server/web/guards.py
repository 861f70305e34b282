"""Checks of an HTTP request before its body is read: the Host it names and its Content-Type.

A web page in an operator's browser can POST to a loopback API with a "simple" request
(``text/plain``, no preflight), and DNS rebinding can make a foreign name resolve to
127.0.0.1 so that page reads the answers. Requiring ``Content-Type: application/json`` forces
the browser's CORS preflight (which this server never grants), and checking ``Host`` against
the bind address (or ``--http-allowed-hosts``) refuses rebound names.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from tokend.core.errors import InvalidInput, PermissionDenied, shown
from tokend.server.errors import with_field

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
PASSED_HOSTS = 64  # Host headers remembered as allowed


def check_content_type(value: str) -> None:
    """A request body must be declared JSON (``application/json``, any parameters).

    >>> check_content_type("application/json; charset=utf-8")
    >>> check_content_type("text/plain")
    Traceback (most recent call last):
    tokend.core.errors.InvalidInput: Content-Type must be application/json, not 'text/plain'
    """
    if value.split(";", 1)[0].strip().lower() != "application/json":
        raise with_field(InvalidInput(
            f"Content-Type must be application/json, not {shown(value or '(none)', 60)}"),
            "content-type")


def host_name(header: str) -> str:
    """The host of a ``Host`` header, without port or IPv6 brackets, lower case.

    >>> host_name("[::1]:8080"), host_name("Example.com:80"), host_name("localhost")
    ('::1', 'example.com', 'localhost')
    """
    try:
        return (urlsplit("//" + header).hostname or "").lower()
    except ValueError:
        return ""


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class HostRule:
    """Which ``Host`` headers this server answers: the listed names (--http-allowed-hosts),
    else, on a loopback bind, loopback names only; on any other bind, its address or any name
    when it binds every interface (0.0.0.0 / ::, a name the server cannot know)."""

    allowed: frozenset[str]
    bind: str
    # subtle: Host headers that passed (a client sends the same one every time): parsing one
    # with urlsplit cost ~3 µs of a 1 KB /count; bounded, as the values come from clients.
    _passed: set[str] = field(default_factory=set, compare=False, repr=False)

    def check(self, header: str) -> None:
        if header in self._passed:
            return
        host = host_name(header)
        if self.allowed:
            ok = host in self.allowed
        elif _is_loopback(self.bind.strip("[]")) or self.bind == "localhost":
            ok = _is_loopback(host)
        elif self.bind in ("0.0.0.0", "::", ""):
            ok = True
        else:
            ok = host == self.bind.strip("[]").lower() or _is_loopback(host)
        if not ok:
            known = ", ".join(sorted(self.allowed)) or f"the bind address {self.bind}"
            raise with_field(PermissionDenied(
                f"Host {shown(header or '(none)', 60)} is not a name this server answers to "
                f"({known}); add it to --http-allowed-hosts"), "host")
        if len(self._passed) >= PASSED_HOSTS:
            self._passed.clear()
        self._passed.add(header)
