"""DirectoryService through the whole app in process, on the memory store with the development
witness in process: devices published and revoked by their own signed statements, principals
reset, the reads a client verifies its keys with, and the checkpoint of every answer, checked as
a client checks it (the log key's signature, the witness's cosignature, the root of the entries
listed)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import mlkem
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from google.protobuf.message import Message
from prometheus_client import CollectorRegistry

from tests.connect import JSON, Codec, detail, error_of, headers
from tests.rpc.devices import TestDevice, Trust, entry_document
from tests.rpc.test_get_form import bearer, query
from tests.rpc.test_metrics import Scrape
from tests.store.stores import closing, migrated
from tests.world import BASE_URL, PEPPER, FakeClock, World
from zkplatform import devmode
from zkplatform.app import create_app
from zkplatform.config import Settings
from zkplatform.domain.audit import Action, Actor
from zkplatform.domain.key_log import AddDevice, Device
from zkplatform.domain.models import Principal, Role, Scope, Tenant
from zkplatform.domain.witnessing import Witness
from zkplatform.observability.metrics import Metrics
from zkplatform.observability.telemetry import Telemetry
from zkplatform.store import open_store
from zkplatform.store.memory import MemoryStore
from zkplatform.wiring import Platform
from zkplatform_api.platform.v1 import directory_pb2
from zkplatform_tlog.checkpoint import Checkpoint
from zkplatform_tlog.errors import ProofError
from zkplatform_tlog.merkle import leaf_hash, root_hash, verify_consistency
from zkplatform_tlog.note import NoteVerifier, open_note
from zkplatform_tlog.statements import (
    DeviceKeys,
    Entry,
    EntrySignature,
    PrincipalReset,
    b64url,
    b64url_decode,
    parse_entry,
    verify_statement,
)

SERVICE = "/platform.v1.DirectoryService"
PATHS = {
    directory_pb2.PublishDeviceRequest: f"{SERVICE}/PublishDevice",
    directory_pb2.RevokeDeviceRequest: f"{SERVICE}/RevokeDevice",
    directory_pb2.ResetPrincipalRequest: f"{SERVICE}/ResetPrincipal",
    directory_pb2.GetRecipientKeysRequest: f"{SERVICE}/GetRecipientKeys",
    directory_pb2.ListKeyLogRequest: f"{SERVICE}/ListKeyLog",
}
REQUEST_ID = "0b7e4a4e-7d55-4c3c-8c1c-2f8e9f1d6a10"


class Switch:
    """The development witness behind a switch: down, it refuses every connection, as a witness
    whose host is down does; up, it is the witness, with everything it cosigned before."""

    def __init__(self, witness: Witness) -> None:
        self.witness = witness
        self.up = True

    @property
    def name(self) -> str:
        return "the development witness, behind a switch"

    async def add_checkpoint(self, body: bytes) -> tuple[int, bytes, str]:
        if not self.up:
            raise httpx.ConnectError("connection refused")
        return await self.witness.endpoint.add_checkpoint(body)


@pytest.fixture
def switch(clock: FakeClock) -> Switch:
    return Switch(devmode.witness(devmode.log_keys(), clock))


@pytest.fixture
def platform(clock: FakeClock, switch: Switch) -> Platform:
    """The development log key and witness (quorum 1), as `serve --dev` has them."""
    witness = Witness(switch, switch.witness.verifier)
    return Platform.build(MemoryStore(), PEPPER, clock, log_keys=devmode.log_keys(), witnesses=[witness])


@pytest.fixture
async def world(platform: Platform) -> World:
    """The development data set before its demo devices are published: every log starts empty."""
    return await World.seed(platform, keys=False)


@pytest.fixture
async def client(platform: Platform, world: World) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(Settings(), platform=platform)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as client:
        yield client


@pytest.fixture
def trust(switch: Switch) -> Trust:
    """What the development credentials give a client to pin."""
    return Trust(devmode.log_keys().verifiers(), [switch.witness.verifier], 1)


async def call(client: httpx.AsyncClient, request: Message, token: str, codec: Codec = JSON) -> httpx.Response:
    return await client.post(PATHS[type(request)], content=codec.encode(request), headers=headers(codec, token))


# What every test's client pins: the development log key and witness (the switch's witness is it).
TRUST = Trust(devmode.log_keys().verifiers(), [devmode.witness_cosigner().verifier()], 1)


async def answer(
    client: httpx.AsyncClient, request: Message, token: str, codec: Codec = JSON, *, cosigned: bool = True
) -> Any:
    """The answer of a call that must succeed, decoded as its response message, once its checkpoint
    verifies as a client verifies it: the log key's signature, the tenant's log listed from its
    start hashing to its root, and (`cosigned`, for a log that is not empty) the witness's
    cosignature."""
    response = await call(client, request, token, codec)
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    response_class = getattr(directory_pb2, type(request).__name__.removesuffix("Request") + "Response")
    decoded = codec.decode(response.content, response_class)
    note = decoded.checkpoint.note
    tenant_id = note.split("\n", 1)[0].split("/")[1]
    entries = await _listed(client, token)
    size = Checkpoint.parse(note[: note.index("\n\n") + 1]).size
    TRUST.open(note, tenant_id, entries, quorum=1 if cosigned and size else 0)
    return decoded


async def _listed(client: httpx.AsyncClient, token: str) -> list[bytes]:
    """The caller's tenant's log from its start, every page (plain calls: no checkpoint checked)."""
    entries: list[bytes] = []
    page_token = ""
    while True:
        response = await call(client, directory_pb2.ListKeyLogRequest(page_token=page_token), token)
        assert response.status_code == 200, response.text
        page = JSON.decode(response.content, directory_pb2.ListKeyLogResponse)
        entries += [entry.data.encode() for entry in page.entries]
        if not (page_token := page.next_page_token):
            return entries


def refused(response: httpx.Response, status: int, code: str, reason: str) -> dict[str, Any]:
    """The error of a refusal: its HTTP status, code and ErrorInfo reason; its metadata."""
    assert response.status_code == status, response.text
    error = error_of(response)
    assert error["code"] == code
    info = detail(error, "google.rpc.ErrorInfo")
    assert info["reason"] == reason, error
    metadata: dict[str, Any] = info.get("metadata", {})
    return metadata


def violations(response: httpx.Response, reason: str = "FIELD_INVALID") -> list[str]:
    """The fields an invalid_argument answer names."""
    refused(response, 400, "invalid_argument", reason)
    found = detail(error_of(response), "google.rpc.BadRequest")["fieldViolations"]
    return [violation["field"] for violation in found]


async def whole_log(client: httpx.AsyncClient, token: str) -> tuple[list[bytes], str]:
    """The tenant's log from its start, every page, and the last page's checkpoint note."""
    entries: list[bytes] = []
    page_token = ""
    while True:
        page = await answer(client, directory_pb2.ListKeyLogRequest(page_token=page_token), token)
        entries += [entry.data.encode() for entry in page.entries]
        if not (page_token := page.next_page_token):
            return entries, page.checkpoint.note


async def checked(client: httpx.AsyncClient, trust: Trust, token: str, note: str, tenant_id: str = "acme") -> int:
    """The size of an answer's checkpoint, once it verifies against the whole log as listed."""
    entries, _ = await whole_log(client, token)
    return trust.open(note, tenant_id, entries).size


async def first_device(client: httpx.AsyncClient, world: World, principal_id: str, clock: FakeClock) -> TestDevice:
    device = TestDevice()
    (tenant_id,) = [t.tenant_id for t in world.tenants for p in t.principals if p["principalId"] == principal_id]
    await answer(client, device.publish(principal_id, clock.now, tenant_id=tenant_id), world.token(principal_id))
    return device


# Publishing


async def test_a_first_device_is_published_and_its_entry_cosigned(
    client: httpx.AsyncClient, codec: Codec, world: World, clock: FakeClock, trust: Trust
) -> None:
    device = TestDevice()
    request = device.publish("bob", clock.now)

    published = await answer(client, request, world.token("bob"), codec)

    statement = device.keys("acme", "bob", clock.now)
    assert (published.device.device_id, published.device.principal_id) == (statement.device_id, "bob")
    assert (published.device.signing_jwk, published.device.agreement_jwk) == (device.signing_jwk, device.agreement_jwk)
    assert published.device.agreement_key_id == statement.agreement_key_id
    assert published.device.endorser_device_id == ""
    assert (published.device.created_at.seconds, published.device.log_index) == (clock.now, 0)
    assert not published.device.HasField("revoked_at")
    signature = EntrySignature(statement.device_id, b64url_decode(request.signature, 64))
    assert published.entry.index == 0
    assert published.entry.data.encode() == Entry(statement, (signature,)).canonical()
    assert await checked(client, trust, world.token("alice"), published.checkpoint.note) == 1  # it holds the entry


async def test_a_p256_agreement_key_is_published(client: httpx.AsyncClient, world: World, clock: FakeClock) -> None:
    device = TestDevice(curve="P-256")

    published = await answer(client, device.publish("bob", clock.now), world.token("bob"))

    assert json.loads(published.device.agreement_jwk)["crv"] == "P-256"


async def test_an_x_wing_agreement_key_is_published(client: httpx.AsyncClient, world: World, clock: FakeClock) -> None:
    device = TestDevice(curve="X-Wing")

    published = await answer(client, device.publish("bob", clock.now), world.token("bob"))

    assert published.device.agreement_jwk == device.agreement_jwk
    assert (json.loads(device.agreement_jwk)["alg"], len(json.loads(device.agreement_jwk)["pub"])) == ("X-Wing", 1622)


async def test_an_x_wing_device_of_the_longest_ids_is_published(
    client: httpx.AsyncClient, platform: Platform, clock: FakeClock
) -> None:
    """A statement with an X-Wing agreement key, a tenant and a principal of 64 characters and an
    endorser: past the 2048 characters PublishDevice took before X-Wing."""
    tenant_id, principal_id = "t" * 64, "p" * 64
    operator = Actor.operator(clock.now)
    await platform.store.add_tenant(Tenant(tenant_id), operator)
    principal = Principal.new(principal_id, tenant_id, Role.MEMBER)
    await platform.store.add_principal(principal, operator)
    token = (await platform.issuer.issue(principal, 3600)).secret
    first, second = TestDevice(), TestDevice(curve="X-Wing")
    await answer(client, first.publish(principal_id, clock.now, tenant_id=tenant_id), token)
    request = second.publish(principal_id, clock.now, tenant_id=tenant_id, endorser=first)

    published = await answer(client, request, token)

    assert len(request.statement) > 2048
    assert published.device.endorser_device_id == first.device_id


async def test_publishing_the_same_statement_again_answers_the_same(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    request = TestDevice().publish("bob", clock.now)
    first = await answer(client, request, world.token("bob"))
    clock.advance(1800)  # a retry long after: the statement's time is what it was

    again = await answer(client, request, world.token("bob"))

    assert (again.device, again.entry) == (first.device, first.entry)
    assert again.checkpoint.note == first.checkpoint.note.replace(*_cosigned_at(first, again))


def _cosigned_at(first: Any, again: Any) -> tuple[str, str]:
    """The witness's line of each answer: it cosigns the same checkpoint again, later."""
    return first.checkpoint.note.splitlines()[-1], again.checkpoint.note.splitlines()[-1]


async def test_a_second_device_without_an_endorser_is_refused(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    await first_device(client, world, "bob", clock)

    response = await call(client, TestDevice().publish("bob", clock.now), world.token("bob"))

    refused(response, 400, "failed_precondition", "ENDORSEMENT_REQUIRED")


async def test_a_second_device_endorsed_by_a_live_one_is_published(
    client: httpx.AsyncClient, world: World, clock: FakeClock, trust: Trust
) -> None:
    phone = await first_device(client, world, "bob", clock)
    laptop = TestDevice()
    request = laptop.publish("bob", clock.now, endorser=phone)

    published = await answer(client, request, world.token("bob"))

    assert published.device.endorser_device_id == phone.device_id
    entry = parse_entry(published.entry.data)
    assert [s.key_id for s in entry.signatures] == [laptop.device_id, phone.device_id]
    assert verify_statement(phone.signing_jwk, entry.statement, entry.signatures[1].signature)
    assert await checked(client, trust, world.token("bob"), published.checkpoint.note) == 2


async def test_an_endorsement_by_a_device_not_live_or_not_the_principals_is_refused(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    bobs = await first_device(client, world, "bob", clock)
    alices = await first_device(client, world, "alice", clock)
    retired = TestDevice()
    await answer(client, retired.publish("bob", clock.now, endorser=bobs), world.token("bob"))
    await answer(client, bobs.revoke(retired, "bob", clock.now), world.token("bob"))

    by_alices = await call(client, TestDevice().publish("bob", clock.now, endorser=alices), world.token("bob"))
    by_retired = await call(client, TestDevice().publish("bob", clock.now, endorser=retired), world.token("bob"))
    by_unknown = await call(client, TestDevice().publish("bob", clock.now, endorser=TestDevice()), world.token("bob"))

    assert refused(by_alices, 400, "failed_precondition", "ENDORSER_NOT_LIVE") == {"deviceId": alices.device_id}
    assert refused(by_retired, 400, "failed_precondition", "ENDORSER_NOT_LIVE") == {"deviceId": retired.device_id}
    assert refused(by_unknown, 400, "failed_precondition", "ENDORSER_NOT_LIVE")


async def test_signatures_that_do_not_verify_are_refused_naming_their_field(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    phone = await first_device(client, world, "bob", clock)
    laptop, stranger = TestDevice(), TestDevice()
    statement = laptop.keys("acme", "bob", clock.now, phone.device_id)
    text = statement.canonical().decode()
    good = directory_pb2.PublishDeviceRequest(
        statement=text, signature=laptop.sign(statement), endorsement=phone.sign(statement)
    )

    possession = await call(client, _with(good, signature=stranger.sign(statement)), world.token("bob"))
    endorsement = await call(client, _with(good, endorsement=stranger.sign(statement)), world.token("bob"))
    missing = await call(client, _with(good, endorsement=""), world.token("bob"))
    first = laptop.keys("acme", "bob", clock.now)
    needless = directory_pb2.PublishDeviceRequest(
        statement=first.canonical().decode(), signature=laptop.sign(first), endorsement=phone.sign(first)
    )

    assert violations(possession, "SIGNATURE_INVALID") == ["signature"]
    assert violations(endorsement, "SIGNATURE_INVALID") == ["endorsement"]
    assert violations(missing, "SIGNATURE_INVALID") == ["endorsement"]
    assert violations(await call(client, needless, world.token("bob"))) == ["endorsement"]
    assert (await answer(client, good, world.token("bob"))).device.device_id == laptop.device_id


def _with(message: Message, **fields: str | int) -> Any:
    copy = type(message)()
    copy.CopyFrom(message)
    for name, value in fields.items():
        setattr(copy, name, value)
    return copy


@pytest.mark.parametrize(
    ("principal_id", "tenant_id", "says"),
    [("alice", "acme", "principalId must be the caller's"), ("bob", "globex", "tenantId must be the caller's")],
)
async def test_a_statement_of_another_principal_or_tenant_is_refused(
    client: httpx.AsyncClient, world: World, clock: FakeClock, principal_id: str, tenant_id: str, says: str
) -> None:
    response = await call(
        client, TestDevice().publish(principal_id, clock.now, tenant_id=tenant_id), world.token("bob")
    )

    assert violations(response) == ["statement"]
    assert says in response.json()["message"]


@pytest.mark.parametrize(("skew", "taken"), [(-601, False), (-600, True), (600, True), (601, False)])
async def test_a_statement_is_taken_within_ten_minutes_of_the_servers_time(
    client: httpx.AsyncClient, world: World, clock: FakeClock, skew: int, taken: bool
) -> None:
    response = await call(client, TestDevice().publish("bob", clock.now + skew), world.token("bob"))

    if taken:
        assert response.status_code == 200, response.text
    else:
        assert violations(response) == ["statement"]
        assert "within 10 minutes" in response.json()["message"]


@pytest.mark.parametrize(
    ("statement", "says"),
    [
        ('{"format":1}', "tenantId must be an id"),
        ("not json", "not JSON"),
        ("{ }", "not in canonical form"),
        ('{"format":2}', "format 2 is unknown"),
    ],
)
async def test_a_statement_that_is_not_one_is_refused_saying_why(
    client: httpx.AsyncClient, world: World, statement: str, says: str
) -> None:
    request = directory_pb2.PublishDeviceRequest(statement=statement, signature="A" * 86)

    response = await call(client, request, world.token("bob"))

    assert violations(response) == ["statement"]
    assert says in response.json()["message"]


async def test_a_revocation_is_not_a_publication(client: httpx.AsyncClient, world: World, clock: FakeClock) -> None:
    phone = await first_device(client, world, "bob", clock)
    revocation = phone.revoke(phone, "bob", clock.now)

    response = await call(
        client,
        directory_pb2.PublishDeviceRequest(statement=revocation.statement, signature="A" * 86),
        world.token("bob"),
    )

    assert violations(response) == ["statement"]
    assert "must be a DeviceKeys statement" in response.json()["message"]


async def test_keys_of_another_device_are_refused(client: httpx.AsyncClient, world: World, clock: FakeClock) -> None:
    alices = await first_device(client, world, "alice", clock)
    bobs = await first_device(client, world, "bob", clock)
    copied = TestDevice(agreement_jwk=alices.agreement_jwk)

    same_agreement = await call(client, copied.publish("bob", clock.now, endorser=bobs), world.token("bob"))
    same_signing = await call(client, alices.publish("bob", clock.now, endorser=bobs), world.token("bob"))

    refused(same_agreement, 409, "already_exists", "KEY_EXISTS")
    refused(same_signing, 409, "already_exists", "KEY_EXISTS")


# Keys no device may publish (docs/key-transparency.md, "Canonical JSON"): Curve25519's field prime,
# X25519's points of small order (RFC 7748 section 6.1) and Ed25519's (libsodium's list).
P25519 = 2**255 - 19
X25519_ORDER_8 = (
    325606250916557431795983626356110631294008115727848805560023387167927233504,
    39382357235489614581723060781553021112529911719440698176882885853963445705823,
)
ED25519_ORDER_8_Y = 2707385501144840649318225287225658788936804267575313519463743609750303402022
BIT_255 = 1 << 255
DEGENERATE_AGREEMENT = {
    "u = 0": 0,
    "u = 1": 1,
    "order 8": X25519_ORDER_8[0],
    "order 8, the other": X25519_ORDER_8[1],
    "u = p - 1": P25519 - 1,
    "u = p": P25519,
    "u = p + 1": P25519 + 1,
    "u = 2^255 - 1": 2**255 - 1,
    "u = 0, bit 255 set": BIT_255,
}
DEGENERATE_SIGNING = {
    "identity": 1,
    "identity, negative zero": 1 | BIT_255,
    "order 2": P25519 - 1,
    "order 4": 0,
    "order 4, negated": BIT_255,
    "order 8": ED25519_ORDER_8_Y,
    "order 8, negated": ED25519_ORDER_8_Y | BIT_255,
    "order 8, another": P25519 - ED25519_ORDER_8_Y,
    "y = p": P25519,
    "y = p + 1": P25519 + 1,
    "y = p + 3": P25519 + 3,
}


def okp_jwk(crv: str, encoded: int) -> str:
    """The JWK text of the 32 little-endian bytes of `encoded`, canonical or not."""
    return json.dumps({"crv": crv, "kty": "OKP", "x": b64url(encoded.to_bytes(32, "little"))}, separators=(",", ":"))


def with_keys(
    device: TestDevice, principal_id: str, now: int, *, signing_jwk: str = "", agreement_jwk: str = ""
) -> Any:
    """A first device's publication with these key texts in place of the device's, signed by it."""
    statement = DeviceKeys(
        "acme", principal_id, signing_jwk or device.signing_jwk, agreement_jwk or device.agreement_jwk, now, ""
    )
    return directory_pb2.PublishDeviceRequest(
        statement=statement.canonical().decode(), signature=device.sign(statement)
    )


def identitys_signature() -> str:
    """What the identity, as an Ed25519 key A, verifies for any statement: s*B = R + k*A holds for
    R = s*B whatever k (R a key pair's public key, s its scalar: RFC 8032, 5.1.5)."""
    seed = bytes(range(32))
    scalar = bytearray(hashlib.sha512(seed).digest()[:32])
    scalar[0] &= 248
    scalar[31] = (scalar[31] & 127) | 64
    s = int.from_bytes(scalar, "little") % (2**252 + 27742317777372353535851937790883648493)
    r = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes_raw()
    return b64url(r + s.to_bytes(32, "little"))


@pytest.mark.parametrize("u", DEGENERATE_AGREEMENT.values(), ids=DEGENERATE_AGREEMENT.keys())
async def test_an_x25519_key_of_small_order_or_not_canonical_is_refused(
    client: httpx.AsyncClient, world: World, clock: FakeClock, u: int
) -> None:
    request = with_keys(TestDevice(), "bob", clock.now, agreement_jwk=okp_jwk("X25519", u))

    response = await call(client, request, world.token("bob"))

    assert violations(response) == ["statement"]
    assert "agreementKey: an X25519 key must" in response.json()["message"]
    assert await _listed(client, world.token("bob")) == []


@pytest.mark.parametrize("y", DEGENERATE_SIGNING.values(), ids=DEGENERATE_SIGNING.keys())
async def test_an_ed25519_key_of_small_order_or_not_canonical_is_refused(
    client: httpx.AsyncClient, world: World, clock: FakeClock, y: int
) -> None:
    request = with_keys(TestDevice(), "bob", clock.now, signing_jwk=okp_jwk("Ed25519", y))
    if y == 1:  # a possession signature that verifies: the identity's, which anyone makes
        request.signature = identitys_signature()

    response = await call(client, request, world.token("bob"))

    assert violations(response) == ["statement"]
    assert "signingKey: an Ed25519 key must" in response.json()["message"]
    assert await _listed(client, world.token("bob")) == []


P256 = 2**256 - 2**224 + 2**192 + 2**96 - 1
# The point of P-256 of the smallest x (5): y^2 = x^3 - 3x + b, a square root as p = 3 mod 4 gives it.
P256_5 = pow(5**3 - 3 * 5 + 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B, (P256 + 1) // 4, P256)


@pytest.mark.parametrize(
    ("x", "y", "taken"),
    [(5, P256_5, True), (0, 0, False), (5, P256_5 + 1, False), (5 + P256, P256_5, False)],
    ids=["the point", "zero", "off the curve", "x + p"],
)
async def test_a_p256_key_off_the_curve_or_not_canonical_is_refused(
    client: httpx.AsyncClient, world: World, clock: FakeClock, x: int, y: int, *, taken: bool
) -> None:
    coordinates = {"x": b64url(x.to_bytes(32, "big")), "y": b64url(y.to_bytes(32, "big"))}
    agreement_jwk = json.dumps({"crv": "P-256", "kty": "EC", **coordinates}, separators=(",", ":"))

    response = await call(
        client, with_keys(TestDevice(), "bob", clock.now, agreement_jwk=agreement_jwk), world.token("bob")
    )

    if taken:
        assert response.status_code == 200, response.text
    else:
        assert violations(response) == ["statement"]
        assert "agreementKey: the key is not a point of P-256" in response.json()["message"]


def xwing_jwk(mlkem_part: bytes, x25519_part: bytes) -> str:
    return json.dumps({"alg": "X-Wing", "kty": "AKP", "pub": b64url(mlkem_part + x25519_part)}, separators=(",", ":"))


def _mlkem768_part() -> bytes:
    return mlkem.MLKEM768PrivateKey.generate().public_key().public_bytes_raw()


def _x25519_part() -> bytes:
    return X25519PrivateKey.generate().public_key().public_bytes_raw()


# ML-KEM-768's encapsulation key is 384 * 3 bytes of 12-bit coefficients, each below q = 3329,
# then a 32-byte seed: FIPS 203 section 7.2 refuses a coefficient of q or more.
MLKEM_REFUSED = "agreementKey: the X-Wing key's ML-KEM-768 part is no encapsulation key"
X25519_REFUSED = "agreementKey: the X-Wing key's X25519 part: an X25519 key must"
DEGENERATE_XWING = {
    "a coefficient of q": (
        lambda: xwing_jwk(bytes([0x01, 0x0D]) + _mlkem768_part()[2:], _x25519_part()),
        MLKEM_REFUSED,
    ),
    "the last coefficient 4095": (
        lambda: xwing_jwk(_mlkem768_part()[:1150] + bytes([0xFF, 0xFF]) + _mlkem768_part()[1152:], _x25519_part()),
        MLKEM_REFUSED,
    ),
    "X25519 part u = 0": (lambda: xwing_jwk(_mlkem768_part(), bytes(32)), X25519_REFUSED),
    "X25519 part of order 8": (
        lambda: xwing_jwk(_mlkem768_part(), X25519_ORDER_8[0].to_bytes(32, "little")),
        X25519_REFUSED,
    ),
    "X25519 part u = p": (lambda: xwing_jwk(_mlkem768_part(), P25519.to_bytes(32, "little")), X25519_REFUSED),
    "a byte short": (lambda: xwing_jwk(_mlkem768_part()[1:], _x25519_part()), "agreementKey: not 1216 bytes"),
}


@pytest.mark.parametrize(("make", "why"), DEGENERATE_XWING.values(), ids=DEGENERATE_XWING.keys())
async def test_an_x_wing_key_that_is_not_one_is_refused(
    client: httpx.AsyncClient, world: World, clock: FakeClock, make: Any, why: str
) -> None:
    request = with_keys(TestDevice(), "bob", clock.now, agreement_jwk=make())

    response = await call(client, request, world.token("bob"))

    assert violations(response) == ["statement"]
    assert why in response.json()["message"]
    assert await _listed(client, world.token("bob")) == []


async def test_one_key_is_not_published_under_a_second_id(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    alices = await first_device(client, world, "alice", clock)
    u = int.from_bytes(b64url_decode(json.loads(alices.agreement_jwk)["x"], 32), "little")
    # The same key for every X25519 implementation (RFC 7748 section 5 masks bit 255), another id.
    request = with_keys(TestDevice(), "bob", clock.now, agreement_jwk=okp_jwk("X25519", u | BIT_255))

    response = await call(client, request, world.token("bob"))

    assert violations(response) == ["statement"]
    assert "an X25519 key must be canonical" in response.json()["message"]
    assert len(await _listed(client, world.token("bob"))) == 1


async def test_a_revoked_devices_keys_are_not_published_again(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    phone = await first_device(client, world, "bob", clock)
    lost = TestDevice()
    await answer(client, lost.publish("bob", clock.now, endorser=phone), world.token("bob"))
    await answer(client, phone.revoke(lost, "bob", clock.now), world.token("bob"))
    clock.advance(1)

    response = await call(client, lost.publish("bob", clock.now, endorser=phone), world.token("bob"))

    refused(response, 400, "failed_precondition", "KEY_REVOKED")


async def test_a_publication_retried_after_its_device_was_revoked_answers_it_revoked(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    """Why PublishDevice needs no request id: its statement is the request's identity, so a
    retry, however late and whatever happened since, publishes nothing again."""
    phone = await first_device(client, world, "bob", clock)
    lost = TestDevice()
    publication = lost.publish("bob", clock.now, endorser=phone)
    first = await answer(client, publication, world.token("bob"))
    await answer(client, phone.revoke(lost, "bob", clock.now), world.token("bob"))
    logged = await _listed(client, world.token("bob"))
    clock.advance(1800)

    again = await answer(client, publication, world.token("bob"))

    assert (again.device.device_id, again.entry) == (first.device.device_id, first.entry)
    assert again.device.HasField("revoked_at")
    assert await _listed(client, world.token("bob")) == logged


# Revoking


async def test_a_live_device_revokes_another_and_itself(
    client: httpx.AsyncClient, world: World, clock: FakeClock, trust: Trust
) -> None:
    phone = await first_device(client, world, "bob", clock)
    laptop = TestDevice()
    await answer(client, laptop.publish("bob", clock.now, endorser=phone), world.token("bob"))
    clock.advance(5)

    revoked = await answer(client, phone.revoke(laptop, "bob", clock.now), world.token("bob"))
    itself = await answer(client, phone.revoke(phone, "bob", clock.now), world.token("bob"))

    assert (revoked.device.device_id, revoked.device.revoked_at.seconds) == (laptop.device_id, clock.now)
    assert revoked.entry.index == 2
    assert entry_document(revoked.entry)["signatures"] == [
        {"keyId": phone.device_id, "signature": phone.revoke(laptop, "bob", clock.now).signature}
    ]
    assert (itself.device.device_id, itself.entry.index) == (phone.device_id, 3)
    assert await checked(client, trust, world.token("bob"), itself.checkpoint.note) == 4
    keys = await answer(client, directory_pb2.GetRecipientKeysRequest(principal_ids=["bob"]), world.token("alice"))
    assert list(keys.devices) == []


async def test_revoking_a_revoked_device_answers_it_as_it_was_revoked(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    phone = await first_device(client, world, "bob", clock)
    laptop = TestDevice()
    await answer(client, laptop.publish("bob", clock.now, endorser=phone), world.token("bob"))
    first = await answer(client, phone.revoke(laptop, "bob", clock.now), world.token("bob"))
    clock.advance(1800)

    again = await answer(client, phone.revoke(laptop, "bob", clock.now), world.token("bob"))

    assert (again.device, again.entry) == (first.device, first.entry)


async def test_a_revocation_signed_by_a_revoked_device_is_refused(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    phone = await first_device(client, world, "bob", clock)
    laptop, tablet = TestDevice(), TestDevice()
    for device in (laptop, tablet):
        await answer(client, device.publish("bob", clock.now, endorser=phone), world.token("bob"))
    await answer(client, phone.revoke(laptop, "bob", clock.now), world.token("bob"))

    response = await call(client, laptop.revoke(tablet, "bob", clock.now), world.token("bob"))

    assert refused(response, 400, "failed_precondition", "REVOKER_NOT_LIVE") == {"deviceId": laptop.device_id}


async def test_a_revocation_of_a_device_not_the_callers_is_not_found(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    alices = await first_device(client, world, "alice", clock)
    bobs = await first_device(client, world, "bob", clock)

    of_alices = await call(client, bobs.revoke(alices, "bob", clock.now), world.token("bob"))
    unknown = await call(client, bobs.revoke(TestDevice(), "bob", clock.now), world.token("bob"))
    signed_badly = _with(bobs.revoke(bobs, "bob", clock.now), signature=alices.revoke(bobs, "bob", clock.now).signature)

    refused(of_alices, 404, "not_found", "KEY_NOT_FOUND")
    refused(unknown, 404, "not_found", "KEY_NOT_FOUND")
    assert violations(await call(client, signed_badly, world.token("bob")), "SIGNATURE_INVALID") == ["signature"]


# Resetting


async def test_an_owner_resets_a_principal_who_then_publishes_a_first_device(
    client: httpx.AsyncClient, world: World, clock: FakeClock, trust: Trust
) -> None:
    phone = await first_device(client, world, "bob", clock)
    clock.advance(7)

    reset = await answer(client, directory_pb2.ResetPrincipalRequest(principal_id="bob"), world.token("alice"))

    entry = parse_entry(reset.entry.data)
    assert entry.statement == PrincipalReset("acme", "bob", clock.now)
    (log_key,) = devmode.log_keys().verifiers()
    assert [s.key_id for s in entry.signatures] == [log_key.key_id.hex()]
    assert log_key.verify(entry.statement.canonical().decode(), entry.signatures[0].signature)
    assert await checked(client, trust, world.token("bob"), reset.checkpoint.note) == 2
    keys = await answer(client, directory_pb2.GetRecipientKeysRequest(principal_ids=["bob"]), world.token("bob"))
    assert list(keys.devices) == []
    revoked = await call(client, phone.revoke(phone, "bob", clock.now), world.token("bob"))
    assert revoked.status_code == 200  # revoked by the reset: answered as it is
    assert revoked.json()["entry"]["index"] == "1"
    again = await answer(client, TestDevice().publish("bob", clock.now), world.token("bob"))
    assert again.device.log_index == 2


async def test_only_owners_and_admins_reset_principals_of_their_tenant(client: httpx.AsyncClient, world: World) -> None:
    by_member = await call(client, directory_pb2.ResetPrincipalRequest(principal_id="alice"), world.token("bob"))
    of_globex = await call(client, directory_pb2.ResetPrincipalRequest(principal_id="carol"), world.token("alice"))
    unknown = await call(client, directory_pb2.ResetPrincipalRequest(principal_id="zed"), world.token("alice"))

    refused(by_member, 403, "permission_denied", "KEY_ACCESS_DENIED")
    refused(of_globex, 404, "not_found", "PRINCIPAL_NOT_FOUND")
    refused(unknown, 404, "not_found", "PRINCIPAL_NOT_FOUND")
    log = await answer(client, directory_pb2.ListKeyLogRequest(), world.token("alice"))
    assert list(log.entries) == []


async def test_a_reset_repeated_with_its_request_id_answers_its_entry(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    request = directory_pb2.ResetPrincipalRequest(principal_id="bob", request_id=REQUEST_ID)
    first = await answer(client, request, world.token("alice"))
    clock.advance(60)
    await answer(client, directory_pb2.ResetPrincipalRequest(principal_id="bob"), world.token("alice"))

    again = await answer(client, _with(request, request_id=REQUEST_ID.upper()), world.token("alice"))
    other = await call(client, _with(request, principal_id="alice"), world.token("alice"))

    assert again.entry == first.entry
    assert violations(other, "REQUEST_ID_REUSED") == ["requestId"]


# Reading


async def test_recipient_keys_are_the_live_devices_of_the_tenants_principals(
    client: httpx.AsyncClient, world: World, clock: FakeClock, trust: Trust
) -> None:
    bobs = await first_device(client, world, "bob", clock)
    alices = await first_device(client, world, "alice", clock)
    await first_device(client, world, "carol", clock)
    second = TestDevice()
    await answer(client, second.publish("alice", clock.now, endorser=alices), world.token("alice"))

    found = await answer(
        client,
        directory_pb2.GetRecipientKeysRequest(principal_ids=["bob", "alice", "carol", "zed", "bob"]),
        world.token("bob"),
    )

    assert [(d.principal_id, d.device_id) for d in found.devices] == [
        ("alice", alices.device_id),
        ("alice", second.device_id),
        ("bob", bobs.device_id),  # carol is of globex: as unknown as zed
    ]
    assert await checked(client, trust, world.token("bob"), found.checkpoint.note) == 3


async def test_recipient_keys_come_a_page_at_a_time(
    client: httpx.AsyncClient, platform: Platform, world: World, clock: FakeClock
) -> None:
    many = 1001 + 7
    await _devices_of(platform, "bob", many, clock.now)
    assert platform.witness_pusher is not None
    await platform.witness_pusher.push("acme")
    bob = world.token("bob")

    default = await answer(client, directory_pb2.GetRecipientKeysRequest(principal_ids=["bob"]), bob)
    largest = await answer(client, directory_pb2.GetRecipientKeysRequest(principal_ids=["bob"], page_size=5000), bob)
    pages = [await answer(client, directory_pb2.GetRecipientKeysRequest(principal_ids=["bob"], page_size=400), bob)]
    while pages[-1].next_page_token:
        request = directory_pb2.GetRecipientKeysRequest(
            principal_ids=["bob"], page_size=400, page_token=pages[-1].next_page_token
        )
        pages.append(await answer(client, request, bob))
    other = directory_pb2.GetRecipientKeysRequest(principal_ids=["bob", "alice"], page_token=default.next_page_token)

    assert (len(default.devices), len(largest.devices)) == (100, 1000)
    assert default.next_page_token
    assert largest.next_page_token
    assert [len(page.devices) for page in pages] == [400, 400, 208]
    assert [d.log_index for page in pages for d in page.devices] == list(range(many))
    assert violations(await call(client, other, bob), "PAGE_TOKEN_INVALID") == ["pageToken"]


async def _devices_of(platform: Platform, principal_id: str, count: int, now: int) -> None:
    """`count` devices of the principal appended straight to the store (through the API, a thousand
    publications would take the test's time): the first, then each endorsed by it."""
    store = platform.store
    first = TestDevice()
    for index in range(count):
        device = first if index == 0 else TestDevice()
        statement = device.keys("acme", principal_id, now, "" if index == 0 else first.device_id)
        signatures = [EntrySignature(statement.device_id, b64url_decode(device.sign(statement), 64))]
        if index:
            signatures.append(EntrySignature(first.device_id, b64url_decode(first.sign(statement), 64)))
        appended = await store.append_key_log(
            "acme",
            index,
            Entry(statement, tuple(signatures)).canonical(),
            change=AddDevice(_device(statement, index)),
            event=(Action.DEVICE_PUBLISHED, {"principal": principal_id, "device": statement.device_id}),
            actor=Actor.operator(now),
        )
        assert appended == index + 1


def _device(statement: DeviceKeys, index: int) -> Device:
    return Device(
        statement.tenant_id,
        statement.principal_id,
        statement.device_id,
        statement.signing_jwk,
        statement.agreement_key_id,
        statement.agreement_jwk,
        statement.endorser,
        statement.created,
        index,
    )


async def test_the_key_log_proves_every_checkpoint_consistent_with_every_earlier_size(
    client: httpx.AsyncClient, codec: Codec, world: World, clock: FakeClock, trust: Trust
) -> None:
    """Between any two sizes the log had: at each size it grows to, a listing from every earlier
    size answers the entries since and a consistency proof that verifies with zkplatform_tlog."""
    phone = await first_device(client, world, "bob", clock)
    for size in range(1, 8):
        if size > 1:
            await answer(client, TestDevice().publish("bob", clock.now, endorser=phone), world.token("bob"))
        entries, note = await whole_log(client, world.token("alice"))
        assert trust.open(note, "acme", entries).size == size
        hashes = [leaf_hash(data) for data in entries]
        for start in range(size + 1):
            request = directory_pb2.ListKeyLogRequest(start_index=start)
            page = await answer(client, request, world.token("alice"), codec)
            assert [entry.index for entry in page.entries] == list(range(start, size))
            assert [entry.data.encode() for entry in page.entries] == entries[start:]
            new = trust.open(page.checkpoint.note, "acme", entries)
            proof = list(page.consistency_proof)
            verify_consistency(start, new.size, root_hash(hashes[:start]), new.root_hash, proof)
            if 0 < start < size:  # a proof from another tree does not verify: the check can fail
                with pytest.raises(ProofError):
                    verify_consistency(start, new.size, root_hash(hashes[1 : start + 1]), new.root_hash, proof)
    beyond = await answer(client, directory_pb2.ListKeyLogRequest(start_index=9), world.token("alice"), codec)
    assert (list(beyond.entries), list(beyond.consistency_proof)) == ([], [])
    assert trust.open(beyond.checkpoint.note, "acme", entries).size == 7  # below 9: the client sees a rewrite


async def test_the_key_log_is_read_in_pages_bound_to_their_start(
    client: httpx.AsyncClient, codec: Codec, world: World, clock: FakeClock
) -> None:
    phone = await first_device(client, world, "bob", clock)
    for _ in range(5):
        await answer(client, TestDevice().publish("bob", clock.now, endorser=phone), world.token("bob"))
    alice = world.token("alice")

    first = await answer(client, directory_pb2.ListKeyLogRequest(start_index=1, page_size=2), alice, codec)
    request = directory_pb2.ListKeyLogRequest(start_index=1, page_size=2, page_token=first.next_page_token)
    second = await answer(client, request, alice, codec)
    third = await answer(client, _with(request, page_token=second.next_page_token), alice, codec)

    assert [[e.index for e in page.entries] for page in (first, second, third)] == [[1, 2], [3, 4], [5]]
    assert (first.next_page_token != "", second.next_page_token != "", third.next_page_token) == (True, True, "")
    moved = _with(request, start_index=0)
    assert violations(await call(client, moved, alice, codec), "PAGE_TOKEN_INVALID") == ["pageToken"]
    foreign = await call(client, request, world.token("carol"), codec)
    assert violations(foreign, "PAGE_TOKEN_INVALID") == ["pageToken"]


async def test_an_empty_log_has_the_empty_trees_checkpoint(
    client: httpx.AsyncClient, world: World, trust: Trust
) -> None:
    response = await answer(client, directory_pb2.ListKeyLogRequest(), world.token("alice"))

    opened = open_note(response.checkpoint.note, list(trust.log_keys))
    assert Checkpoint.parse(opened.text).size == 0
    assert (list(response.entries), response.next_page_token) == ([], "")


# The witness


async def test_while_the_witness_is_down_the_checkpoint_stays_at_what_it_cosigned(
    client: httpx.AsyncClient, platform: Platform, world: World, clock: FakeClock, switch: Switch, trust: Trust
) -> None:
    phone = await first_device(client, world, "bob", clock)
    switch.up = False
    laptop = TestDevice()

    published = await answer(client, laptop.publish("bob", clock.now, endorser=phone), world.token("bob"))
    keys = await answer(client, directory_pb2.GetRecipientKeysRequest(principal_ids=["bob"]), world.token("alice"))
    log = await answer(client, directory_pb2.ListKeyLogRequest(), world.token("alice"))

    assert published.entry.index == 1
    assert trust.open(published.checkpoint.note, "acme", [e.data.encode() for e in log.entries]).size == 1
    assert [d.device_id for d in keys.devices] == [phone.device_id]
    assert [e.index for e in log.entries] == [0]
    switch.up = True
    assert platform.witness_pusher is not None
    await platform.witness_pusher.push("acme")  # the pusher's next round
    later = await answer(client, directory_pb2.GetRecipientKeysRequest(principal_ids=["bob"]), world.token("alice"))
    assert [d.device_id for d in later.devices] == [phone.device_id, laptop.device_id]
    assert await checked(client, trust, world.token("bob"), later.checkpoint.note) == 2


async def test_without_witnesses_the_checkpoint_is_the_log_as_signed(clock: FakeClock) -> None:
    platform = Platform.build(MemoryStore(), PEPPER, clock, log_keys=devmode.log_keys())
    world = await World.seed(platform, keys=False)
    app = create_app(Settings(), platform=platform)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as client:
        published = await answer(client, TestDevice().publish("bob", clock.now), world.token("bob"), cosigned=False)

    opened = open_note(published.checkpoint.note, list(devmode.log_keys().verifiers()))
    assert [s.name for s in opened.verified] == ["zkplatform.dev"]
    assert opened.unverified == ()
    assert Checkpoint.parse(opened.text).size == 1


async def test_a_checkpoint_signed_by_another_key_does_not_open(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    """What a client that pinned another log key makes of the answers: nothing."""
    published = await answer(client, TestDevice().publish("bob", clock.now), world.token("bob"))
    stranger = NoteVerifier.from_vkey(Platform.build(MemoryStore(), PEPPER).directory.checkpoints.keys.vkeys()[0])

    with pytest.raises(ValueError, match="no known key"):
        open_note(published.checkpoint.note, [stranger])


# Checks common to the service


async def test_a_token_without_the_scope_is_denied_before_anything_is_looked_at(
    client: httpx.AsyncClient, platform: Platform, world: World
) -> None:
    principal = await platform.store.get_principal("alice")
    assert principal is not None
    reader = (await platform.issuer.issue(principal, 600, [Scope.DIRECTORY_KEYS_READ])).secret
    publisher = (await platform.issuer.issue(principal, 600, [Scope.DIRECTORY_KEYS_PUBLISH])).secret

    for request, token, scope in (
        (directory_pb2.PublishDeviceRequest(statement="{}", signature="A" * 86), reader, "directory.keys.publish"),
        (directory_pb2.RevokeDeviceRequest(statement="{}", signature="A" * 86), reader, "directory.keys.publish"),
        (directory_pb2.ResetPrincipalRequest(principal_id="zed"), reader, "directory.keys.publish"),
        (
            directory_pb2.GetRecipientKeysRequest(principal_ids=["bob"], page_token="x"),
            publisher,
            "directory.keys.read",
        ),
        (directory_pb2.ListKeyLogRequest(page_token="x"), publisher, "directory.keys.read"),
    ):
        response = await call(client, request, token)
        assert refused(response, 403, "permission_denied", "SCOPE_MISSING") == {"requiredScope": scope}
        assert response.headers["cache-control"] == "no-store"


@pytest.mark.parametrize(
    "request_",
    [directory_pb2.GetRecipientKeysRequest(principal_ids=["alice"]), directory_pb2.ListKeyLogRequest()],
    ids=["recipients", "log"],
)
async def test_the_reads_take_the_get_form(
    client: httpx.AsyncClient, codec: Codec, world: World, clock: FakeClock, request_: Message
) -> None:
    await first_device(client, world, "alice", clock)

    got = await client.get(PATHS[type(request_)], params=query(request_, codec), headers=bearer(world.token("bob")))
    posted = await call(client, request_, world.token("bob"), codec)

    assert got.status_code == 200, got.text
    assert got.headers["cache-control"] == "no-store"
    assert got.content == posted.content


async def test_changes_are_audited_with_principal_token_and_request(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    store = world.platform.store
    before = await store.audit_head("acme")
    assert before is not None
    request_headers = headers(JSON, world.token("bob"), **{"X-Request-Id": "req-key"})
    phone = TestDevice()
    for request in (phone.publish("bob", clock.now), phone.revoke(phone, "bob", clock.now)):
        response = await client.post(PATHS[type(request)], content=JSON.encode(request), headers=request_headers)
        assert response.status_code == 200, response.text
    await answer(client, directory_pb2.ResetPrincipalRequest(principal_id="bob"), world.token("alice"))

    events = [r.exported() for r in await store.audit_records("acme", before.sequence, 100)]
    assert [(e["action"], e["target"], e["actor"].get("principal")) for e in events] == [
        ("device.published", {"device": phone.device_id, "principal": "bob"}, "bob"),
        ("device.revoked", {"device": phone.device_id, "principal": "bob"}, "bob"),
        ("principal.reset", {"principal": "bob"}, "alice"),
    ]
    assert [e["requestId"] for e in events[:2]] == ["req-key", "req-key"]


async def test_calls_are_counted_by_their_procedure(platform: Platform, world: World, clock: FakeClock) -> None:
    registry = CollectorRegistry()
    app = create_app(Settings(), platform=platform, telemetry=Telemetry(metrics=Metrics(registry)))
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as measured:
            phone = await first_device(measured, world, "alice", clock)
            await call(measured, phone.revoke(TestDevice(), "alice", clock.now), world.token("alice"))
    finally:
        Telemetry().install()  # the store probes report nowhere again

    scrape = Scrape(registry)
    calls = "zkplatform_rpc_calls_total"
    assert scrape.value(calls, procedure="platform.v1.DirectoryService/PublishDevice", code="ok") == 1
    assert scrape.value(calls, procedure="platform.v1.DirectoryService/RevokeDevice", code="not_found") == 1


# Concurrent changes


async def test_concurrent_first_devices_of_one_principal_are_decided_one_after_the_other(
    tmp_path: Path, clock: FakeClock
) -> None:
    """On SQLite, whose calls run in threads and interleave: of eight first devices of bob published
    at once, the log takes one, and every other is decided again against the log that holds it
    (ENDORSEMENT_REQUIRED), never appended beside it."""
    url = f"sqlite:///{tmp_path}/zk.db"
    await migrated(url)
    async with closing(open_store(url)) as store:
        keys = devmode.log_keys()
        platform = Platform.build(store, PEPPER, clock, log_keys=keys, witnesses=[devmode.witness(keys, clock)])
        world = await World.seed(platform, keys=False)
        app = create_app(Settings(), platform=platform)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as client:
            requests = [TestDevice().publish("bob", clock.now) for _ in range(8)]
            answers = await asyncio.gather(*(call(client, request, world.token("bob")) for request in requests))
            log = await answer(client, directory_pb2.ListKeyLogRequest(), world.token("alice"))

    assert sorted(response.status_code for response in answers) == [200] + [400] * 7
    refusals = [error_of(response) for response in answers if response.status_code == 400]
    assert {detail(error, "google.rpc.ErrorInfo")["reason"] for error in refusals} == {"ENDORSEMENT_REQUIRED"}
    assert [entry.index for entry in log.entries] == [0]
