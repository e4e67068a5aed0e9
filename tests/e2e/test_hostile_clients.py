"""Clients that stall, flood or speak the wrong protocol, against a real `zkplatform serve`.

Each is refused cleanly: an answer in the client's protocol, no traceback in
the log, and nothing held for longer than the limits say.
"""

from __future__ import annotations

import json
import signal
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import h2.config
import h2.connection
import h2.events
import h2.settings
import httpx
import pytest

from tests.e2e.server import Server, eventually, serving
from zkplatform_api.grpc.health.v1 import health_pb2
from zkplatform_api.platform.v1 import vault_pb2, vault_pb2_grpc

WATCH = "/grpc.health.v1.Health/Watch"
DELETE = "/platform.v1.VaultService/DeleteItem"
MAX_STREAMS = 2
READ_TIMEOUT_S = 1
WAIT_S = 20.0  # the most any answer below may take, on a busy machine


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {
        # The streams below need no token (health, reflection): their own budget is the one that counts.
        "ZKPLATFORM_MAX_STREAMS_WITHOUT_TOKEN": str(MAX_STREAMS),
        "ZKPLATFORM_BODY_READ_TIMEOUT_SECONDS": str(READ_TIMEOUT_S),
        # Longer than any wait below: a stream that comes back did so for another reason.
        "ZKPLATFORM_CLIENT_STALL_SECONDS": "600",
    }
    with serving(tmp_path_factory.mktemp("hostile"), "--dev", env=env) as server:
        yield server


@pytest.fixture(scope="module")
def alice(server: Server) -> str:
    return alice_of(server)


def alice_of(server: Server) -> str:
    """alice's token in a `--dev` server's credentials file."""
    credentials: dict[str, Any] = json.loads((server.log_path.parent / "var" / "dev-credentials.json").read_text())
    return str(next(p["token"] for t in credentials["tenants"] for p in t["principals"] if p["principalId"] == "alice"))


def address(server: Server) -> tuple[str, int]:
    host, port = server.base_url.removeprefix("http://").split(":")
    return host, int(port)


def envelope(payload: bytes, declared: int | None = None) -> bytes:
    """A streaming message: flags, big-endian length, payload (the length may lie)."""
    return struct.pack(">BI", 0, len(payload) if declared is None else declared) + payload


def exchange(server: Server, request: bytes, until: bytes = b"\0never") -> bytes:
    """Send the bytes, then read until the marker or until the server closes the connection (bounded)."""
    with socket.create_connection(address(server), timeout=WAIT_S) as sock:
        sock.sendall(request)
        return read_until(sock, until)


def chunked_post(path: str, content_type: str, first_chunk: bytes) -> bytes:
    """An HTTP/1.1 request whose body starts with one chunk and then never goes on."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: {content_type}\r\n"
        "Connect-Protocol-Version: 1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + f"{len(first_chunk):x}\r\n".encode() + first_chunk + b"\r\n"


def assert_no_traceback(server: Server) -> None:
    log = server.log()
    assert "Traceback" not in log, log
    assert "KeyError" not in log, log


# unary bodies


def test_a_unary_body_that_stalls_is_answered_and_the_connection_closed(server: Server, alice: str) -> None:
    head = (  # the body is read once the caller is known
        f"POST {DELETE} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        f"Connect-Protocol-Version: 1\r\nAuthorization: Bearer {alice}\r\nContent-Length: 100\r\n\r\n"
    )

    answer = exchange(server, head.encode() + b'{"vaultId": ')  # 12 of the 100 bytes, then silence

    assert answer.startswith(b"HTTP/1.1 504"), answer
    assert b'"deadline_exceeded"' in answer
    assert_no_traceback(server)


def test_a_header_that_is_not_utf8_is_400_without_a_traceback(server: Server) -> None:
    request = f"POST {DELETE} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n".encode()
    request += b"Connect-Protocol-Version: 1\r\nX-Foo: \xff\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"

    answer = exchange(server, request)

    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert b"not valid UTF-8" in answer
    assert_no_traceback(server)


def test_grpc_over_http_1_1_is_refused_without_a_traceback(server: Server) -> None:
    request = f"POST {DELETE} HTTP/1.1\r\nHost: test\r\nContent-Type: application/grpc\r\n".encode()
    request += b"Content-Length: 5\r\nConnection: close\r\n\r\n" + envelope(b"")

    answer = exchange(server, request)

    assert b"grpc-status: 12" in answer, answer
    assert_no_traceback(server)


def test_an_oversized_grpc_body_is_refused_and_the_connection_goes_on(server: Server, alice: str) -> None:
    """Over HTTP/2 the body has no length: it is refused once past the limit, and
    the rest of it arrives on a stream the server has closed (hypercorn issue 329)."""
    with grpc.insecure_channel(server.base_url.removeprefix("http://")) as channel:
        vault = vault_pb2_grpc.VaultServiceStub(channel)
        check = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )
        huge = vault_pb2.DeleteItemRequest(vault_id="acme-shared", item_id="x" * 300_000, base_version=1)

        with pytest.raises(grpc.RpcError) as refused:
            vault.DeleteItem(huge, metadata=[("authorization", f"Bearer {alice}")], timeout=WAIT_S)
        after = check(health_pb2.HealthCheckRequest(), timeout=WAIT_S)

    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert after.status == health_pb2.HealthCheckResponse.SERVING
    assert_no_traceback(server)


# streams


def test_a_stream_message_declared_over_the_limit_is_refused_before_it_arrives(server: Server) -> None:
    request = chunked_post(WATCH, "application/connect+json", envelope(b"{", declared=10 * 1024 * 1024))

    answer = exchange(server, request, until=b"}}")

    assert b"resource_exhausted" in answer, answer
    assert_no_traceback(server)


def test_a_stream_message_that_stalls_half_way_is_given_up(server: Server) -> None:
    request = chunked_post(WATCH, "application/connect+json", envelope(b"{", declared=100))

    answer = exchange(server, request, until=b"}}")

    assert b"deadline_exceeded" in answer, answer
    assert_no_traceback(server)


def test_open_streams_are_bounded_and_their_places_return(server: Server) -> None:
    request = chunked_post(WATCH, "application/connect+json", envelope(b"{}")) + b"0\r\n\r\n"
    watches = [socket.create_connection(address(server), timeout=WAIT_S) for _ in range(MAX_STREAMS + 1)]
    try:
        for watch in watches[:MAX_STREAMS]:
            watch.sendall(request)
            assert b"SERVING" in read_until(watch, b"SERVING")  # open, and waiting for news
        watches[MAX_STREAMS].sendall(request)
        refused = read_until(watches[MAX_STREAMS], b"}]}")
        watches.pop(0).close()
        again = _eventually_open(server, request)
    finally:
        for watch in watches:
            watch.close()

    assert refused.startswith(b"HTTP/1.1 429"), refused
    assert b'"resource_exhausted"' in refused
    assert again


def read_until(sock: socket.socket, marker: bytes) -> bytes:
    """What the server sent up to the marker, or until it closed the connection."""
    received = b""
    while marker not in received and (chunk := sock.recv(65536)):
        received += chunk
    return received


def _eventually_open(server: Server, request: bytes) -> bool:
    """A place is free once the server has seen the closed stream go: ask until then (bounded)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        with socket.create_connection(address(server), timeout=WAIT_S) as watch:
            watch.sendall(request)
            answer = read_until(watch, b"SERVING")
            if b"SERVING" in answer:
                return True
            assert answer.startswith(b"HTTP/1.1 429"), answer
    return False


def test_the_server_still_answers_after_all_of_it(server: Server, tmp_path: Path) -> None:
    assert httpx.get(f"{server.base_url}/healthz", timeout=WAIT_S).text == "ok\n"
    assert_no_traceback(server)


def test_debug_logging_never_shows_a_token(tmp_path: Path) -> None:
    """At debug level the HTTP/2 libraries would log every header they decode."""
    with serving(tmp_path, "--dev", "--log-level", "debug") as debug_server:
        credentials = json.loads((tmp_path / "var" / "dev-credentials.json").read_text())
        tokens = [p["token"] for t in credentials["tenants"] for p in t["principals"]]
        with grpc.insecure_channel(debug_server.base_url.removeprefix("http://")) as channel:
            vault = vault_pb2_grpc.VaultServiceStub(channel)
            for token in tokens:
                with pytest.raises(grpc.RpcError):
                    vault.DeleteItem(
                        vault_pb2.DeleteItemRequest(vault_id="nope", item_id="nope", base_version=1),
                        metadata=[("authorization", f"Bearer {token}")],
                        timeout=WAIT_S,
                    )
        httpx.post(f"{debug_server.base_url}{DELETE}?t={tokens[0]}", timeout=WAIT_S)  # a leaked one, too
        log = debug_server.log()

    assert tokens
    for token in tokens:
        assert token not in log


def h2_watch(server: Server) -> socket.socket:
    """A health Watch over HTTP/2 (prior knowledge), read up to its first message; the socket stays open."""
    sock = socket.create_connection(address(server), timeout=WAIT_S)
    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    connection.initiate_connection()
    headers = [
        (":method", "POST"),
        (":path", WATCH),
        (":scheme", "http"),
        (":authority", "test"),
        ("content-type", "application/connect+json"),
        ("connect-protocol-version", "1"),
    ]
    connection.send_headers(1, headers)
    connection.send_data(1, envelope(b"{}"), end_stream=True)
    sock.sendall(connection.data_to_send())
    received = b""
    while b"SERVING" not in received and (chunk := sock.recv(65536)):
        for event in connection.receive_data(chunk):
            if isinstance(event, h2.events.DataReceived):
                received += event.data
        sock.sendall(connection.data_to_send())
    assert b"SERVING" in received
    return sock


def test_an_http2_stream_whose_client_left_gives_its_place_back(server: Server) -> None:
    """hypercorn does not cancel a server stream when its HTTP/2 connection closes: StreamLimits does."""
    request = chunked_post(WATCH, "application/connect+json", envelope(b"{}")) + b"0\r\n\r\n"
    for _ in range(MAX_STREAMS + 1):  # more than the limit, one after the other
        h2_watch(server).close()

    assert _eventually_open(server, request)


def test_sigterm_with_a_stream_whose_client_left_stops_at_once(tmp_path: Path) -> None:
    with serving(tmp_path, "--dev") as running:
        h2_watch(running).close()
        running.process.send_signal(signal.SIGTERM)
        code = running.process.wait(timeout=WAIT_S)  # the grace period is 30 s: well before it

    assert code == 0
    assert "Traceback" not in running.log()


def test_body_after_an_http2_refusal_does_not_break_the_connection(server: Server) -> None:
    """A call refused before its body is read (here: no token) gets the rest of its body on a
    stream hypercorn has closed; the connection and its next call must go on (hypercorn issue
    329, src/zkplatform/server/hypercorn_fix.py)."""
    with socket.create_connection(address(server), timeout=WAIT_S) as sock:
        connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        connection.initiate_connection()
        request = [(":method", "POST"), (":scheme", "http"), (":authority", "test")]
        connect_json = [("content-type", "application/json"), ("connect-protocol-version", "1")]
        connection.send_headers(1, [*request, (":path", DELETE), *connect_json])
        sock.sendall(connection.data_to_send())
        refused = h2_read_until_ended(sock, connection, 1)
        connection.send_data(1, b"{}", end_stream=True)  # the body, after the answer
        connection.send_headers(3, [*request, (":path", "/grpc.health.v1.Health/Check"), *connect_json])
        connection.send_data(3, b"{}", end_stream=True)
        sock.sendall(connection.data_to_send())
        after = h2_read_until_ended(sock, connection, 3)

    assert b"unauthenticated" in refused
    assert b"SERVING" in after
    assert_no_traceback(server)


def h2_read_until_ended(sock: socket.socket, connection: h2.connection.H2Connection, stream_id: int) -> bytes:
    """The body of one stream's answer, read until the stream ends (bounded by the socket's timeout)."""
    received = b""
    while chunk := sock.recv(65536):
        for event in connection.receive_data(chunk):
            if isinstance(event, h2.events.DataReceived) and event.stream_id == stream_id:
                received += event.data
                connection.acknowledge_received_data(event.flow_controlled_length, stream_id)
            if isinstance(event, h2.events.StreamEnded | h2.events.StreamReset) and event.stream_id == stream_id:
                sock.sendall(connection.data_to_send())
                return received
        sock.sendall(connection.data_to_send())
    return received


def test_an_http2_call_whose_client_leaves_mid_body_ends(server: Server, alice: str) -> None:
    """A unary call whose body never completes, its connection then closed: the call ends
    (its access line is written) instead of waiting forever for the rest of the body."""
    sock = socket.create_connection(address(server), timeout=WAIT_S)
    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    connection.initiate_connection()
    request_id = "left-mid-body"
    connection.send_headers(
        1,
        [
            (":method", "POST"),
            (":scheme", "http"),
            (":authority", "test"),
            (":path", "/platform.v1.VaultService/GetItem"),
            ("content-type", "application/json"),
            ("connect-protocol-version", "1"),
            ("content-length", "100"),
            ("authorization", f"Bearer {alice}"),
            ("x-request-id", request_id),
        ],
    )
    connection.send_data(1, b'{"vaultId":')  # 11 of the 100 bytes
    sock.sendall(connection.data_to_send())
    sock.close()

    assert _eventually_logged(server, f"request_id={request_id}"), server.log()
    assert_no_traceback(server)


def _eventually_logged(server: Server, text: str) -> bool:
    """Whether the server's log comes to hold the text (bounded; the log is written by a thread)."""
    return eventually(lambda: text in server.log(), WAIT_S)


def test_an_idle_cleartext_http2_connection_is_closed(server: Server) -> None:
    """Only the preface and SETTINGS, then nothing: closed after the keep-alive timeout (5 s),
    as idle HTTP/1.1 and TLS connections are (server/hypercorn_fix.py)."""
    with socket.create_connection(address(server), timeout=WAIT_S) as sock:
        connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        connection.initiate_connection()
        sock.sendall(connection.data_to_send())
        received = b""
        while chunk := sock.recv(65536):  # the server's SETTINGS, then the end of the connection
            received += chunk

    assert received  # it spoke HTTP/2 first


REFLECTION = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"


def h2_stalled_reflection(server: Server, requests: int) -> tuple[socket.socket, h2.connection.H2Connection]:
    """A gRPC reflection session over HTTP/2 that grants the server no window: it asks for
    the platform's file descriptors (tens of KB each) and never reads an answer. Returned
    once the server has refused a stream beyond its limit, so its place is surely taken."""
    sock = socket.create_connection(address(server), timeout=WAIT_S)
    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    connection.local_settings = h2.settings.Settings(
        client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0}
    )
    connection.initiate_connection()
    headers = [
        (":method", "POST"),
        (":path", REFLECTION),
        (":scheme", "http"),
        (":authority", "test"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ]
    connection.send_headers(1, headers)
    symbol = b"platform.v1.VaultService"
    ask = bytes([4 << 3 | 2, len(symbol)]) + symbol  # ServerReflectionRequest.file_containing_symbol
    for _ in range(requests):
        connection.send_data(1, grpc_frame(ask))  # the request stream stays open
    sock.sendall(connection.data_to_send())
    return sock, connection


def grpc_frame(payload: bytes) -> bytes:
    return struct.pack(">BI", 0, len(payload)) + payload


def test_stalled_http2_streams_give_their_places_back_when_their_connections_close(server: Server) -> None:
    """Reflection sessions whose writers wait on full buffers, their connections then
    closed: each stream ends and its place returns (long before the stall bound)."""
    stalled = [h2_stalled_reflection(server, requests=3)[0] for _ in range(MAX_STREAMS)]
    watch = chunked_post(WATCH, "application/connect+json", envelope(b"{}")) + b"0\r\n\r\n"
    try:
        refused = _eventually_refused(server, watch)
    finally:
        for sock in stalled:
            sock.close()

    assert refused
    assert _eventually_open(server, watch)
    assert_no_traceback(server)


def test_a_stream_whose_client_stops_reading_is_given_up(tmp_path: Path) -> None:
    """A client that keeps its connection but takes nothing: once a send has waited the stall
    bound, the stream is reset and its place returns, though the client sent more requests
    than the server queues (which used to stop the connection for good)."""
    env = {"ZKPLATFORM_MAX_STREAMS_WITHOUT_TOKEN": "1", "ZKPLATFORM_CLIENT_STALL_SECONDS": "1"}
    watch = chunked_post(WATCH, "application/connect+json", envelope(b"{}")) + b"0\r\n\r\n"
    with serving(tmp_path, "--dev", env=env) as running:
        sock, connection = h2_stalled_reflection(running, requests=50)
        try:
            given_up = _eventually_logged(running, "ServerReflectionInfo protocol=grpc code=canceled")
            again = _eventually_open(running, watch)
            reset = h2_reset_seen(sock, connection)
        finally:
            sock.close()
        log = running.log()

    assert given_up, log
    assert again
    assert reset
    assert "Traceback" not in log


def test_a_watch_whose_client_stops_reading_is_given_up_as_canceled(tmp_path: Path) -> None:
    """A gRPC WatchChanges over HTTP/2 whose client grants no window, with changes larger than
    the stream's buffer: given up after the stall bound, logged as `canceled`, no error."""
    env = {"ZKPLATFORM_CLIENT_STALL_SECONDS": "1"}
    with serving(tmp_path, "--dev", env=env) as running:
        token = alice_of(running)
        for n in range(3):  # about 40 KB each: more than a stream buffers
            created = httpx.post(
                f"{running.base_url}/platform.v1.VaultService/CreateItem",
                json={
                    "vaultId": "acme-private",
                    "itemId": f"large-{n}",
                    "kind": "login",
                    "encryptedPayload": {"alg": "A256GCM", "nonce": "bm9uY2U", "ciphertext": "Q" * 40_000},
                    "wrappedKeys": [{"recipientId": "alice", "wrapAlg": "A256KW", "wrappedKey": "a2V5"}],
                },
                headers={"Connect-Protocol-Version": "1", "Authorization": f"Bearer {token}"},
                timeout=WAIT_S,
            )
            assert created.status_code == 200, created.text
        sock, connection = h2_stalled_call(
            running,
            "/platform.v1.VaultService/WatchChanges",
            vault_pb2.WatchChangesRequest(vault_id="acme-private").SerializeToString(),
            token,
        )
        try:
            given_up = _eventually_logged(running, "WatchChanges protocol=grpc code=canceled")
            reset = h2_reset_seen(sock, connection)
        finally:
            sock.close()
        log = running.log()

    assert given_up, log
    assert reset
    assert " ERROR " not in log, log
    assert "Traceback" not in log


def h2_stalled_call(
    server: Server, path: str, request: bytes, token: str
) -> tuple[socket.socket, h2.connection.H2Connection]:
    """A gRPC server-streaming call over HTTP/2 that grants the server no window, never reading."""
    sock = socket.create_connection(address(server), timeout=WAIT_S)
    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    connection.local_settings = h2.settings.Settings(
        client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0}
    )
    connection.initiate_connection()
    headers = [
        (":method", "POST"),
        (":path", path),
        (":scheme", "http"),
        (":authority", "test"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
        ("authorization", f"Bearer {token}"),
    ]
    connection.send_headers(1, headers)
    connection.send_data(1, grpc_frame(request), end_stream=True)
    sock.sendall(connection.data_to_send())
    return sock, connection


def h2_reset_seen(sock: socket.socket, connection: h2.connection.H2Connection) -> bool:
    """Whether the server resets stream 1 of this connection (read without granting any window)."""
    while chunk := sock.recv(65536):
        for event in connection.receive_data(chunk):
            if isinstance(event, h2.events.StreamReset) and event.stream_id == 1:
                return True
    return False


def _eventually_refused(server: Server, request: bytes) -> bool:
    """Whether a stream comes to be refused for want of a place (bounded)."""
    for _ in range(200):
        with socket.create_connection(address(server), timeout=WAIT_S) as watch:
            watch.sendall(request)
            if read_until(watch, b"\r\n").startswith(b"HTTP/1.1 429"):
                return True
    return False
