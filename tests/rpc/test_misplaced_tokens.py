"""Tokens outside the URL (issue 39, item 7), through the whole app in process, tracing on.

A token sent as `X-Request-Id`, or in any string field of a request (an id, nested, repeated,
a map's key), has leaked as one in a URL has: it is revoked (the `token.revoked_in_url` event,
by the service, in that request) and the request answers `invalid_argument` TOKEN_MISPLACED
naming where, never the token. Nothing the server writes keeps it: not the access line, not
any log record, not a span (its status, events, exception stack, attributes), not an audit
event, not the answer (its body, its `X-Request-Id`). And no error message names an id the
client chose: a span of an ITEM_NOT_FOUND carries no item id.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.connect import JSON, VAULT_DELETE, brief, detail, error_of, headers
from tests.world import BASE_URL, World
from zkplatform.app import create_app
from zkplatform.config import Settings
from zkplatform.domain import tokens
from zkplatform.observability.telemetry import Telemetry
from zkplatform.wiring import Platform

VAULT = "/platform.v1.VaultService"
GET_ITEM = f"{VAULT}/GetItem"
CREATE_ITEM = f"{VAULT}/CreateItem"
WATCH = f"{VAULT}/WatchChanges"
HEALTH_CHECK = "/grpc.health.v1.Health/Check"
RECIPIENT_KEYS = "/platform.v1.DirectoryService/GetRecipientKeys"
PAYLOAD = {"alg": "A256GCM", "nonce": "bm9uY2Vub25jZW5v", "ciphertext": "c2VjcmV0", "version": 1}
KEYS = [{"recipientId": "alice", "wrapAlg": "A256KW", "wrappedKey": "a2V5a2V5a2V5a2V5"}]
HEADER_ADVICE = "a token must never be sent as a request id; it has been revoked, use the Authorization header"
FIELD_ADVICE = "a token must never be sent in a request's fields; it has been revoked, use the Authorization header"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    return caplog


@pytest.fixture
async def traced(platform: Platform, world: World, exporter: InMemorySpanExporter) -> AsyncIterator[httpx.AsyncClient]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = create_app(Settings(), platform=platform, telemetry=Telemetry(tracer_provider=provider))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as client:
        yield client
    provider.shutdown()


def written(logs: pytest.LogCaptureFixture, exporter: InMemorySpanExporter) -> str:
    """Everything the server wrote down: each log record whole (message, arguments, extra fields,
    exception) and each span whole (name, status, attributes, events with their stacks)."""
    formatter = logging.Formatter()  # with the exception's text and stack, when a record has one
    records = [f"{record.getMessage()} {record.__dict__!r} {formatter.format(record)}" for record in logs.records]
    spans = [span.to_json() for span in exporter.get_finished_spans()]
    return "\n".join([*records, *spans])


async def audit_events(world: World) -> str:
    return json.dumps([record.exported() for record in await world.platform.store.audit_records("acme", 0, 10_000)])


async def is_revoked(client: httpx.AsyncClient, token: str) -> bool:
    body = {"vaultId": "acme-private", "itemId": "item-1", "baseVersion": "1"}
    response = await client.post(VAULT_DELETE, json=body, headers=headers(JSON, token))
    return response.status_code == 401 and error_of(response)["message"] == "token revoked"


def assert_misplaced(response: httpx.Response, where: str, advice: str = FIELD_ADVICE) -> None:
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert brief(error) == {
        "code": "invalid_argument",
        "message": f"invalid request: {where}: {advice}",
        "reason": "TOKEN_MISPLACED",
    }
    assert detail(error, "google.rpc.BadRequest")["fieldViolations"] == [{"field": where, "description": advice}]


# X-Request-Id


@pytest.mark.parametrize("path", [VAULT_DELETE, "/healthz", "/readyz", "/no/such/path", HEALTH_CHECK])
@pytest.mark.parametrize("shape", ["{token}", "req-{token}-1"])
async def test_a_token_as_a_request_id_is_revoked_and_written_nowhere(
    traced: httpx.AsyncClient,
    world: World,
    logs: pytest.LogCaptureFixture,
    exporter: InMemorySpanExporter,
    path: str,
    shape: str,
) -> None:
    bob = world.token("bob")
    extra = {"X-Request-Id": shape.format(token=bob)}

    response = await traced.post(path, json={}, headers=headers(JSON, world.token("alice"), **extra))

    assert_misplaced(response, "x-request-id", HEADER_ADVICE)
    assert bob not in response.text
    assert bob not in response.headers["x-request-id"]
    (access,) = [record.__dict__["access"] for record in logs.records if record.name == "zkplatform.access"]
    assert access["request_id"] == response.headers["x-request-id"]  # a fresh id, the one answered
    assert access["code"] == "invalid_argument"
    assert bob not in written(logs, exporter)
    events = await audit_events(world)
    assert bob not in events
    assert "token.revoked_in_url" in events
    assert await is_revoked(traced, bob)
    assert not await is_revoked(traced, world.token("alice"))


async def test_a_request_id_that_only_looks_like_a_token_is_taken(client: httpx.AsyncClient, world: World) -> None:
    """The checksum tells a token from a string of its shape: such an id is the client's as ever."""
    lookalike = "zkp_" + "A" * 49
    assert not tokens.is_well_formed(lookalike)
    body = {"vaultId": "acme-private", "itemId": "item-1", "baseVersion": "1"}

    response = await client.post(
        VAULT_DELETE, json=body, headers=headers(JSON, world.token("alice"), **{"X-Request-Id": lookalike})
    )

    assert response.status_code == 200, response.text
    assert response.headers["x-request-id"] == lookalike


# fields of a request


def _get(token: str) -> tuple[str, dict[str, Any], str]:
    return GET_ITEM, {"vaultId": "acme-private", "itemId": token}, "itemId"


def _inside(token: str) -> tuple[str, dict[str, Any], str]:
    return GET_ITEM, {"vaultId": f"acme-{token}-private", "itemId": "item-1"}, "vaultId"


def _delete(token: str) -> tuple[str, dict[str, Any], str]:
    return VAULT_DELETE, {"vaultId": "acme-private", "itemId": token, "baseVersion": "1"}, "itemId"


def _nested(token: str) -> tuple[str, dict[str, Any], str]:
    keys = [*KEYS, {**KEYS[0], "recipientId": token}]
    item = {"vaultId": "acme-private", "itemId": "new", "kind": "login", "encryptedPayload": PAYLOAD}
    return CREATE_ITEM, {**item, "wrappedKeys": keys}, "wrappedKeys[1].recipientId"


def _request_id(token: str) -> tuple[str, dict[str, Any], str]:
    item = {"vaultId": "acme-private", "itemId": "new", "kind": "login", "encryptedPayload": PAYLOAD}
    return CREATE_ITEM, {**item, "wrappedKeys": KEYS, "requestId": token}, "requestId"


def _repeated(token: str) -> tuple[str, dict[str, Any], str]:
    return RECIPIENT_KEYS, {"principalIds": ["alice", token]}, "principalIds[1]"


def _health(token: str) -> tuple[str, dict[str, Any], str]:
    return HEALTH_CHECK, {"service": token}, "service"


@pytest.mark.parametrize("case", [_get, _inside, _delete, _nested, _request_id, _repeated, _health])
async def test_a_token_in_a_field_is_revoked_and_written_nowhere(
    traced: httpx.AsyncClient,
    world: World,
    logs: pytest.LogCaptureFixture,
    exporter: InMemorySpanExporter,
    case: Any,
) -> None:
    bob = world.token("bob")
    path, body, where = case(bob)

    response = await traced.post(path, json=body, headers=headers(JSON, world.token("alice")))

    assert_misplaced(response, where)
    assert bob not in response.text
    assert bob not in written(logs, exporter)
    events = await audit_events(world)
    assert bob not in events
    assert "token.revoked_in_url" in events
    assert await is_revoked(traced, bob)
    assert not await is_revoked(traced, world.token("alice"))


async def test_a_token_in_a_field_of_a_stream_request_is_refused(
    client: httpx.AsyncClient, world: World, logs: pytest.LogCaptureFixture
) -> None:
    bob = world.token("bob")
    message = json.dumps({"vaultId": bob}).encode()
    enveloped = b"\0" + len(message).to_bytes(4, "big") + message
    stream_headers = {**headers(JSON, world.token("alice")), "Content-Type": "application/connect+json"}

    response = await client.post(WATCH, content=enveloped, headers=stream_headers)

    assert bob not in response.text
    assert "TOKEN_MISPLACED" in response.text
    assert bob not in logs.text
    assert await is_revoked(client, bob)


async def test_a_well_formed_token_that_is_no_ones_is_refused_all_the_same(
    client: httpx.AsyncClient, world: World
) -> None:
    stranger = tokens.new_token()

    response = await client.post(GET_ITEM, json=_get(stranger)[1], headers=headers(JSON, world.token("alice")))

    assert_misplaced(response, "itemId")
    assert stranger not in response.text


# ids stay out of messages


async def test_an_item_not_found_names_no_id_in_its_message_or_its_span(
    traced: httpx.AsyncClient, world: World, logs: pytest.LogCaptureFixture, exporter: InMemorySpanExporter
) -> None:
    item_id = "a-secretive-item-id-7f3a"

    response = await traced.post(
        GET_ITEM, json={"vaultId": "acme-private", "itemId": item_id}, headers=headers(JSON, world.token("alice"))
    )

    assert response.status_code == 404, response.text
    assert brief(error_of(response)) == {
        "code": "not_found",
        "message": "no such item in the vault",
        "reason": "ITEM_NOT_FOUND",
    }
    assert item_id not in response.text
    (span,) = exporter.get_finished_spans()
    assert span.events, "the span records the failure"
    assert item_id not in written(logs, exporter)


@pytest.mark.parametrize("shape", ["{token}", "x{token}y"])
async def test_the_platform_stores_no_token_sent_as_an_item_id(
    client: httpx.AsyncClient, world: World, shape: str
) -> None:
    """What the issue saw: a token as an itemId of a CreateItem would have been stored, and shown."""
    bob = world.token("bob")
    path, body, _ = _request_id("x")
    body = {**body, "itemId": shape.format(token=bob)}
    body.pop("requestId")

    response = await client.post(path, json=body, headers=headers(JSON, world.token("alice")))

    assert_misplaced(response, "itemId")
    assert await world.platform.store.get_item("acme-private", shape.format(token=bob)) is None
