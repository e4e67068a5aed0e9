"""Requests a hostile or careless client sends: each gets a clear 4xx in its own protocol, never a 500."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import MutableMapping
from typing import Any

import httpx
import pytest

from tests.connect import BROKER_MINT, JSON, VAULT_DELETE, brief, detail, error_of, headers
from tests.world import World
from zkplatform.app import create_app
from zkplatform.config import Settings
from zkplatform.wiring import Platform

DELETE_BODY = {"vaultId": "acme-private", "itemId": "item-1", "baseVersion": "1"}


def violations(response: httpx.Response) -> dict[str, str]:
    error = error_of(response)
    assert error["code"] == "invalid_argument", error
    return {v.get("field", ""): v["description"] for v in detail(error, "google.rpc.BadRequest")["fieldViolations"]}


def raw(named: dict[str, str]) -> list[tuple[bytes, bytes]]:
    return [(name.encode(), value.encode()) for name, value in named.items()]


async def is_revoked(client: httpx.AsyncClient, token: str) -> bool:
    response = await client.post(VAULT_DELETE, json=DELETE_BODY, headers=headers(JSON, token))
    return response.status_code == 401 and error_of(response)["message"] == "token revoked"


# headers that are not UTF-8


@pytest.mark.parametrize("path", [VAULT_DELETE, "/grpc.health.v1.Health/Check", "/no/such/path"])
async def test_a_header_that_is_not_utf8_is_invalid_argument(
    client: httpx.AsyncClient, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        response = await client.post(path, content=b"{}", headers=[*raw(headers(JSON)), (b"x-foo", b"\xff")])

    assert response.status_code == 400
    error = error_of(response)
    assert brief(error) == {
        "code": "invalid_argument",
        "message": "malformed request: x-foo is not valid UTF-8",
        "reason": "HEADER_INVALID",
    }
    assert detail(error, "google.rpc.ErrorInfo")["metadata"] == {"header": "x-foo"}
    assert not caplog.records  # no traceback, nothing an operator must look at


async def test_a_header_that_is_not_utf8_is_answered_in_the_grpc_web_protocol(client: httpx.AsyncClient) -> None:
    response = await client.post(
        VAULT_DELETE, content=b"", headers={b"content-type": b"application/grpc-web+proto", b"x-foo": b"\xc3\x28"}
    )

    assert response.status_code == 200
    assert response.headers["grpc-status"] == "3"  # invalid_argument


async def test_utf8_beyond_ascii_in_a_header_is_fine(client: httpx.AsyncClient, world: World) -> None:
    extra = (b"x-name", "Zoë".encode())
    response = await client.post(
        VAULT_DELETE, json=DELETE_BODY, headers=[*raw(headers(JSON, world.token("alice"))), extra]
    )

    assert response.status_code == 200, response.text


# JSON of the wrong type


@pytest.mark.parametrize("value", ['"abc"', "1.5", "true", '"99999999999999999999"', str(2**63), "[1]", "{}"])
async def test_a_json_value_of_the_wrong_type_names_its_field(
    client: httpx.AsyncClient, world: World, value: str
) -> None:
    body = f'{{"vaultId": "acme-private", "itemId": "item-1", "baseVersion": {value}}}'

    response = await client.post(VAULT_DELETE, content=body, headers=headers(JSON, world.token("alice")))

    assert response.status_code == 400
    named = violations(response)
    assert list(named) == ["baseVersion"]
    assert "whole number" in named["baseVersion"]
    message = error_of(response)["message"]
    assert message.startswith("invalid request: baseVersion: must be a whole number")
    assert "int()" not in message
    assert "literal" not in message


async def test_every_mistyped_field_is_named_nested_ones_by_their_path(client: httpx.AsyncClient, world: World) -> None:
    body = {"tenantId": 7, "requestedScopes": "vault.items.read", "requestedTtlSeconds": "soon", "popKeyId": None}

    response = await client.post(BROKER_MINT, json=body, headers=headers(JSON, world.token("alice")))

    assert set(violations(response)) == {"tenantId", "requestedScopes", "requestedTtlSeconds"}


async def test_json_that_does_not_parse_is_invalid_argument_in_our_words(
    client: httpx.AsyncClient, world: World
) -> None:
    for body in (b'{"vaultId": ', b"[1, 2]", b"\xff\xfe", b"[" * 50_000):
        response = await client.post(VAULT_DELETE, content=body, headers=headers(JSON, world.token("alice")))

        assert response.status_code == 400
        assert "Expecting" not in error_of(response)["message"]  # no parser internals
        assert "" in violations(response)


# a token anywhere in a URL


@pytest.mark.parametrize(
    "url",
    [
        "/healthz?x={token}",
        "/no/such/path?{token}=1",
        "/grpc.health.v1.Health/Check?a=Bearer%20{token}",
        VAULT_DELETE + "?a={token},{token}",
        VAULT_DELETE + "?a=prefix{token}suffix",
        "/nothing/{token}",
    ],
)
async def test_a_token_anywhere_in_a_url_is_revoked_and_refused(
    client: httpx.AsyncClient, world: World, url: str
) -> None:
    bob = world.token("bob")

    response = await client.post(url.format(token=bob), json={}, headers=headers(JSON))

    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_argument"
    assert bob not in response.text
    assert await is_revoked(client, bob)
    assert not await is_revoked(client, world.token("alice"))


@pytest.mark.parametrize(
    "refused_for",
    [
        {"content": b"x" * (64 * 1024 + 1)},  # a body over the limit: answered first
        {"content": b"{}", "headers": {"Content-Type": "application/json"}},  # no protocol header
        {"content": b"{}", "headers": {"Content-Type": "text/plain", "Connect-Protocol-Version": "1"}},  # 415
    ],
    ids=["body-over-limit", "no-protocol-header", "unsupported-content-type"],
)
async def test_a_call_refused_for_another_reason_still_revokes_the_token_in_its_url(
    client: httpx.AsyncClient, world: World, refused_for: dict[str, Any]
) -> None:
    carol = world.token("carol")
    request = {"headers": headers(JSON)} | refused_for

    response = await client.post(f"{VAULT_DELETE}?access_token={carol}", **request)

    assert response.status_code in (400, 415, 429)
    assert await is_revoked(client, carol)


async def test_a_get_with_a_token_in_its_query_is_revoked(client: httpx.AsyncClient, world: World) -> None:
    bob = world.token("bob")

    response = await client.get(f"{VAULT_DELETE}?message={bob}&encoding=json")

    assert response.status_code == 400  # the token in the URL is refused before the method (docs/api.md)
    assert await is_revoked(client, bob)


# the Authorization header


async def test_two_authorization_headers_are_unauthenticated(client: httpx.AsyncClient, world: World) -> None:
    alice = world.token("alice")
    both = [*headers(JSON).items(), ("Authorization", f"Bearer {alice}"), ("Authorization", f"Bearer {alice}")]

    response = await client.post(VAULT_DELETE, json=DELETE_BODY, headers=both)

    assert response.status_code == 401
    assert brief(error_of(response)) == {
        "code": "unauthenticated",
        "message": "more than one Authorization header",
        "reason": "TOKEN_INVALID",
    }
    assert not (await world.item("acme-private", "item-1")).deleted


# methods and protocols


async def test_a_get_on_a_post_only_procedure_is_405_naming_post(client: httpx.AsyncClient) -> None:
    response = await client.get(VAULT_DELETE)  # no protocol header, no token: the method answers first

    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert error_of(response)["code"] == "unimplemented"


async def test_grpc_over_http_1_1_is_refused_in_a_sentence(client: httpx.AsyncClient) -> None:
    response = await client.post(VAULT_DELETE, content=b"", headers={"Content-Type": "application/grpc"})

    assert response.status_code == 200  # gRPC answers errors in its own status
    assert response.headers["grpc-status"] == "12"
    assert "HTTP/2" in httpx.URL("/?m=" + response.headers["grpc-message"]).params["m"]


# a body that does not arrive


@pytest.mark.parametrize(
    ("content_type", "deadline"),
    [("application/json", ("connect-timeout-ms", "50")), ("application/grpc-web+proto", ("grpc-timeout", "50m"))],
    ids=["connect", "grpc-web"],
)
async def test_a_body_that_stalls_is_refused_at_the_call_deadline(
    platform: Platform, world: World, content_type: str, deadline: tuple[str, str]
) -> None:
    """Answered at the 50 ms deadline, not once the body-read bound (30 s) has passed; the
    margin is for a busy machine."""
    started = asyncio.get_running_loop().time()
    extra = {"content-type": content_type, deadline[0]: deadline[1], **bearer(world)}

    answer = await call_with_stalled_body(platform, extra, Settings(body_read_timeout_seconds=30))

    assert asyncio.get_running_loop().time() - started < 10
    if content_type == "application/json":
        assert answer["status"] == 504
        assert json.loads(answer["body"])["code"] == "deadline_exceeded"
    else:
        assert answer["status"] == 200
        assert b"grpc-status: 4\r\n" in answer["body"]  # DEADLINE_EXCEEDED, in the trailers frame


async def test_a_body_that_stalls_is_refused_at_the_body_read_timeout(platform: Platform, world: World) -> None:
    """Not before the bound (one sweeper per worker finds the late, a period after at most)."""
    started = asyncio.get_running_loop().time()

    answer = await call_with_stalled_body(platform, bearer(world), Settings(body_read_timeout_seconds=1))

    assert asyncio.get_running_loop().time() - started >= 1
    assert answer["status"] == 504
    assert brief(json.loads(answer["body"])) == {
        "code": "deadline_exceeded",
        "message": "the request body did not arrive within 1 s",
        "reason": "BODY_READ_TIMEOUT",
    }


async def test_a_call_refused_before_its_body_is_answered_only_once_the_body_has_arrived(
    platform: Platform, world: World
) -> None:
    """No token: refused before the body is read, but answered only after it, whatever its size:
    an HTTP/1.1 client still sending its body takes an early answer for a broken connection."""
    app = create_app(Settings(), platform=platform)
    chunks = [b'{"vaultId": "acme-private", ', b'"itemId": "item-1", "baseVersion": "1"}']
    events: list[str] = []

    async def receive() -> dict[str, Any]:
        events.append("body chunk")
        return {"type": "http.request", "body": chunks.pop(0), "more_body": bool(chunks)}

    async def send(message: MutableMapping[str, Any]) -> None:
        events.append(message["type"])

    await app(delete_scope({}), receive, send)

    assert events[:3] == ["body chunk", "body chunk", "http.response.start"]


def delete_scope(extra_headers: dict[str, str]) -> dict[str, Any]:
    """The ASGI scope of a Connect JSON DeleteItem over HTTP/1.1, with these headers besides
    (or instead: a content type of its own)."""
    named = {"content-type": "application/json", "connect-protocol-version": "1", **extra_headers}
    return {
        "type": "http",
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": VAULT_DELETE,
        "query_string": b"",
        "headers": raw(named),
    }


def bearer(world: World) -> dict[str, str]:
    """The body is read once the caller is known (docs/api.md, the order of checks)."""
    return {"authorization": f"Bearer {world.token('alice')}"}


async def call_with_stalled_body(
    platform: Platform, extra_headers: dict[str, str], settings: Settings | None = None
) -> dict[str, Any]:
    """Drive the ASGI app directly: the first chunk of the body arrives, the rest never does."""
    app = create_app(settings or Settings(), platform=platform)
    scope = delete_scope(extra_headers)
    # gRPC: a message's prefix says 16 bytes follow, and none do.
    first = (
        b"\x00\x00\x00\x00\x10"
        if extra_headers.get("content-type", "").startswith("application/grpc")
        else b'{"vaultId": '
    )
    chunks = [{"type": "http.request", "body": first, "more_body": True}]
    answer: dict[str, Any] = {}

    async def receive() -> dict[str, Any]:
        if chunks:
            return chunks.pop()
        await asyncio.Event().wait()  # the client stalls
        raise AssertionError

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["headers"] = dict(message["headers"])
        elif message["type"] == "http.response.body":
            answer["body"] = message["body"]

    async with asyncio.timeout(60):  # fails rather than hangs whatever the bounds
        await app(scope, receive, send)
    return answer
