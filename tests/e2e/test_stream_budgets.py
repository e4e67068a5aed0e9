"""Streams that need no token cannot take the places of those that need one, against a real
`zkplatform serve`: health watches and reflection sessions (anyone who reaches the port may open
them) have a budget of their own, per worker and per connection, and a stream that sends no
message is ended at its deadline (issue 39: 1,100 of them held every place for minutes, and
every WatchChanges was refused meanwhile)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import h2.config
import h2.connection
import h2.events
import httpx
import pytest

from tests.e2e.server import Server, serving
from tests.e2e.test_hostile_clients import REFLECTION, WAIT_S, WATCH, address, alice_of, envelope

WITHOUT_TOKEN, PER_CONNECTION, WITH_TOKEN = 5, 2, 4
FIRST_MESSAGE_S = 2
WATCH_CHANGES = "/platform.v1.VaultService/WatchChanges"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """A server of each test's own: the places a test took return only once the server has seen its
    connections close."""
    env = {
        "ZKPLATFORM_MAX_STREAMS": str(WITH_TOKEN),
        "ZKPLATFORM_MAX_STREAMS_WITHOUT_TOKEN": str(WITHOUT_TOKEN),
        "ZKPLATFORM_MAX_STREAMS_WITHOUT_TOKEN_PER_CONNECTION": str(PER_CONNECTION),
        "ZKPLATFORM_BODY_READ_TIMEOUT_SECONDS": str(FIRST_MESSAGE_S),
        "ZKPLATFORM_CLIENT_STALL_SECONDS": "600",
    }
    with serving(tmp_path, "--dev", env=env) as server:
        yield server


class H2:
    """One HTTP/2 connection (prior knowledge) and what each of its streams has answered so far."""

    def __init__(self, server: Server) -> None:
        self.sock = socket.create_connection(address(server), timeout=WAIT_S)
        self.connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.connection.initiate_connection()
        self.status: dict[int, str] = {}  # by stream: the answer's :status
        self.body: dict[int, bytes] = {}
        self.trailers: dict[int, dict[str, str]] = {}
        self.ended: set[int] = set()

    def health_watch(self) -> int:
        """A Connect health Watch: its request whole at once."""
        stream_id = self.connection.get_next_available_stream_id()
        self.connection.send_headers(stream_id, _headers(WATCH, "application/connect+json"))
        self.connection.send_data(stream_id, envelope(b"{}"), end_stream=True)
        self.sock.sendall(self.connection.data_to_send())
        return stream_id

    def silent_reflection(self) -> int:
        """A gRPC reflection session that sends its HEADERS and nothing more."""
        stream_id = self.connection.get_next_available_stream_id()
        self.connection.send_headers(stream_id, [*_headers(REFLECTION, "application/grpc"), ("te", "trailers")])
        self.sock.sendall(self.connection.data_to_send())
        return stream_id

    def answered(self, stream_id: int) -> bool:
        """Whether the stream has said enough to tell its fate: SERVING, or its end (a refusal's too)."""
        return b"SERVING" in self.body.get(stream_id, b"") or stream_id in self.ended

    def read_until_answered(self, *stream_ids: int) -> bool:
        """Read (bounded) until every one of the streams has answered."""
        deadline = time.monotonic() + WAIT_S
        while not all(self.answered(stream_id) for stream_id in stream_ids):
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                return False
            if not data:
                return False
            for event in self.connection.receive_data(data):
                self._note(event)
            self.sock.sendall(self.connection.data_to_send())
        return True

    def _note(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.ResponseReceived):
            self.status[event.stream_id] = dict(event.headers)[b":status"].decode()
        elif isinstance(event, h2.events.DataReceived):
            self.body[event.stream_id] = self.body.get(event.stream_id, b"") + event.data
            self.connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.TrailersReceived):
            self.trailers[event.stream_id] = {k.decode(): v.decode() for k, v in event.headers}
        if isinstance(event, h2.events.StreamEnded | h2.events.StreamReset):
            self.ended.add(event.stream_id)

    def serving(self, stream_id: int) -> bool:
        return b"SERVING" in self.body.get(stream_id, b"") and stream_id not in self.ended

    def refused(self, stream_id: int) -> bool:
        """Refused for want of a place: 429 `resource_exhausted`."""
        return self.status.get(stream_id) == "429" and b"resource_exhausted" in self.body.get(stream_id, b"")

    def close(self) -> None:
        self.sock.close()


def _headers(path: str, content_type: str) -> list[tuple[str, str]]:
    return [
        (":method", "POST"),
        (":path", path),
        (":scheme", "http"),
        (":authority", "test"),
        ("content-type", content_type),
        ("connect-protocol-version", "1"),
    ]


def test_streams_without_a_token_have_their_own_budget_and_one_per_connection(server: Server) -> None:
    connections = [H2(server) for _ in range(3)]
    try:
        answered, opened = [], []
        for connection, count in zip(connections, (PER_CONNECTION + 1, PER_CONNECTION + 1, 2), strict=True):
            opened.append([connection.health_watch() for _ in range(count)])  # one connection after the other
            answered.append(connection.read_until_answered(*opened[-1]))
        first, second, third = opened
        watch = _watch_changes(server)
    finally:
        for connection in connections:
            connection.close()

    assert all(answered)
    for connection, streams in zip(connections, (first, second), strict=False):
        # Two open on each connection, the third refused on its connection.
        assert sum(connection.serving(s) for s in streams) == PER_CONNECTION
        (refused,) = (s for s in streams if connection.refused(s))
        assert b"on one connection" in connection.body[refused]
    # The fifth and last place taken, then none left on the server.
    assert sum(connections[2].serving(s) for s in third) == 1
    (refused,) = (s for s in third if connections[2].refused(s))
    assert b"on this server" in connections[2].body[refused]
    assert watch  # while WatchChanges keeps its own places


def _watch_changes(server: Server) -> bool:
    """Whether alice's WatchChanges opens: its first message (the backlog) arrives."""
    headers = {
        "Content-Type": "application/connect+json",
        "Connect-Protocol-Version": "1",
        "Authorization": f"Bearer {alice_of(server)}",
    }
    request = envelope(json.dumps({"vaultId": "acme-private"}).encode())
    with (
        httpx.Client(base_url=server.base_url, timeout=WAIT_S) as client,
        client.stream("POST", WATCH_CHANGES, content=request, headers=headers) as answer,
    ):
        first = next(answer.iter_raw(), b"")
        return answer.status_code == 200 and b"resource_exhausted" not in first and len(first) > 0


def test_a_stream_that_sends_no_message_is_ended_at_its_deadline_and_its_place_returns(server: Server) -> None:
    connection = H2(server)
    try:
        silent = [connection.silent_reflection() for _ in range(PER_CONNECTION)]
        started = time.monotonic()
        ended = connection.read_until_answered(*silent)
        took = time.monotonic() - started
        served = _eventually_serving(connection)
    finally:
        connection.close()

    assert ended, "the silent streams were not ended"
    for stream_id in silent:
        assert connection.trailers[stream_id]["grpc-status"] == "4", connection.trailers  # deadline_exceeded
    assert took >= FIRST_MESSAGE_S - 0.5
    assert served


def _eventually_serving(connection: H2) -> bool:
    """Whether a health watch comes to open on the connection: the places return once the server
    has seen the streams' calls end, which may come just after their clients saw them end (bounded)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        watch = connection.health_watch()
        if not connection.read_until_answered(watch):
            return False
        if connection.serving(watch):
            return True
        assert connection.refused(watch), connection.body.get(watch)
    return False
