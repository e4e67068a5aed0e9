"""CORS (rpc/front/cors.py) through the whole app in process: preflights answered for listed
origins with every header the Connect and gRPC-Web protocols and the platform need, refused for
any other; actual answers, successes and refusals, in Connect and gRPC-Web, carrying the headers
a page needs to read them; nothing at all when no origin is listed."""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.connect import BROKER_MINT, JSON, detail, error_of, headers
from tests.world import BASE_URL, World
from zkplatform.app import create_app
from zkplatform.config import ConfigError, Settings, parse_cors_origins
from zkplatform.domain.models import Scope
from zkplatform.wiring import Platform
from zkplatform_api.platform.v1 import broker_pb2, vault_pb2

APP = "https://app.example.com"
DEV = "http://localhost:5173"
LIST = "/platform.v1.VaultService/ListVaults"
WATCH = "/platform.v1.VaultService/WatchChanges"
UNKNOWN = "/platform.v1.VaultService/NoSuchMethod"

# What connect-web's transports and the platform's clients send: connectrpc.com/cors's list
# (connectrpc/cors-go, cors.go) and the platform's own headers.
NEEDED_REQUEST_HEADERS = {
    "content-type",
    "connect-protocol-version",
    "connect-timeout-ms",
    "connect-accept-encoding",
    "connect-content-encoding",
    "accept-encoding",
    "content-encoding",
    "grpc-timeout",
    "x-grpc-web",
    "x-user-agent",
    "authorization",
    "dpop",
    "x-request-id",
}
NEEDED_EXPOSED_HEADERS = {
    "content-encoding",
    "connect-content-encoding",
    "grpc-status",
    "grpc-message",
    "grpc-status-details-bin",
    "x-request-id",
}


async def serve(platform: Platform, settings: Settings) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(settings, platform=platform)), base_url=BASE_URL
    )


@pytest.fixture
async def cors(platform: Platform, world: World) -> AsyncIterator[httpx.AsyncClient]:
    del world  # seeded
    async with await serve(platform, Settings(cors_origins=(APP, DEV))) as client:
        yield client


@pytest.fixture
async def plain(platform: Platform, world: World) -> AsyncIterator[httpx.AsyncClient]:
    del world
    async with await serve(platform, Settings()) as client:
        yield client


def preflight(origin: str | None, method: str = "POST", asked: str = "content-type") -> dict[str, str]:
    asks = {"Access-Control-Request-Method": method, "Access-Control-Request-Headers": asked}
    return asks if origin is None else {"Origin": origin, **asks}


def listed(value: str) -> set[str]:
    return {name.strip().lower() for name in value.split(",")}


def assert_vary_origin(response: httpx.Response) -> None:
    assert "origin" in {name for value in response.headers.get_list("vary") for name in listed(value)}


def cors_headers(response: httpx.Response) -> list[str]:
    return [name for name in response.headers if name.lower().startswith("access-control-")]


def assert_readable_by(response: httpx.Response, origin: str) -> None:
    """What a browser needs to hand the answer to a page of `origin`, with every header it reads."""
    assert response.headers.get_list("access-control-allow-origin") == [origin]
    assert listed(response.headers["access-control-expose-headers"]) >= NEEDED_EXPOSED_HEADERS
    assert "access-control-allow-credentials" not in response.headers
    assert_vary_origin(response)


def grpc_web_frame(message: vault_pb2.ListVaultsRequest) -> bytes:
    payload = message.SerializeToString()
    return struct.pack(">BI", 0, len(payload)) + payload


@pytest.mark.parametrize("path", [LIST, WATCH, UNKNOWN])
@pytest.mark.parametrize("origin", [APP, DEV])
async def test_a_listed_origins_preflight_allows_what_the_protocols_and_the_platform_need(
    cors: httpx.AsyncClient, path: str, origin: str
) -> None:
    asked = ",".join(sorted(NEEDED_REQUEST_HEADERS))
    response = await cors.options(path, headers=preflight(origin, asked=asked))

    assert response.status_code == 204, response.text
    assert response.headers.get_list("access-control-allow-origin") == [origin]
    assert listed(response.headers["access-control-allow-methods"]) == {"get", "post"}
    assert listed(response.headers["access-control-allow-headers"]) >= NEEDED_REQUEST_HEADERS
    assert response.headers["access-control-max-age"] == "7200"
    assert "access-control-allow-credentials" not in response.headers
    assert_vary_origin(response)
    assert response.content == b""


async def test_a_preflight_never_reaches_authentication_nor_the_protocol_checks(cors: httpx.AsyncClient) -> None:
    # A token that does not exist and a protocol version that does not either: a preflight carries
    # neither in a browser, and is answered before anything would look at them.
    asks = {**preflight(APP), "Authorization": "Bearer nothing", "Connect-Protocol-Version": "9"}
    response = await cors.options(LIST, headers=asks)
    assert response.status_code == 204
    assert response.headers["access-control-allow-origin"] == APP


@pytest.mark.parametrize(
    "origin",
    [
        "https://evil.example",
        "https://app.example.com.evil.example",
        "http://app.example.com",  # another scheme
        "https://app.example.com:8443",  # another port
        "http://localhost:5174",
        "null",  # a sandboxed frame, a file
        f"{APP}, {APP}",
        "",
    ],
)
async def test_another_origins_preflight_is_refused_without_cors_headers(cors: httpx.AsyncClient, origin: str) -> None:
    response = await cors.options(LIST, headers=preflight(origin))
    assert response.status_code == 403
    assert cors_headers(response) == []
    assert_vary_origin(response)


async def test_a_preflight_without_origin_or_with_two_is_refused(cors: httpx.AsyncClient) -> None:
    assert (await cors.options(LIST, headers=preflight(None))).status_code == 403
    two = [("Origin", APP), ("Origin", DEV), ("Access-Control-Request-Method", "POST")]
    response = await cors.options(LIST, headers=two)
    assert response.status_code == 403
    assert cors_headers(response) == []


async def test_connect_answers_carry_the_headers_for_a_listed_origin(cors: httpx.AsyncClient, world: World) -> None:
    body = JSON.encode(vault_pb2.ListVaultsRequest())
    ok = await cors.post(LIST, content=body, headers=headers(JSON, world.token("alice"), Origin=APP))
    assert ok.status_code == 200, ok.text
    assert_readable_by(ok, APP)

    unauthenticated = await cors.post(LIST, content=body, headers=headers(JSON, Origin=APP))
    assert unauthenticated.status_code == 401
    assert error_of(unauthenticated)["code"] == "unauthenticated"
    assert_readable_by(unauthenticated, APP)

    # Refused at the front, before connectrpc: the protocol checks.
    bad_version = await cors.post(
        LIST, content=body, headers=headers(JSON, **{"Connect-Protocol-Version": "2"}, Origin=DEV)
    )
    assert bad_version.status_code == 400
    assert_readable_by(bad_version, DEV)

    unknown = await cors.post(UNKNOWN, content=body, headers=headers(JSON, Origin=APP))
    assert unknown.status_code == 404
    assert_readable_by(unknown, APP)


async def test_a_rate_limited_answer_is_readable_with_its_retry_delay(cors: httpx.AsyncClient, world: World) -> None:
    mint = broker_pb2.MintUserApiTokenRequest(tenant_id="acme", requested_scopes=[Scope.VAULT_ITEMS_READ.value])
    asked = headers(JSON, world.token("alice"), Origin=APP)
    answers = [await cors.post(BROKER_MINT, content=JSON.encode(mint), headers=asked) for _ in range(11)]
    limited = answers[-1]
    assert limited.status_code == 429, limited.text
    assert detail(error_of(limited), "google.rpc.RetryInfo")["retryDelay"].endswith("s")
    assert_readable_by(limited, APP)


async def test_grpc_web_answers_carry_the_headers_for_a_listed_origin(cors: httpx.AsyncClient, world: World) -> None:
    grpc_web = {"Content-Type": "application/grpc-web+proto", "X-Grpc-Web": "1", "Origin": APP}
    frame = grpc_web_frame(vault_pb2.ListVaultsRequest())
    ok = await cors.post(LIST, content=frame, headers={**grpc_web, "Authorization": f"Bearer {world.token('alice')}"})
    assert ok.status_code == 200
    assert "grpc-status" not in ok.headers  # in the trailers frame of the body
    assert_readable_by(ok, APP)

    refused = await cors.post(LIST, content=frame, headers=grpc_web)
    assert b"grpc-status: 16" in refused.content  # unauthenticated, in the trailers frame
    assert_readable_by(refused, APP)

    # Refused at the front: the status in the headers (trailers-only), which a page must be let read.
    timeout = await cors.post(LIST, content=frame, headers={**grpc_web, "Grpc-Timeout": "soon"})
    assert timeout.headers["grpc-status"] == "3"
    assert_readable_by(timeout, APP)


async def test_another_origin_is_answered_without_cors_headers(cors: httpx.AsyncClient, world: World) -> None:
    body = JSON.encode(vault_pb2.ListVaultsRequest())
    for origin in ("https://evil.example", "null"):
        response = await cors.post(LIST, content=body, headers=headers(JSON, world.token("alice"), Origin=origin))
        # Served as to any client outside a browser; the browser hides it from the evil page.
        assert response.status_code == 200
        assert cors_headers(response) == []
        assert_vary_origin(response)


async def test_off_by_default_no_cors_header_at_all(plain: httpx.AsyncClient, world: World) -> None:
    assert Settings().cors_origins == ()
    refused = await plain.options(LIST, headers=preflight(APP))
    assert refused.status_code == 405  # OPTIONS is no method of a procedure
    assert cors_headers(refused) == []
    body = JSON.encode(vault_pb2.ListVaultsRequest())
    ok = await plain.post(LIST, content=body, headers=headers(JSON, world.token("alice"), Origin=APP))
    assert ok.status_code == 200
    assert cors_headers(ok) == []
    assert "origin" not in listed(ok.headers.get("vary", ""))


def test_origins_are_read_as_browsers_send_them() -> None:
    given = " https://App.Example.COM:443 ,http://localhost:5173,, http://[0:0::1]:80,https://app.example.com"
    assert parse_cors_origins(given) == ("https://app.example.com", "http://localhost:5173", "http://[::1]")
    assert Settings.from_env({"ZKPLATFORM_CORS_ORIGINS": f"{APP},{DEV}"}).cors_origins == (APP, DEV)
    settings = dataclasses.replace(Settings(), cors_origins=(APP, DEV))
    assert Settings.from_env(settings.to_env()).cors_origins == (APP, DEV)  # as workers receive them


@pytest.mark.parametrize(
    "given",
    ["*", "null", "app.example.com", "https://app.example.com/", "https://app.example.com/app", "ftp://app.example.com",
     "https://", "https://user@app.example.com", "https://app.example.com:0", "https://app.example.com:65536",
     "https://app.example.com?x", "https://app.example.com#x", "https://bücher.example", "https://a b"],
)  # fmt: skip
def test_what_is_no_origin_is_refused_in_one_line(given: str) -> None:
    with pytest.raises(ConfigError) as refused:
        Settings.from_env({"ZKPLATFORM_CORS_ORIGINS": f"{APP},{given}"})
    message = str(refused.value)
    assert "\n" not in message
    assert repr(given) in message or given == "*"
