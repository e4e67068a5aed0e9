"""Clients that ask for large answers and never read them, against a real `zkplatform serve`.

One read-only token, many HTTP/2 streams of ListItems on a vault of large items (3 MiB a page),
windows never opened: each answer waits in the server for its client. Without a bound the
worker held every one of them (issue 39: GiBs). Now what the clients leave unread is bounded
per connection and per worker, and the calls beyond are given up (their streams reset),
while a client that reads still gets its answers.

How the memory bound was chosen: 100 unread answers of 3 MiB took the server without the bound
from about 85 to 980 MiB (898 MiB more, measured with this test on the code before the bound: each answer is held
about three times, the message, its encoding and the stream's buffer); with 16 MiB allowed it
grew by 65 to 95 MiB in three runs, allocator slack included. RSS_GROWTH_MIB is three times
that, and a third of the growth without the bound.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import h2.config
import h2.connection
import h2.events
import h2.settings
import httpx

from tests.big_items import create_request
from tests.e2e.server import Server, serving
from tests.e2e.test_hostile_clients import WAIT_S, address, alice_of, grpc_frame
from zkplatform_api.platform.v1 import vault_pb2

VAULT = "acme-private"  # alice's own
ITEMS = 60  # about 62 KB each: a page stops at its 3 MiB bound
LIST_ITEMS = "/platform.v1.VaultService/ListItems"
MIB = 1024 * 1024
CONNECTIONS, STREAMS = 10, 10
PER_CONNECTION_MIB, PER_WORKER_MIB = 8, 16
RSS_GROWTH_MIB = 300


@contextmanager
def large_vault_server(tmp_path: Path, per_connection_mib: int, per_worker_mib: int) -> Iterator[Server]:
    """A `--dev` server with these bounds, alice's own vault filled with large items."""
    env = {
        "ZKPLATFORM_MAX_UNREAD_BYTES_PER_CONNECTION": str(per_connection_mib * MIB),
        "ZKPLATFORM_MAX_UNREAD_BYTES_PER_WORKER": str(per_worker_mib * MIB),
        # Longer than the test: a call given up here was given up for the bytes it held.
        "ZKPLATFORM_CLIENT_STALL_SECONDS": "600",
    }
    with serving(tmp_path, "--dev", env=env) as server:
        token = alice_of(server)
        with httpx.Client(base_url=server.base_url, headers=_headers(token, "application/proto")) as client:
            for n in range(ITEMS):
                created = client.post(
                    "/platform.v1.VaultService/CreateItem", content=create_request(VAULT, n).SerializeToString()
                )
                assert created.status_code == 200, created.text
        yield server


def _headers(token: str, content_type: str) -> dict[str, str]:
    return {"Content-Type": content_type, "Connect-Protocol-Version": "1", "Authorization": f"Bearer {token}"}


class UnreadCalls:
    """HTTP/2 connections, each with gRPC ListItems calls whose answers are never read (no window)."""

    def __init__(self, server: Server, token: str, connections: int, streams: int) -> None:
        self.pid = server.process.pid
        self.peak_kib = rss_kib(self.pid)
        self.answered: set[tuple[int, int]] = set()  # (connection, stream): headers or a reset came
        self.resets = 0
        self._streams = streams
        self._connections: list[tuple[socket.socket, h2.connection.H2Connection]] = []
        request = grpc_frame(vault_pb2.ListItemsRequest(vault_id=VAULT, page_size=1000).SerializeToString())
        for _ in range(connections):
            sock = socket.create_connection(address(server), timeout=WAIT_S)
            connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
            connection.local_settings = h2.settings.Settings(
                client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0}
            )
            connection.initiate_connection()
            for stream_id in range(1, 2 * streams, 2):
                connection.send_headers(stream_id, _grpc_headers(token))
                connection.send_data(stream_id, request, end_stream=True)
            sock.sendall(connection.data_to_send())
            self._connections.append((sock, connection))

    def read_until(self, done: Callable[[], bool]) -> bool:
        """Read every connection (granting no window) until done() or WAIT_S passed, sampling RSS."""
        deadline = time.monotonic() + WAIT_S
        while not done() and time.monotonic() < deadline:
            for n, (sock, connection) in enumerate(self._connections):
                sock.settimeout(0.05)
                try:
                    data = sock.recv(65536)
                except TimeoutError:
                    continue
                for event in connection.receive_data(data):
                    if isinstance(event, h2.events.ResponseReceived):
                        self.answered.add((n, event.stream_id))
                    elif isinstance(event, h2.events.StreamReset):
                        self.answered.add((n, event.stream_id))
                        self.resets += 1
                sock.sendall(connection.data_to_send())
            self.peak_kib = max(self.peak_kib, rss_kib(self.pid))
        return done()

    def all_answered(self) -> bool:
        return len(self.answered) == len(self._connections) * self._streams

    def close(self) -> None:
        for sock, _ in self._connections:
            sock.close()


def _grpc_headers(token: str) -> list[tuple[str, str]]:
    return [
        (":method", "POST"),
        (":path", LIST_ITEMS),
        (":scheme", "http"),
        (":authority", "test"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
        ("authorization", f"Bearer {token}"),
    ]


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    msg = f"no VmRSS for {pid}"
    raise AssertionError(msg)


def test_unread_answers_are_bounded_per_worker_and_a_reader_still_gets_its_own(tmp_path: Path) -> None:
    with large_vault_server(tmp_path, PER_CONNECTION_MIB, PER_WORKER_MIB) as server:
        token = alice_of(server)
        before = rss_kib(server.process.pid)
        calls = UnreadCalls(server, token, CONNECTIONS, STREAMS)
        try:
            answered = calls.read_until(calls.all_answered)
            # Every call got as far as its answer; at most a few of them fit the bound.
            most_kept = PER_WORKER_MIB // 3 + 1
            given_up = calls.read_until(lambda: calls.resets >= CONNECTIONS * STREAMS - most_kept)
            growth_mib = (calls.peak_kib - before) / 1024
            read = _read_list_items(server, token)
        finally:
            calls.close()
        log = server.log()

    assert answered, f"{len(calls.answered)} of {CONNECTIONS * STREAMS} calls answered"
    assert growth_mib < RSS_GROWTH_MIB, f"the server grew by {growth_mib:.0f} MiB"
    assert given_up, f"{calls.resets} calls given up"
    assert read
    assert "ListItems protocol=grpc code=canceled" in log
    assert " ERROR " not in log
    assert "Traceback" not in log


def _read_list_items(server: Server, token: str) -> bool:
    """A client that reads gets its page, while the unread ones hold the bound: its answer gives up
    those that waited longest (at least a second, so it may first be given up itself: ask again)."""
    deadline = time.monotonic() + WAIT_S
    with httpx.Client(base_url=server.base_url, headers=_headers(token, "application/json"), timeout=WAIT_S) as client:
        while time.monotonic() < deadline:
            try:
                page = client.post(LIST_ITEMS, json={"vaultId": VAULT, "pageSize": 1000})
            except httpx.TransportError:  # given up: its connection closed mid-answer
                continue
            return page.status_code == 200 and len(page.json()["items"]) > 1
    return False


def test_unread_answers_are_bounded_per_connection(tmp_path: Path) -> None:
    """One connection alone, the worker's bound far away: once the connection holds its own,
    its further answers are given up at once."""
    with large_vault_server(tmp_path, PER_CONNECTION_MIB, 1024) as server:
        calls = UnreadCalls(server, alice_of(server), connections=1, streams=STREAMS)
        try:
            most_kept = PER_CONNECTION_MIB // 3 + 1
            given_up = calls.read_until(lambda: calls.all_answered() and calls.resets >= STREAMS - most_kept)
        finally:
            calls.close()
        log = server.log()

    assert given_up, f"{calls.resets} of {STREAMS} calls given up"
    assert "Traceback" not in log
