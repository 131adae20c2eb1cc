"""A delivery's connection: to the address that was checked (DNS rebinding), within one
deadline for the whole exchange, and over TLS verified against the URL's host name
(memoryhub/infra/outbound.py). Deliveries run in-process, to real local servers."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import trustme

from memoryhub.infra.outbound import NoAnswer, Unreachable, post_status
from memoryhub.models import DeliveryStatus
from tests.webhooks.receiver import webhook_receiver
from tests.webhooks.test_webhooks import create, deliver, delivery_of, event

PUBLIC = "1.1.1.1"  # a public address: where the checks are sent, never reached here


def _timeout(settings: Any, seconds: float, *, private: bool) -> None:
    settings.MEMORYHUB_WEBHOOKS = {**settings.MEMORYHUB_WEBHOOKS, "timeout": seconds,
                                   "allow_private_urls": private}


@pytest.fixture
def rebinding_dns(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """``rebind.test`` as a hostile name server answers it: a public address to the first two
    lookups (the endpoint's creation and the delivery's check), then 127.0.0.1. Yields the
    answers given, in order; other names resolve as usual."""
    real = socket.getaddrinfo
    answers: list[str] = []

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "rebind.test":
            return real(host, port, *args, **kwargs)
        answers.append(PUBLIC if len(answers) < 2 else "127.0.0.1")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers[-1], int(port or 80)))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield answers


def test_a_name_rebound_to_127_0_0_1_after_the_check_is_not_connected_to(
    acme, globex, settings, rebinding_dns,
) -> None:
    """Before, the delivery checked the name, then httpx looked it up again to connect: the
    second answer (127.0.0.1) got the signed event, on the service's own loopback."""
    _timeout(settings, 1.0, private=False)
    with webhook_receiver() as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        create(acme, f"http://rebind.test:{port}/hooks/memory")
        event(acme)
        assert deliver(acme, delivery_of(acme).pk) == DeliveryStatus.PENDING  # to retry
    assert receiver.received == []
    assert rebinding_dns == [PUBLIC, PUBLIC]  # looked up once per check, and connected there
    assert delivery_of(acme).last_error  # what came of connecting to the public address


def test_a_status_line_trickled_past_the_timeout_is_no_answer(acme, globex, settings) -> None:
    """httpx's timeout is per read: an answer a byte every 50 ms never waited that long for
    one read, and held the delivery for as long as it went on. The timeout is for the whole."""
    _timeout(settings, 1.0, private=True)
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Slow: " + b"." * 60 + b"\r\n\r\n"
    sent: list[int] = []

    def trickle(listener: socket.socket) -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            try:
                for byte in answer:
                    connection.sendall(bytes([byte]))
                    sent.append(byte)
                    time.sleep(0.05)
            except OSError:  # the delivery hung up
                pass

    with socket.create_server(("127.0.0.1", 0)) as listener:
        server = threading.Thread(target=trickle, args=(listener,), daemon=True)
        server.start()
        create(acme, f"http://127.0.0.1:{listener.getsockname()[1]}/hooks")
        event(acme)
        assert deliver(acme, delivery_of(acme).pk) == DeliveryStatus.PENDING
        server.join(10)
    assert delivery_of(acme).last_error == "no answer within the timeout"
    assert len(sent) < len(answer)  # it hung up before the answer was whole


@pytest.fixture
def authority(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> trustme.CA:
    """A throwaway CA that the delivery trusts (SSL_CERT_FILE, as httpx reads it)."""
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    return ca


def _served_as(ca: trustme.CA, name: str) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(name).configure_cert(context)
    return context


def test_https_is_verified_against_the_host_name(acme, globex, settings, authority) -> None:
    """The connection goes to the checked address, but TLS checks the certificate against
    the URL's name (``localhost``), not the address (127.0.0.1, which it was not issued for)."""
    _timeout(settings, 5.0, private=True)
    with webhook_receiver(tls=_served_as(authority, "localhost")) as receiver:
        create(acme, receiver.url)
        event(acme)
        assert deliver(acme, delivery_of(acme).pk) == DeliveryStatus.DELIVERED
    assert len(receiver.received) == 1


def test_a_certificate_for_another_name_is_refused(acme, globex, settings, authority) -> None:
    _timeout(settings, 5.0, private=True)
    with webhook_receiver(tls=_served_as(authority, "elsewhere.test")) as receiver:
        create(acme, receiver.url)
        event(acme)
        assert deliver(acme, delivery_of(acme).pk) == DeliveryStatus.PENDING
    assert receiver.received == []
    assert "certificate" in delivery_of(acme).last_error.lower()


def test_an_ipv6_address_gets_its_brackets_in_the_host_header(acme, globex, settings) -> None:
    """``Host: [::1]:PORT``, as httpx sent it; httpcore on its own wrote ``::1:PORT``."""
    _timeout(settings, 5.0, private=True)
    hosts: list[str] = []

    class Recording(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # http.server's naming
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            hosts.append(self.headers.get("Host", ""))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return None

    class V6Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6

    try:
        server = V6Server(("::1", 0), Recording)
    except OSError:
        pytest.skip("no IPv6 loopback here")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        create(acme, f"http://[::1]:{port}/hooks")
        event(acme)
        assert deliver(acme, delivery_of(acme).pk) == DeliveryStatus.DELIVERED
    finally:
        server.shutdown()
        server.server_close()
    assert hosts == [f"[::1]:{port}"]


@pytest.mark.parametrize("url", ["http://xn--/hook", "http://xn--zz.example/hook"])
def test_a_malformed_idna_name_is_unreachable_not_a_crash(url: str) -> None:
    """Decoding it for the Host header raised idna's error past every handler: the task died
    after its claim, and nothing recorded the attempt."""
    with pytest.raises(Unreachable):
        post_status(url, body=b"{}", headers={}, timeout=2.0, allowed=lambda address: True)


def test_a_name_server_that_does_not_answer_is_no_answer_within_the_timeout(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The lookup counts against the timeout: glibc's could take 30 s, past the lease."""
    real = socket.getaddrinfo

    def slow(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "slow-dns.test":
            time.sleep(3)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    with pytest.raises(NoAnswer):  # waited for, the lookup ends in "does not resolve"
        post_status("http://slow-dns.test/hook", body=b"{}", headers={}, timeout=0.5,
                    allowed=lambda address: True)
