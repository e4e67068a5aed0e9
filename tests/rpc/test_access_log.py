"""The access line: one per call, with its outcome and caller, and never a token, a query or a payload."""

from __future__ import annotations

import json
import logging
import struct
from typing import Any

import httpx
import pytest
from google.protobuf import json_format

from tests.connect import BROKER_MINT, JSON, VAULT_DELETE, headers
from tests.world import World
from zkplatform.domain import tokens
from zkplatform.observability.logs import JSONFormatter, TextFormatter
from zkplatform_api.platform.v1 import broker_pb2, vault_pb2

ACCESS = "zkplatform.access"
DELETE_PROCEDURE = VAULT_DELETE.removeprefix("/")


@pytest.fixture(autouse=True)
def _capture_info(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)


def access_lines(caplog: pytest.LogCaptureFixture, procedure: str = DELETE_PROCEDURE) -> list[dict[str, Any]]:
    lines = [record.__dict__["access"] for record in caplog.records if record.name == ACCESS]
    return [line for line in lines if line["procedure"] == procedure]


async def mint(client: httpx.AsyncClient, token: str) -> broker_pb2.Token:
    """A token minted from `token` (alice's), able to delete items."""
    body = {"tenantId": "acme", "requestedScopes": ["vault.items.delete"]}
    response = await client.post(BROKER_MINT, json=body, headers=headers(JSON, token))
    assert response.status_code == 200, response.text
    return json_format.ParseDict(response.json()["token"], broker_pb2.Token(), ignore_unknown_fields=True)


async def delete(client: httpx.AsyncClient, token: str | None, item_id: str = "item-1", **extra: str) -> httpx.Response:
    body = {"vaultId": "acme-private", "itemId": item_id, "baseVersion": "1"}
    return await client.post(VAULT_DELETE, json=body, headers=headers(JSON, token, **extra))


async def test_a_call_leaves_one_line_with_its_outcome_caller_and_request_id(
    client: httpx.AsyncClient, world: World, caplog: pytest.LogCaptureFixture
) -> None:
    minted = await mint(client, world.token("alice"))
    caplog.clear()

    response = await delete(client, minted.access_token, **{"X-Request-Id": "req-42/a"})

    assert response.status_code == 200, response.text
    assert response.headers["x-request-id"] == "req-42/a"
    [line] = access_lines(caplog)
    assert line["procedure"] == DELETE_PROCEDURE
    assert line["protocol"] == "connect"
    assert line["code"] == "ok"
    assert line["principal"] == "alice"
    assert line["token_id"] == minted.token_id
    assert line["request_id"] == "req-42/a"
    assert line["peer"] == "127.0.0.1:123"  # httpx's in-process client address
    assert line["http_status"] == 200
    assert line["duration_ms"] >= 0


async def test_refused_calls_are_logged_with_their_final_code(
    client: httpx.AsyncClient, world: World, caplog: pytest.LogCaptureFixture
) -> None:
    await delete(client, world.token("alice"), item_id="no-such-item")
    await delete(client, tokens.new_token())  # well-formed, unknown: after alice's call, still nobody's
    await client.post(VAULT_DELETE, content=b"{", headers=headers(JSON, world.token("alice")))

    missing, unknown, malformed = access_lines(caplog)
    assert (unknown["code"], unknown["principal"], unknown["token_id"]) == ("unauthenticated", "-", "-")
    assert (missing["code"], missing["principal"]) == ("not_found", "alice")
    assert (malformed["code"], malformed["principal"]) == ("invalid_argument", "alice")


async def test_calls_the_front_refuses_are_logged_too(
    client: httpx.AsyncClient, world: World, caplog: pytest.LogCaptureFixture
) -> None:
    big = {"vaultId": "v", "itemId": "x" * 70_000, "baseVersion": "1"}
    await client.post(VAULT_DELETE, json=big, headers=headers(JSON, world.token("alice")))
    await client.post(VAULT_DELETE, content=b"", headers={"Content-Type": "application/grpc"})  # over HTTP/1.1
    await client.post("/no.such.Service/Method", json={}, headers=headers(JSON))

    too_big, grpc = access_lines(caplog)
    [unknown] = access_lines(caplog, "unknown")
    assert (too_big["code"], too_big["protocol"]) == ("resource_exhausted", "connect")
    assert (grpc["code"], grpc["protocol"]) == ("unimplemented", "grpc")
    assert unknown["code"] == "unimplemented"


async def test_grpc_web_calls_carry_their_protocol_and_code(
    client: httpx.AsyncClient, world: World, caplog: pytest.LogCaptureFixture
) -> None:
    request = vault_pb2.DeleteItemRequest(vault_id="acme-private", item_id="item-1", base_version=1)
    payload = request.SerializeToString()
    framed = struct.pack(">BI", 0, len(payload)) + payload
    grpc_web = {"Content-Type": "application/grpc-web+proto", "X-Grpc-Web": "1"}

    await client.post(VAULT_DELETE, content=framed, headers=grpc_web)
    await client.post(
        VAULT_DELETE, content=framed, headers={**grpc_web, "Authorization": f"Bearer {world.token('alice')}"}
    )

    refused, done = access_lines(caplog)
    assert (refused["protocol"], refused["code"]) == ("grpc_web", "unauthenticated")
    assert (done["protocol"], done["code"], done["principal"]) == ("grpc_web", "ok", "alice")


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("abc-123", True),
        ("x" * 128, True),
        ("x" * 129, False),
        ("with space", False),
        ("caf\u00e9", False),
        ("", False),
    ],
)
async def test_a_sane_request_id_is_kept_and_any_other_replaced(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture, given: str, kept: bool
) -> None:
    response = await client.post(
        VAULT_DELETE,
        json={},
        headers=[(k.encode(), v.encode()) for k, v in headers(JSON).items()] + [(b"x-request-id", given.encode())],
    )

    echoed = response.headers["x-request-id"]
    [line] = access_lines(caplog)
    assert line["request_id"] == echoed
    assert (echoed == given) is kept
    if not kept:
        assert len(echoed) == 16
        assert echoed.isalnum()


async def test_each_call_without_a_request_id_gets_its_own(client: httpx.AsyncClient) -> None:
    first = await client.post(VAULT_DELETE, json={}, headers=headers(JSON))
    second = await client.post(VAULT_DELETE, json={}, headers=headers(JSON))
    two = await client.post(
        VAULT_DELETE, json={}, headers=[*headers(JSON).items(), ("X-Request-Id", "a"), ("X-Request-Id", "b")]
    )

    ids = {first.headers["x-request-id"], second.headers["x-request-id"], two.headers["x-request-id"]}
    assert len(ids) == 3
    assert not ids & {"a", "b"}


async def test_no_token_query_or_payload_reaches_any_log(
    client: httpx.AsyncClient, world: World, caplog: pytest.LogCaptureFixture
) -> None:
    alice, bob = world.token("alice"), world.token("bob")
    minted = await mint(client, alice)
    payload_marker = "payload-marker-7f3a"
    unknown = tokens.new_token()

    await delete(client, minted.access_token, item_id=payload_marker)
    await client.post(f"{VAULT_DELETE}?access_token={bob}&q=query-marker", json={}, headers=headers(JSON))
    await delete(client, unknown)
    await client.post(VAULT_DELETE, json={}, headers={**headers(JSON), "Authorization": f"Bearer {alice}x"})

    served = [record for record in caplog.records if record.name.startswith(("zkplatform", "hypercorn"))]
    text = logging.Formatter("%(name)s %(levelname)s %(message)s")
    formatted = "\n".join(f(record) for record in served for f in (text.format, JSONFormatter().format))
    assert access_lines(caplog)
    for secret in [*world.all_tokens(), minted.access_token, unknown, payload_marker, "query-marker"]:
        assert secret not in formatted


async def test_json_lines_carry_the_access_fields(
    client: httpx.AsyncClient, world: World, caplog: pytest.LogCaptureFixture
) -> None:
    await delete(client, world.token("alice"))

    [record] = [r for r in caplog.records if r.name == ACCESS]
    line = json.loads(JSONFormatter().format(record))
    assert {"time", "level", "logger", "message", "pid"} <= line.keys()
    assert (line["level"], line["logger"], line["code"], line["principal"]) == ("info", ACCESS, "ok", "alice")
    assert line["procedure"] == DELETE_PROCEDURE


async def test_a_refusal_names_the_token_by_a_field_of_its_own(
    client: httpx.AsyncClient, world: World, caplog: pytest.LogCaptureFixture
) -> None:
    bob = world.token("bob")
    await client.post(f"{VAULT_DELETE}?access_token={bob}", json={}, headers=headers(JSON))  # leaked: revoked
    await delete(client, bob)  # refused: revoked

    [refusal] = [r for r in caplog.records if r.getMessage() == "authentication refused: token revoked"]
    line = json.loads(JSONFormatter().format(refusal))
    text = TextFormatter().format(refusal)
    assert line["message"] == "authentication refused: token revoked"
    assert line["token_id"].startswith("tok_")
    assert text.endswith(f"authentication refused: token revoked token_id={line['token_id']}")
