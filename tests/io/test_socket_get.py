"""The blocking-socket ranged GET (lancefmt/io/socket_get.py) against a scripted HTTP server:
connections kept and reused, a connection the server closed while idle replaced without an
error, bodies received whole as ``bytes``, cut bodies reported with the prefix that arrived,
chunked error answers read. The store-level fault tests (tests/io/test_s3_remote.py, the
fault proxy) run every ranged read through it too."""
import socket
import threading

import pytest

from lancefmt.io.retry import ShortBody, classify
from lancefmt.io.socket_get import SocketGets


class Server:
    """Answers each request with the next scripted answer (bytes, or a callable of the
    connection); counts connections."""

    def __init__(self, tls=None):
        self.sock = socket.create_server(("127.0.0.1", 0))
        if tls is not None:
            self.sock = tls.wrap_socket(self.sock, server_side=True)
        self.port = self.sock.getsockname()[1]
        self.answers = []
        self.connections = 0
        self.requests = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        buf = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, buf = buf.split(b"\r\n\r\n", 1)
                self.requests.append(head.decode())
                answer = self.answers.pop(0)
                if callable(answer):
                    if answer(conn) is False:
                        return
                else:
                    conn.sendall(answer)

    def close(self):
        self.sock.close()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


def ok(body: bytes, status=b"206 Partial Content", extra=b""):
    return (b"HTTP/1.1 " + status + b"\r\nContent-Length: " + str(len(body)).encode() +
            b"\r\nContent-Range: bytes 0-%d/999\r\n" % (len(body) - 1) + extra + b"\r\n" + body)


def test_bodies_come_whole_and_connections_are_reused(server):
    gets = SocketGets(5, 5)
    url = f"http://127.0.0.1:{server.port}/b/k?X-Amz-Signature=abc%2Fdef"
    big = bytes(range(256)) * 40_000  # 10 MB: received in many pieces
    server.answers = [ok(b"hello"), ok(big), ok(b"")]
    status, fields, body = gets.get(url, {"Range": "bytes=0-4", "User-Agent": "ua/1"})
    assert (status, body, fields["content-range"]) == (206, b"hello", "bytes 0-4/999")
    assert type(body) is bytes
    assert gets.get(url, {"Range": "bytes=0-"})[2] == big
    assert gets.get(url, {"Range": "bytes=0-0"})[2] == b""
    assert server.connections == 1
    first = server.requests[0].split("\r\n")
    assert first[0] == "GET /b/k?X-Amz-Signature=abc%2Fdef HTTP/1.1"  # sent as signed
    assert f"Host: 127.0.0.1:{server.port}" in first and "Range: bytes=0-4" in first
    assert "User-Agent: ua/1" in first


def test_a_connection_closed_while_idle_is_replaced(server):
    gets = SocketGets(5, 5)
    url = f"http://127.0.0.1:{server.port}/b/k"
    server.answers = [ok(b"one", extra=b""), lambda conn: False, ok(b"two")]
    assert gets.get(url, {})[2] == b"one"
    # the server drops the kept connection at the next request: sent again on a new one
    assert gets.get(url, {})[2] == b"two"
    assert server.connections == 2


def test_a_body_cut_short_keeps_what_arrived(server):
    gets = SocketGets(5, 5)
    url = f"http://127.0.0.1:{server.port}/b/k"
    head = b"HTTP/1.1 206 Partial Content\r\nContent-Length: 1000\r\n\r\n"

    def cut(conn):
        conn.sendall(head + b"x" * 300)
        return False  # closed: 700 bytes never come

    server.answers = [cut]
    with pytest.raises(ShortBody) as e:
        gets.get(url, {})
    assert (e.value.got, e.value.expected, e.value.data) == (300, 1000, b"x" * 300)
    assert classify(e.value) == "body"


def test_a_new_connection_closed_before_an_answer_is_a_connection_error(server):
    gets = SocketGets(5, 5)
    server.answers = [lambda conn: False]
    with pytest.raises(ConnectionError) as e:
        gets.get(f"http://127.0.0.1:{server.port}/b/k", {})
    assert classify(e.value) == "request"


def test_a_chunked_error_answer_is_read(server):
    gets = SocketGets(5, 5)
    xml = b"<Error><Code>SlowDown</Code></Error>"
    chunked = (b"HTTP/1.1 503 Slow Down\r\nTransfer-Encoding: chunked\r\n\r\n" +
               b"%x\r\n" % 10 + xml[:10] + b"\r\n" + b"%x\r\n" % (len(xml) - 10) + xml[10:] +
               b"\r\n0\r\n\r\n")
    server.answers = [chunked, ok(b"after")]
    status, _, body = gets.get(f"http://127.0.0.1:{server.port}/b/k", {})
    assert (status, body) == (503, xml)
    assert gets.get(f"http://127.0.0.1:{server.port}/b/k", {})[2] == b"after"
    assert server.connections == 1


def test_a_silent_server_times_out(server):
    gets = SocketGets(5, 0.2)
    server.answers = [lambda conn: None]  # reads the request, never answers
    with pytest.raises(TimeoutError) as e:
        gets.get(f"http://127.0.0.1:{server.port}/b/k", {})
    assert classify(e.value) == "request"


def test_close_drops_the_idle_connections(server):
    gets = SocketGets(5, 5)
    server.answers = [ok(b"a"), ok(b"b")]
    url = f"http://127.0.0.1:{server.port}/b/k"
    assert gets.get(url, {})[2] == b"a"
    gets.close()
    assert gets.get(url, {})[2] == b"b"  # a new connection: the kept one was closed
    assert server.connections == 2


@pytest.fixture
def tls_server(tmp_path):
    """The scripted server behind TLS, with a self-signed certificate for localhost."""
    import datetime
    import ssl

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert_path, key_path)
    s = Server(server_ctx)
    yield s, ssl.create_default_context(cafile=str(cert_path))
    s.close()


@pytest.mark.parametrize("read_timeout", [None, 5])
def test_https_bodies_come_whole_on_a_kept_connection(tls_server, read_timeout):
    server, client_ctx = tls_server
    gets = SocketGets(5, read_timeout, client_ctx)
    url = f"https://localhost:{server.port}/b/k?X-Amz-Signature=s"
    big = bytes(range(256)) * 20_000  # 5 MB over many TLS records
    server.answers = [ok(big), ok(b"again")]
    assert gets.get(url, {"Range": "bytes=0-"})[2] == big
    assert gets.get(url, {})[2] == b"again"
    assert server.connections == 1


# -- a body received after one wake-up (_recv.recv_body_marked) ------------------------------------
def _trickle(body: bytes, pieces: int, pause: float = 0.002):
    """An answer whose body is sent in ``pieces`` writes, ``pause`` seconds apart."""
    import time

    head = b"HTTP/1.1 206 Partial Content\r\nContent-Length: %d\r\n\r\n" % len(body)

    def send(conn):
        conn.sendall(head)
        step = -(-len(body) // pieces)
        for off in range(0, len(body), step):
            time.sleep(pause)
            conn.sendall(body[off:off + step])

    return send


def test_a_trickled_body_wakes_the_reader_a_few_times_not_per_piece(server):
    """Guard (a count, not a time): 64 writes of a 4 MB body wake the receiving thread a few
    times (the receive mark is the rest of the body), not once per write; the connection is
    then reused with its mark back at 1 (the next answer's head is read, no hang)."""
    import resource

    from lancefmt.io import socket_get

    assert socket_get.MARKED
    gets = SocketGets(5, 5)
    url = f"http://127.0.0.1:{server.port}/b/k"
    body = bytes(range(256)) * (4 << 12)
    server.answers = [ok(b"warm"), _trickle(body, 64), ok(b"next")]
    assert gets.get(url, {})[2] == b"warm"
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw
    assert gets.get(url, {})[2] == body
    woken = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw - before
    assert woken < 16, woken  # 64 or more when woken per write
    assert gets.get(url, {})[2] == b"next"
    assert server.connections == 1


def test_a_marked_body_cut_short_or_stalled_keeps_what_arrived(server):
    gets = SocketGets(5, 0.3)
    url = f"http://127.0.0.1:{server.port}/b/k"
    head = b"HTTP/1.1 206 Partial Content\r\nContent-Length: 100000\r\n\r\n"

    def cut(conn):
        conn.sendall(head + b"a" * 10)
        conn.sendall(b"b" * 30_000)
        return False  # closed with 69,990 bytes to come: the mark is never reached

    def stall(conn):
        conn.sendall(head + b"c" * 20_000)  # then nothing: the read timeout

    server.answers = [cut, stall]
    with pytest.raises(ShortBody) as e:
        gets.get(url, {})
    assert (e.value.got, e.value.data) == (30_010, b"a" * 10 + b"b" * 30_000)
    with pytest.raises(ShortBody) as e:
        gets.get(url, {})
    assert e.value.data == b"c" * 20_000 and isinstance(e.value.__cause__, TimeoutError)
    assert classify(e.value) == "body"
