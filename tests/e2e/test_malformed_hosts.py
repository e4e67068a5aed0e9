"""Malformed hosts against a real `zkplatform serve`: as HTTP/2's `:authority`, as HTTP/1.1's
`Host`, and in a DPoP proof's `htu`. Each answers in a sentence (400 `HEADER_INVALID`, or 401
`DPOP_PROOF_INVALID`), never 500, and the server logs no error and no traceback.
tests/rpc/test_malformed_hosts.py holds the full table, through the app in process.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import h2.config
import h2.connection
import h2.events
import httpx
import pytest
from joserfc import jwk

from tests.dpop import make_proof, new_key, thumbprint
from tests.e2e.server import Server, serving
from tests.rpc.test_malformed_hosts import MALFORMED

DELETE = "/platform.v1.VaultService/DeleteItem"
MINT = "/platform.v1.BrokerService/MintUserApiToken"
WAIT_S = 20.0
CONNECT = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
BAD_HOST = b"the Host header is not a host name or [IPv6 address] with an optional port from 1 to 65535"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("hosts"), "--dev") as server:
        yield server


def address(server: Server) -> tuple[str, int]:
    host, port = server.base_url.removeprefix("http://").split(":")
    return host, int(port)


def alice_of(server: Server) -> str:
    """alice's token in the `--dev` server's credentials file."""
    credentials = json.loads((server.log_path.parent / "var" / "dev-credentials.json").read_text())
    return str(next(p["token"] for t in credentials["tenants"] for p in t["principals"] if p["principalId"] == "alice"))


def assert_nothing_wrong_logged(server: Server) -> None:
    log = server.log()
    assert "Traceback" not in log, log
    assert "ERROR" not in log, log
    assert "internal" not in log, log


def h2_answers(server: Server, requests: list[tuple[str, list[tuple[str, str]]]], path: str) -> list[bytes]:
    """One HTTP/2 connection (prior knowledge), a POST of `{}` for each (:authority, headers) on a
    stream of its own; the answers' status and body, in order."""
    answers: dict[int, bytes] = {}
    ended: set[int] = set()
    with socket.create_connection(address(server), timeout=WAIT_S) as sock:
        connection = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, validate_outbound_headers=False)
        )
        connection.initiate_connection()
        streams = []
        for authority, extra in requests:
            stream = connection.get_next_available_stream_id()
            request = [(":method", "POST"), (":scheme", "http"), (":authority", authority), (":path", path)]
            connect_json = [("content-type", "application/json"), ("connect-protocol-version", "1")]
            connection.send_headers(stream, [*request, *connect_json, *extra])
            connection.send_data(stream, b"{}", end_stream=True)
            streams.append(stream)
            answers[stream] = b""
        sock.sendall(connection.data_to_send())
        while len(ended) < len(streams) and (chunk := sock.recv(65536)):
            for event in connection.receive_data(chunk):
                if isinstance(event, h2.events.ResponseReceived):
                    status = dict(event.headers)[b":status"]
                    answers[event.stream_id] = status + b" " + answers[event.stream_id]
                elif isinstance(event, h2.events.DataReceived):
                    answers[event.stream_id] += event.data
                    connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded | h2.events.StreamReset):
                    ended.add(event.stream_id)
            sock.sendall(connection.data_to_send())
    return [answers[stream] for stream in streams]


@pytest.fixture(scope="module")
def bound(server: Server) -> tuple[jwk.Key, str]:
    """A key, and a token bound to it, minted by alice."""
    alice = alice_of(server)
    key = new_key("ed25519")
    mint = {"tenantId": "acme", "requestedScopes": ["vault.items.delete"], "popKeyId": thumbprint(key)}
    proof = make_proof(key, server.base_url + MINT, alice)
    minted = httpx.post(
        server.base_url + MINT, json=mint, headers={**CONNECT, "Authorization": f"Bearer {alice}", "DPoP": proof}
    )
    assert minted.status_code == 200, minted.text
    return key, str(minted.json()["token"]["accessToken"])


def dpop(key: jwk.Key, token: str, url: str) -> dict[str, str]:
    return {"authorization": f"DPoP {token}", "dpop": make_proof(key, url, token)}


def test_a_malformed_authority_over_http2_is_refused(server: Server, bound: tuple[jwk.Key, str]) -> None:
    """Each with a proof of the URL it names: the server would check the proof against it."""
    key, token = bound
    requests = [(host, list(dpop(key, token, f"http://{host}{DELETE}").items())) for host in MALFORMED]

    answers = h2_answers(server, requests, DELETE)
    probes = h2_answers(server, [(host, []) for host in MALFORMED[:4]], "/healthz")

    for authority, answer in zip(MALFORMED, answers, strict=True):
        assert answer.startswith(b"400 "), (authority, answer)
        assert b'"reason":"HEADER_INVALID"' in answer.replace(b" ", b""), (authority, answer)
        assert BAD_HOST in answer, (authority, answer)
    assert all(answer.startswith(b"400 ") for answer in probes), probes
    assert_nothing_wrong_logged(server)


@pytest.mark.parametrize("host", ["[::1", "[zz::1]", "[::1]:99999", "host:-1", "host:65536", "host:1e3", "[::1]:"])
def test_a_malformed_host_over_http1_is_refused(server: Server, bound: tuple[jwk.Key, str], host: str) -> None:
    key, token = bound
    proof = "".join(f"{name}: {value}\r\n" for name, value in dpop(key, token, f"http://{host}{DELETE}").items())
    request = (
        f"POST {DELETE} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nConnect-Protocol-Version: 1\r\n"
        f"{proof}Content-Length: 2\r\nConnection: close\r\n\r\n{{}}"
    )
    with socket.create_connection(address(server), timeout=WAIT_S) as sock:
        sock.sendall(request.encode())
        answer = b""
        while chunk := sock.recv(65536):  # until the server closes (Connection: close), bounded by the timeout
            answer += chunk

    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert BAD_HOST in answer
    assert_nothing_wrong_logged(server)


def test_an_htu_of_a_malformed_host_is_refused(server: Server, bound: tuple[jwk.Key, str]) -> None:
    key, token = bound
    body = {"vaultId": "acme-private", "itemId": "no-such-item", "baseVersion": 1}
    with httpx.Client(base_url=server.base_url, timeout=WAIT_S) as client:
        answers = [
            client.post(DELETE, json=body, headers={**CONNECT, **dpop(key, token, f"http://{host}{DELETE}")})
            for host in MALFORMED
        ]

    for host, answer in zip(MALFORMED, answers, strict=True):
        assert answer.status_code == 401, (host, answer.text)
        error = json.loads(answer.content)
        assert error["message"].startswith("DPoP proof: htu does not match the request URL: "), (host, error)
    assert_nothing_wrong_logged(server)


@pytest.mark.parametrize("host", ["[::1", "[zz::1]", "host:99999", "host:1e3", "[::1]:"])
def test_an_absolute_form_target_of_a_malformed_host_is_no_procedure(server: Server, host: str) -> None:
    """hypercorn hands on an absolute-form request-target (RFC 9112 section 3.2.2) as the path,
    whose authority nothing then reads: no procedure has such a path."""
    request = (
        f"POST http://{host}{DELETE} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        "Connect-Protocol-Version: 1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
    )
    with socket.create_connection(address(server), timeout=WAIT_S) as sock:
        sock.sendall(request.encode())
        answer = b""
        while chunk := sock.recv(65536):  # until the server closes (Connection: close), bounded by the timeout
            answer += chunk

    assert answer.startswith(b"HTTP/1.1 404"), answer
    assert b"PROCEDURE_NOT_FOUND" in answer
    assert_nothing_wrong_logged(server)
