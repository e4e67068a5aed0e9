"""CORS over a real hypercorn (rpc/front/cors.py): `serve --cors-origins` answers a listed origin's
preflight and lets it read the answers, success and refusal, in Connect and gRPC-Web, over HTTP/1.1
and HTTP/2; refuses another origin's preflight; and refuses to start on what is no origin, in one
line with the configuration exit code. Behind the nginx of docs/deploy.md (its very text), the
server's CORS headers pass through once: nginx adds none of its own."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import Server, run_serve, serving
from tests.e2e.test_proxy import needs_nginx, running_nginx
from zkplatform_api.platform.v1 import vault_pb2

APP = "https://app.example.com"
LIST = "/platform.v1.VaultService/ListVaults"
PREFLIGHT = {
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization,connect-protocol-version,content-type,dpop,x-request-id",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    tmp_path = tmp_path_factory.mktemp("cors")
    credentials = tmp_path / "credentials.json"
    with serving(tmp_path, "--dev", "--dev-credentials", str(credentials), "--cors-origins", APP) as server:
        tenants = json.loads(credentials.read_text())["tenants"]
        alice = next(p["token"] for t in tenants for p in t["principals"] if p["principalId"] == "alice")
        yield server, alice


def listed(value: str) -> set[str]:
    return {name.strip().lower() for name in value.split(",")}


@pytest.mark.parametrize("http2", [False, True], ids=["http1.1", "http2"])
def test_a_listed_origin_may_call_and_read_every_answer(server: tuple[Server, str], *, http2: bool) -> None:
    running, alice = server
    # HTTP/2 with prior knowledge: hypercorn serves h2c on plain TCP, as grpc clients use it.
    with httpx.Client(base_url=running.base_url, http1=not http2, http2=http2, timeout=10) as client:
        allowed = client.options(LIST, headers={"Origin": APP, **PREFLIGHT})
        assert allowed.status_code == 204
        assert allowed.http_version == ("HTTP/2" if http2 else "HTTP/1.1")
        assert allowed.headers.get_list("access-control-allow-origin") == [APP]
        assert listed(allowed.headers["access-control-allow-headers"]) >= listed(
            PREFLIGHT["Access-Control-Request-Headers"]
        )
        assert "origin" in listed(allowed.headers["vary"])

        connect = {"Content-Type": "application/json", "Connect-Protocol-Version": "1", "Origin": APP}
        ok = client.post(LIST, content=b"{}", headers={**connect, "Authorization": f"Bearer {alice}"})
        unauthenticated = client.post(LIST, content=b"{}", headers=connect)
        payload = vault_pb2.ListVaultsRequest().SerializeToString()
        grpc_web = {"Content-Type": "application/grpc-web+proto", "X-Grpc-Web": "1", "Origin": APP}
        frame = struct.pack(">BI", 0, len(payload)) + payload
        grpc_web_refused = client.post(LIST, content=frame, headers={**grpc_web, "Grpc-Timeout": "soon"})
        for answer, status in ((ok, 200), (unauthenticated, 401), (grpc_web_refused, 200)):
            assert answer.status_code == status
            assert answer.headers.get_list("access-control-allow-origin") == [APP]
            exposed = listed(answer.headers["access-control-expose-headers"])
            assert exposed >= {"grpc-status", "grpc-message", "grpc-status-details-bin", "x-request-id"}
        assert grpc_web_refused.headers["grpc-status"] == "3"


def test_another_origins_preflight_is_refused(server: tuple[Server, str]) -> None:
    running, _ = server
    refused = httpx.options(
        running.base_url + LIST, headers={"Origin": "https://evil.example", **PREFLIGHT}, timeout=10
    )
    assert refused.status_code == 403
    assert not [name for name in refused.headers if name.lower().startswith("access-control-")]


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--cors-origins", "*"], {}),
        (["--cors-origins", f"{APP}/"], {}),
        ([], {"ZKPLATFORM_CORS_ORIGINS": "*"}),
        ([], {"ZKPLATFORM_CORS_ORIGINS": f"{APP},app.example.com"}),
    ],
)
def test_what_is_no_origin_stops_the_start_in_one_line(tmp_path: Path, args: list[str], env: dict[str, str]) -> None:
    result = run_serve(tmp_path, "--store", "memory:", *args, env=env)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "--cors-origins" in result.stderr
    assert "Traceback" not in result.stderr


@needs_nginx
@pytest.mark.parametrize("http2", [False, True], ids=["http1.1", "http2"])
def test_behind_the_documented_nginx_the_servers_headers_pass_through_once(
    server: tuple[Server, str], tmp_path: Path, *, http2: bool
) -> None:
    running, alice = server
    with running_nginx(tmp_path, running.base_url.removeprefix("http://")) as nginx:
        verify = nginx.pki.client_context()
        with httpx.Client(base_url=nginx.url, verify=verify, http1=not http2, http2=http2, timeout=10) as client:
            allowed = client.options(LIST, headers={"Origin": APP, **PREFLIGHT})
            refused = client.options(LIST, headers={"Origin": "https://evil.example", **PREFLIGHT})
            connect = {"Content-Type": "application/json", "Connect-Protocol-Version": "1", "Origin": APP}
            ok = client.post(LIST, content=b"{}", headers={**connect, "Authorization": f"Bearer {alice}"})
            unauthenticated = client.post(LIST, content=b"{}", headers=connect)
    assert allowed.status_code == 204
    assert listed(allowed.headers["access-control-allow-headers"]) >= listed(
        PREFLIGHT["Access-Control-Request-Headers"]
    )
    assert refused.status_code == 403
    assert "access-control-allow-origin" not in refused.headers
    for answer, status in ((allowed, 204), (ok, 200), (unauthenticated, 401)):
        assert answer.status_code == status
        # Twice would be refused by browsers: nginx must add none of its own.
        assert answer.headers.get_list("access-control-allow-origin") == [APP]
