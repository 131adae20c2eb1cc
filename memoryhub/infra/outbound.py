"""POSTs to URLs that tenants give us (webhook endpoints), answered by their status alone.

httpcore (httpx's own engine) with a network backend of ours, for two things httpx cannot be
told:

- **The address checked is the address connected to.** The host is resolved once, every
  address it resolves to is checked (``allowed``), and the connection goes to a checked
  address. A check before httpx's own lookup left a window for DNS rebinding: a name that
  answered a public address to the check could answer 127.0.0.1 to the connection. TLS still
  verifies the certificate against the host name (httpcore gives the name, not the address,
  as the server name).
- **One deadline for the whole exchange.** httpx's timeouts are per step (the connection,
  each read), so an endpoint trickling its status line a byte at a time held the thread for
  as long as it went on. Each step here gets what is left of ``timeout``, at most.

The answer's body is never read: the status is the whole answer, and an endpoint that sends an
endless body would hold the thread for as long as it kept the bytes coming. Proxies from the
environment (``HTTPS_PROXY``) are not used: the address check is the egress policy.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import httpcore
import httpx

__all__ = ["AddressRefused", "NoAnswer", "Unreachable", "addresses_of", "post_status"]


class AddressRefused(Exception):
    """The host resolves to an address ``allowed`` refuses (nothing was sent)."""

    def __init__(self, host: str, address: str) -> None:
        super().__init__(f"{host} resolves to {address}")
        self.host, self.address = host, address


class Unreachable(Exception):
    """No connection, or the connection failed before an answer came (the reason)."""


class NoAnswer(Exception):
    """No status within the timeout."""


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self._at = time.monotonic() + seconds

    def left(self, timeout: float | None) -> float:
        """What a step may wait: its own timeout, at most what is left of the whole."""
        left = self._at - time.monotonic()
        if left <= 0:
            raise httpcore.ReadTimeout("the deadline has passed")
        return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    """A connection whose every step waits at most until the deadline."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: _Deadline) -> None:
        self._inner, self._deadline = inner, deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._deadline.left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._deadline.left(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        tls = self._inner.start_tls(ssl_context, server_hostname, self._deadline.left(timeout))
        return _Stream(tls, self._deadline)

    def get_extra_info(self, info: str) -> object:
        return self._inner.get_extra_info(info)


class _CheckedBackend(httpcore.NetworkBackend):
    """Connects to ``host`` only through addresses ``allowed`` accepts, looked up once."""

    def __init__(self, allowed: Callable[[str], bool], deadline: _Deadline) -> None:
        self._allowed, self._deadline = allowed, deadline
        self._inner = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
                    ) -> httpcore.NetworkStream:
        addresses = _addresses(host, port, self._deadline)
        for address in addresses:
            if not self._allowed(address):
                raise AddressRefused(host, address)  # any: the next lookup may pick it
        failure: Exception = Unreachable(f"{host} does not resolve")
        for address in addresses:  # in the resolver's order, as a connection would try them
            try:
                inner = self._inner.connect_tcp(address, port, self._deadline.left(timeout),
                                                local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
                continue
            return _Stream(inner, self._deadline)
        raise failure

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
                            ) -> httpcore.NetworkStream:
        raise Unreachable("no Unix sockets")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def _addresses(host: str, port: int, deadline: _Deadline) -> list[str]:
    """The host's addresses, looked up within the deadline. In a thread of its own: glibc's
    lookup cannot be given a timeout, and a name server of the tenant's that answers slowly
    held it up to 30 s, past the attempt's lease. A lookup given up on ends on its own."""
    found: list[Any] = []

    def lookup() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except (OSError, UnicodeError) as exc:  # gaierror is an OSError
            found.append(exc)

    thread = threading.Thread(target=lookup, daemon=True, name="webhook-dns")
    thread.start()
    thread.join(deadline.left(None))
    if not found:
        raise httpcore.ConnectTimeout(f"{host} did not resolve within the timeout")
    if isinstance(found[0], Exception):
        raise Unreachable(f"{host} does not resolve") from found[0]
    return list(dict.fromkeys(str(info[4][0]) for info in found[0]))  # once each, in order


def addresses_of(host: str, port: int, *, timeout: float) -> list[str]:
    """The host's addresses, looked up within ``timeout`` seconds (a webhook URL's check at
    its creation). Raises Unreachable, or NoAnswer when the lookup takes longer."""
    try:
        return _addresses(host, port, _Deadline(timeout))
    except httpcore.TimeoutException as exc:
        raise NoAnswer() from exc


def _host_header(url: httpx.URL) -> str:
    """httpx's Host header, from the URL's bytes as sent: an IPv6 address in brackets (which
    httpcore's own header left out), the port when not the scheme's. Not ``url.host``: that
    decodes an IDNA name, and a malformed one (``xn--``) raised past every handler."""
    host = url.raw_host.decode("ascii")
    if ":" in host:
        host = f"[{host}]"
    return host if url.port is None else f"{host}:{url.port}"


def post_status(url: str, *, body: bytes, headers: Mapping[str, str], timeout: float,
                allowed: Callable[[str], bool]) -> int:
    """POST ``body`` to ``url`` and return the answer's status, within ``timeout`` seconds
    in all. Raises AddressRefused, Unreachable (with the reason) or NoAnswer."""
    deadline = _Deadline(timeout)
    steps = {"connect": timeout, "read": timeout, "write": timeout, "pool": timeout}
    try:
        parsed = httpx.URL(url)  # as httpx sent it: IDNA host, percent-encoded path
        target = httpcore.URL(scheme=parsed.raw_scheme, host=parsed.raw_host,
                              port=parsed.port, target=parsed.raw_path)
        headers = {"Host": _host_header(parsed), **headers}
        # httpx's TLS settings (certifi's roots, SSL_CERT_FILE), as before.
        with httpcore.ConnectionPool(network_backend=_CheckedBackend(allowed, deadline),
                                     ssl_context=httpx.create_ssl_context()) as pool, \
                pool.stream("POST", target, headers=list(headers.items()), content=body,
                            extensions={"timeout": steps}) as response:
            return response.status
    except httpcore.TimeoutException as exc:
        raise NoAnswer() from exc
    except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.UnsupportedProtocol,
            httpx.InvalidURL, OSError, ValueError) as exc:  # ValueError: UnicodeError, IDNA
        raise Unreachable(str(exc) or type(exc).__name__) from exc
