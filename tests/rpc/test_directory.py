"""DirectoryService through the whole app in-process: publishing, revoking and finding recipient
keys, the key log a client verifies, and every check in the order of the other RPCs."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message
from joserfc import jwk
from prometheus_client import CollectorRegistry

from tests.connect import JSON, Codec, detail, error_of, headers
from tests.rpc.test_get_form import bearer, query
from tests.rpc.test_metrics import Scrape
from tests.world import BASE_URL, FakeClock, World
from zkplatform.app import create_app
from zkplatform.config import Settings
from zkplatform.domain.models import Scope
from zkplatform.observability.metrics import Metrics
from zkplatform.observability.telemetry import Telemetry
from zkplatform.wiring import Platform
from zkplatform_api.platform.v1 import directory_pb2

SERVICE = "/platform.v1.DirectoryService"
PATHS = {
    directory_pb2.PublishKeyRequest: f"{SERVICE}/PublishKey",
    directory_pb2.RevokeKeyRequest: f"{SERVICE}/RevokeKey",
    directory_pb2.GetRecipientKeysRequest: f"{SERVICE}/GetRecipientKeys",
    directory_pb2.ListKeyLogRequest: f"{SERVICE}/ListKeyLog",
}
ZERO_HASH = "A" * 43  # base64url of 32 zero bytes: the head of an empty log


@pytest.fixture
async def world(platform: Platform) -> World:
    """The development data set before its demo keys are published: every log starts empty."""
    return await World.seed(platform, keys=False)


def x25519() -> jwk.OKPKey:
    return jwk.OKPKey.generate_key("X25519", private=True)


def p256() -> jwk.ECKey:
    return jwk.ECKey.generate_key("P-256", private=True)


def public(key: jwk.OKPKey | jwk.ECKey, **extra: Any) -> str:
    return json.dumps({**key.as_dict(private=False), **extra})


def publish(text: str, request_id: str = "") -> directory_pb2.PublishKeyRequest:
    return directory_pb2.PublishKeyRequest(public_key_jwk=text, request_id=request_id)


def revoke(key_id: str) -> directory_pb2.RevokeKeyRequest:
    return directory_pb2.RevokeKeyRequest(key_id=key_id)


def recipients(*principal_ids: str) -> directory_pb2.GetRecipientKeysRequest:
    return directory_pb2.GetRecipientKeysRequest(principal_ids=principal_ids)


def key_log(since_index: int = 0, page_size: int = 0, page_token: str = "") -> directory_pb2.ListKeyLogRequest:
    return directory_pb2.ListKeyLogRequest(since_index=since_index, page_size=page_size, page_token=page_token)


async def call(client: httpx.AsyncClient, codec: Codec, request: Message, token: str | None) -> httpx.Response:
    return await client.post(PATHS[type(request)], content=codec.encode(request), headers=headers(codec, token))


async def answer(client: httpx.AsyncClient, request: Message, token: str, codec: Codec = JSON) -> Any:
    """The answer of a call that must succeed, decoded as its response message."""
    response = await call(client, codec, request, token)
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    response_class = getattr(directory_pb2, type(request).__name__.removesuffix("Request") + "Response")
    return codec.decode(response.content, response_class)


async def published(client: httpx.AsyncClient, world: World, principal_id: str, text: str | None = None) -> Any:
    """The key a principal published (a new X25519 key unless `text` is given)."""
    response = await answer(client, publish(text or public(x25519())), world.token(principal_id))
    return response.key


def refusal(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error = error_of(response)
    assert error["code"] == code
    return error


def violations(response: httpx.Response) -> list[dict[str, str]]:
    error = refusal(response, 400, "invalid_argument")
    found: list[dict[str, str]] = detail(error, "google.rpc.BadRequest")["fieldViolations"]
    return found


def reason(error: dict[str, Any]) -> str:
    return str(detail(error, "google.rpc.ErrorInfo")["reason"])


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def verified(entries: list[dict[str, Any]], head: dict[str, Any], start: tuple[int, str] = (0, ZERO_HASH)) -> None:
    """A client's check of a log's JSON answer, made only from what directory.proto says of the
    canonical bytes: every entry chains from `start` (an earlier head) and the chain ends at the head."""
    size, previous = start
    for entry in entries:
        size += 1
        assert int(entry["index"]) == size
        time = int(json_format.Parse(json.dumps(entry["time"]), directory_pb2.KeyLogEntry().time).seconds)
        canonical = (
            f'{{"action":"{entry["action"]}","jwk":{entry["jwk"]},"keyId":"{entry["keyId"]}",'
            f'"principalId":"{entry["principalId"]}","tenantId":"{entry["tenantId"]}","time":{time}}}'
        )
        digest = hashlib.sha256(base64.urlsafe_b64decode(previous + "=") + canonical.encode()).digest()
        previous = b64url(digest)
        assert entry["hash"] == previous
    assert (int(head.get("size", "0")), head["hash"]) == (size, previous)


# Publishing


async def test_a_key_is_published_with_its_thumbprint_and_the_logs_head(
    client: httpx.AsyncClient, codec: Codec, world: World, clock: FakeClock
) -> None:
    key = x25519()

    response = await answer(client, publish(public(key)), world.token("bob"), codec)

    stored = response.key
    assert stored.key_id == key.thumbprint()
    assert stored.key_id == b64url(hashlib.sha256(stored.jwk.encode()).digest())
    assert json.loads(stored.jwk) == key.as_dict(private=False)
    assert stored.jwk == json.dumps(json.loads(stored.jwk), sort_keys=True, separators=(",", ":"))
    assert (stored.tenant_id, stored.principal_id, stored.created_at.seconds) == ("acme", "bob", clock.now)
    assert not stored.HasField("revoked_at")
    assert response.log_head.size == 1
    assert response.log_head.hash != ZERO_HASH


async def test_a_p256_key_with_webcrypto_members_is_kept_in_canonical_form(
    client: httpx.AsyncClient, world: World
) -> None:
    key = p256()

    stored = await published(client, world, "alice", public(key, key_ops=[], ext=True, use="enc", kid="laptop"))

    assert stored.key_id == key.thumbprint()
    assert list(json.loads(stored.jwk)) == ["crv", "kty", "x", "y"]


async def test_publishing_the_same_key_again_answers_the_same(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    text = public(x25519())
    first = await answer(client, publish(text), world.token("alice"))
    clock.advance(60)

    again = await answer(client, publish(text, "9b2f61d4-3c1e-4b8a-a7d0-5e6f1c2b3a49"), world.token("alice"))

    assert again == first
    log = await answer(client, key_log(), world.token("alice"))
    assert len(log.entries) == 1


async def test_another_principals_key_is_already_exists(client: httpx.AsyncClient, world: World) -> None:
    text = public(x25519())
    await published(client, world, "alice", text)

    error = refusal(await call(client, JSON, publish(text), world.token("bob")), 409, "already_exists")

    assert reason(error) == "KEY_EXISTS"


async def test_a_revoked_key_cannot_be_published_again(client: httpx.AsyncClient, world: World) -> None:
    text = public(x25519())
    key = await published(client, world, "alice", text)
    await answer(client, revoke(key.key_id), world.token("alice"))

    error = refusal(await call(client, JSON, publish(text), world.token("alice")), 400, "failed_precondition")

    assert reason(error) == "KEY_REVOKED"


REQUEST_ID = "9B2F61D4-3C1E-4B8A-A7D0-5E6F1C2B3A49"


async def test_a_request_id_with_another_key_is_request_id_reused(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    first = await answer(client, publish(public(x25519()), REQUEST_ID), world.token("alice"), codec)

    response = await call(client, codec, publish(public(x25519()), REQUEST_ID.lower()), world.token("alice"))

    error = refusal(response, 400, "invalid_argument")
    assert reason(error) == "REQUEST_ID_REUSED"
    assert [v["field"] for v in detail(error, "google.rpc.BadRequest")["fieldViolations"]] == ["requestId"]
    log = await answer(client, key_log(), world.token("alice"))
    assert [e.key_id for e in log.entries] == [first.key.key_id]
    other = await answer(client, publish(public(x25519()), REQUEST_ID), world.token("bob"), codec)  # bob's own
    assert other.key.principal_id == "bob"


async def test_a_repeat_with_its_request_id_answers_the_key_even_revoked_since(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    text = public(x25519())
    first = await answer(client, publish(text, REQUEST_ID), world.token("alice"))
    clock.advance(60)
    revoked = await answer(client, revoke(first.key.key_id), world.token("alice"))

    repeat = await answer(client, publish(text, REQUEST_ID), world.token("alice"))
    without_id = await call(client, JSON, publish(text), world.token("alice"))

    assert repeat.key == revoked.key
    assert repeat.log_head == revoked.log_head
    assert reason(refusal(without_id, 400, "failed_precondition")) == "KEY_REVOKED"


def bad_keys() -> Iterator[tuple[str, str, str]]:
    """(what, JWK text, a part of what the refusal says)."""
    okp, ec = x25519(), p256()
    okp_public, ec_public = okp.as_dict(private=False), ec.as_dict(private=False)
    x = str(okp_public["x"])
    yield "private X25519", json.dumps(okp.as_dict(private=True)), "private member d"
    yield "private P-256", json.dumps(ec.as_dict(private=True)), "private member d"
    yield "a symmetric key", json.dumps({"kty": "oct", "k": "c2VjcmV0"}), "private member k"
    yield "RSA", json.dumps({"kty": "RSA", "n": "AQAB", "e": "AQAB"}), "X25519 key"
    yield "Ed25519", json.dumps({**okp_public, "crv": "Ed25519"}), "X25519 key"
    yield "P-384", json.dumps({**ec_public, "crv": "P-384"}), "P-256 key"
    yield "off the curve", json.dumps({**ec_public, "y": ec_public["x"]}), "not a usable P-256 public key"
    yield "short", json.dumps({**okp_public, "x": x[:20]}), "not a usable X25519 public key"
    yield "padded", json.dumps({**okp_public, "x": x + "="}), "not a usable X25519 public key"
    yield "no x", json.dumps({"kty": "OKP", "crv": "X25519"}), "x must be a string"
    yield "a y on OKP", json.dumps({**okp_public, "y": okp_public["x"]}), "has the member y"
    yield "for signing", json.dumps({**okp_public, "use": "sig"}), 'use must be "enc"'
    yield "not JSON", "{kty: OKP}", "is not JSON"
    yield "an array", json.dumps([okp_public]), "must be a JSON object"
    yield "a repeated member", '{"kty":"OKP","kty":"OKP","crv":"X25519","x":"' + x + '"}', "repeats"


BAD_KEYS = list(bad_keys())


@pytest.mark.parametrize(("text", "says"), [(t, s) for _, t, s in BAD_KEYS], ids=[w for w, _, _ in BAD_KEYS])
async def test_a_jwk_that_is_no_usable_public_key_is_invalid_argument(
    client: httpx.AsyncClient, codec: Codec, world: World, text: str, says: str
) -> None:
    response = await call(client, codec, publish(text), world.token("alice"))

    [violation] = violations(response)
    assert violation["field"] == "publicKeyJwk"
    assert says in violation["description"]
    assert '"d"' not in response.text  # the private key is not repeated in the answer
    log = await answer(client, key_log(), world.token("alice"))
    assert list(log.entries) == []


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (publish(""), "publicKeyJwk"),
        (publish("x" * 1025), "publicKeyJwk"),
        (publish("{}", request_id="not-a-uuid"), "requestId"),
        (revoke("not-a-thumbprint"), "keyId"),
        (directory_pb2.GetRecipientKeysRequest(), "principalIds"),
        (recipients(*(f"p{n}" for n in range(101))), "principalIds"),
        (recipients("bad id"), "principalIds[0]"),
        (key_log(since_index=-1), "sinceIndex"),
        (key_log(page_size=1001), "pageSize"),
        (key_log(page_token="a\x00b"), "pageToken"),
    ],
    ids=[
        "empty jwk",
        "long jwk",
        "request id",
        "key id",
        "no principals",
        "101 principals",
        "bad id",
        "since",
        "size",
        "nul",
    ],
)
async def test_fields_that_break_their_rules_are_named(
    client: httpx.AsyncClient, world: World, request_: Message, field: str
) -> None:
    assert [v["field"] for v in violations(await call(client, JSON, request_, world.token("alice")))] == [field]


# The order of checks


def every_rpc() -> list[Message]:
    return [publish(public(x25519())), revoke("A" * 43), recipients("alice"), key_log()]


RPC_IDS = ["publish", "revoke", "get", "log"]


@pytest.mark.parametrize("index", range(4), ids=RPC_IDS)
async def test_no_token_or_a_bad_one_is_unauthenticated_before_the_body_is_looked_at(
    client: httpx.AsyncClient, codec: Codec, index: int
) -> None:
    request = every_rpc()[index]
    broken = type(request)()  # breaks the field rules it has

    for token in (None, "zkp_" + "A" * 49, "not-a-token"):
        for sent in (request, broken):
            refusal(await call(client, codec, sent, token), 401, "unauthenticated")


@pytest.mark.parametrize(
    ("index", "scope", "other_scopes"),
    [
        (0, "directory.keys.publish", [Scope.DIRECTORY_KEYS_READ, Scope.VAULT_ITEMS_WRITE]),
        (1, "directory.keys.publish", [Scope.DIRECTORY_KEYS_READ, Scope.VAULT_ITEMS_WRITE]),
        (2, "directory.keys.read", [Scope.DIRECTORY_KEYS_PUBLISH, Scope.VAULT_ITEMS_READ]),
        (3, "directory.keys.read", [Scope.DIRECTORY_KEYS_PUBLISH, Scope.VAULT_ITEMS_READ]),
    ],
    ids=RPC_IDS,
)
async def test_a_token_without_the_scope_is_denied_before_anything_is_looked_at(
    client: httpx.AsyncClient, world: World, index: int, scope: str, other_scopes: list[Scope]
) -> None:
    alice = await world.platform.store.get_principal("alice")
    assert alice is not None
    narrow = await world.platform.issuer.issue(alice, 600, other_scopes)
    request = every_rpc()[index]
    if isinstance(request, directory_pb2.PublishKeyRequest):
        request = publish(json.dumps(x25519().as_dict(private=True)))  # a bad key: the scope answers first

    error = refusal(await call(client, JSON, request, narrow.secret), 403, "permission_denied")

    assert scope in error["message"]


async def test_a_member_revoking_anothers_key_is_permission_denied(client: httpx.AsyncClient, world: World) -> None:
    alices = await published(client, world, "alice")

    error = refusal(await call(client, JSON, revoke(alices.key_id), world.token("bob")), 403, "permission_denied")

    assert reason(error) == "KEY_ACCESS_DENIED"
    keys = await answer(client, recipients("alice"), world.token("bob"))
    assert [k.key_id for k in keys.keys] == [alices.key_id]


async def test_an_owner_revokes_any_key_of_its_tenant(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    bobs = await published(client, world, "bob")
    clock.advance(30)

    response = await answer(client, revoke(bobs.key_id), world.token("alice"))

    assert response.key.revoked_at.seconds == clock.now
    assert response.log_head.size == 2


async def test_unknown_and_other_tenants_keys_are_not_found_alike(client: httpx.AsyncClient, world: World) -> None:
    carols = await published(client, world, "carol")

    answers = [
        (r.status_code, reason(error_of(r)), error_of(r)["message"].replace(key_id, "K"))
        for key_id in (carols.key_id, "A" * 43)
        if (r := await call(client, JSON, revoke(key_id), world.token("alice")))
    ]

    assert answers == [(404, "KEY_NOT_FOUND", "no key K")] * 2
    still = await answer(client, recipients("carol"), world.token("carol"))
    assert [k.key_id for k in still.keys] == [carols.key_id]


async def test_revoking_a_revoked_key_answers_the_same(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    key = await published(client, world, "bob")
    first = await answer(client, revoke(key.key_id), world.token("bob"))
    clock.advance(60)

    assert await answer(client, revoke(key.key_id), world.token("bob")) == first


# Finding keys


async def test_recipient_keys_are_the_live_keys_of_the_tenants_principals(
    client: httpx.AsyncClient, codec: Codec, world: World, clock: FakeClock
) -> None:
    alices = [await published(client, world, "alice")]
    clock.advance(1)
    alices.append(await published(client, world, "alice", public(p256())))
    bobs = await published(client, world, "bob")
    revoked = await published(client, world, "bob")
    await answer(client, revoke(revoked.key_id), world.token("bob"))

    response = await answer(client, recipients("bob", "alice", "bob"), world.token("bob"), codec)

    assert [k.key_id for k in response.keys] == [alices[0].key_id, alices[1].key_id, bobs.key_id]
    log = await answer(client, key_log(), world.token("bob"))
    assert response.log_head == log.log_head


async def test_other_tenants_principals_have_no_keys_as_unknown_ones(client: httpx.AsyncClient, world: World) -> None:
    await published(client, world, "carol")
    await published(client, world, "alice")

    from_alice = [
        await call(client, JSON, recipients(principal_id), world.token("alice"))
        for principal_id in ("carol", "nobody", "carol")
    ]
    from_carol = await answer(client, recipients("alice"), world.token("carol"))

    assert len({r.content for r in from_alice}) == 1
    assert from_alice[0].json() == {"logHead": {"size": "1", "hash": from_alice[0].json()["logHead"]["hash"]}}
    assert list(from_carol.keys) == []
    assert from_carol.log_head.size == 1  # globex's own log: carol's key only


# The key log


async def test_the_key_log_verifies_as_directory_proto_says(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    keys = [await published(client, world, p) for p in ("alice", "bob", "alice")]
    clock.advance(10)
    await answer(client, revoke(keys[0].key_id), world.token("alice"))

    response = await client.post(f"{SERVICE}/ListKeyLog", json={}, headers=headers(JSON, world.token("bob")))

    body = response.json()
    verified(body["entries"], body["logHead"])
    assert [(e["action"], e["keyId"]) for e in body["entries"]] == [
        ("KEY_LOG_ACTION_PUBLISHED", keys[0].key_id),
        ("KEY_LOG_ACTION_PUBLISHED", keys[1].key_id),
        ("KEY_LOG_ACTION_PUBLISHED", keys[2].key_id),
        ("KEY_LOG_ACTION_REVOKED", keys[0].key_id),
    ]
    later = await client.post(
        f"{SERVICE}/ListKeyLog", json={"sinceIndex": "2"}, headers=headers(JSON, world.token("bob"))
    )
    verified(later.json()["entries"], later.json()["logHead"], (2, body["entries"][1]["hash"]))


async def test_an_empty_log_has_the_zero_hash_head(client: httpx.AsyncClient, codec: Codec, world: World) -> None:
    response = await answer(client, key_log(), world.token("alice"), codec)

    assert list(response.entries) == []
    assert (response.log_head.size, response.log_head.hash) == (0, ZERO_HASH)
    assert response.next_page_token == ""


async def test_the_key_log_is_read_in_pages(client: httpx.AsyncClient, codec: Codec, world: World) -> None:
    for _ in range(5):
        await published(client, world, "bob")
    alice = world.token("alice")

    first = await answer(client, key_log(page_size=2), alice, codec)
    second = await answer(client, key_log(page_size=2, page_token=first.next_page_token), alice, codec)
    third = await answer(client, key_log(page_size=2, page_token=second.next_page_token), alice, codec)

    assert [[e.index for e in page.entries] for page in (first, second, third)] == [[1, 2], [3, 4], [5]]
    assert third.next_page_token == ""
    assert third.log_head.hash == third.entries[-1].hash
    moved = await call(client, codec, key_log(since_index=1, page_token=first.next_page_token), alice)
    assert [v["field"] for v in violations(moved)] == ["pageToken"]
    foreign = await call(client, codec, key_log(page_token=first.next_page_token), world.token("carol"))
    assert [v["field"] for v in violations(foreign)] == ["pageToken"]


async def test_a_since_index_beyond_the_log_answers_the_shorter_head(client: httpx.AsyncClient, world: World) -> None:
    await published(client, world, "alice")

    response = await answer(client, key_log(since_index=7), world.token("alice"))

    assert list(response.entries) == []
    assert response.log_head.size == 1  # below since_index: the client knows the log was rewritten


# The GET form, the audit trail


@pytest.mark.parametrize("request_", [recipients("alice"), key_log()], ids=["get", "log"])
async def test_the_reads_take_the_get_form(
    client: httpx.AsyncClient, codec: Codec, world: World, request_: Message
) -> None:
    await published(client, world, "alice")
    path = PATHS[type(request_)]

    got = await client.get(path, params=query(request_, codec), headers=bearer(world.token("bob")))
    posted = await call(client, codec, request_, world.token("bob"))

    assert got.status_code == 200, got.text
    assert got.headers["cache-control"] == "no-store"
    assert got.content == posted.content


async def test_changes_are_audited_with_principal_token_and_request(client: httpx.AsyncClient, world: World) -> None:
    store = world.platform.store
    before = (await store.audit_head("acme")) or None
    text = public(x25519())
    request_headers = headers(JSON, world.token("bob"), **{"X-Request-Id": "req-key"})
    body = {"publicKeyJwk": text}
    key_id = (await client.post(f"{SERVICE}/PublishKey", json=body, headers=request_headers)).json()["key"]["keyId"]
    await client.post(f"{SERVICE}/RevokeKey", json={"keyId": key_id}, headers=request_headers)

    assert before is not None
    events = [r.exported() for r in await store.audit_records("acme", before.sequence, 100)]
    assert [(e["action"], e["target"], e["actor"]["principal"], e["requestId"]) for e in events] == [
        ("key.published", {"key": key_id, "principal": "bob"}, "bob", "req-key"),
        ("key.revoked", {"key": key_id, "principal": "bob"}, "bob", "req-key"),
    ]


async def test_calls_are_counted_by_their_procedure(platform: Platform, world: World) -> None:
    registry = CollectorRegistry()
    app = create_app(Settings(), platform=platform, telemetry=Telemetry(metrics=Metrics(registry)))
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as measured:
            await answer(measured, publish(public(x25519())), world.token("alice"))
            await call(measured, JSON, revoke("A" * 43), world.token("alice"))
    finally:
        Telemetry().install()  # the store probes report nowhere again

    scrape = Scrape(registry)
    calls = "zkplatform_rpc_calls_total"
    assert scrape.value(calls, procedure="platform.v1.DirectoryService/PublishKey", code="ok") == 1
    assert scrape.value(calls, procedure="platform.v1.DirectoryService/RevokeKey", code="not_found") == 1
