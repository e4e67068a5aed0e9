"""The error table of docs/api.md, row by row: every RPC answering every error it can, through the
whole app in process, over the Connect protocol and gRPC-Web (tests/e2e/test_grpc.py does gRPC).

Each answer must carry exactly one google.rpc.ErrorInfo, in the domain `zkplatform.dev`, with the
row's reason (a value of the generated ErrorReason enum) and metadata keys; a BadRequest when it is
`invalid_argument`, a RetryInfo when it is `resource_exhausted` or `unavailable`, and nothing else.
Faults the app cannot be made to show from outside (a store that fails, or is slow) come from
`Rigged`, the memory store with one of its methods replaced.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import struct
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, cast

import httpx
import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2

from tests.actors import OPERATOR, at
from tests.dpop import make_proof, new_key, thumbprint
from tests.rpc.devices import TestDevice
from tests.world import BASE_URL, PEPPER, START, FakeClock, World
from zkplatform.app import Server, create_app
from zkplatform.config import Settings
from zkplatform.domain import tokens
from zkplatform.domain.broker import MintPolicy
from zkplatform.domain.errors import StoreBusy, StoreUnavailable
from zkplatform.domain.models import Scope
from zkplatform.domain.ports.refusals import ParentRevoked, PrincipalDisabled
from zkplatform.domain.ports.store import Store
from zkplatform.domain.sync import WatchPolicy
from zkplatform.rpc import errors as rpc_errors
from zkplatform.store.memory import MemoryStore
from zkplatform.wiring import Platform
from zkplatform_api.grpc.health.v1 import health_pb2
from zkplatform_api.platform.v1 import broker_pb2, directory_pb2, vault_pb2
from zkplatform_api.platform.v1.errors_pb2 import ErrorReason

CONNECT, GRPC_WEB, GRPC = "connect", "grpc-web", "grpc"
BOTH: Final = (CONNECT, GRPC_WEB)
# gRPC status numbers, in order, by their Connect names.
GRPC_CODES: Final = (
    "ok",
    "canceled",
    "unknown",
    "invalid_argument",
    "deadline_exceeded",
    "not_found",
    "already_exists",
    "permission_denied",
    "resource_exhausted",
    "failed_precondition",
    "aborted",
    "out_of_range",
    "unimplemented",
    "internal",
    "unavailable",
    "data_loss",
    "unauthenticated",
)
ERROR_INFO, BAD_REQUEST, RETRY_INFO = "google.rpc.ErrorInfo", "google.rpc.BadRequest", "google.rpc.RetryInfo"
TOO_LARGE = 70_000  # bytes: over the default body limit of 64 KiB
API_DOC = Path(__file__).parents[2] / "docs" / "api.md"


# Answers, read alike whatever the protocol.


@dataclass(frozen=True)
class Answer:
    code: str
    message: str
    details: tuple[tuple[str, bytes], ...]  # each detail's message type and its binary form

    def of_type(self, type_name: str) -> list[bytes]:
        return [value for name, value in self.details if name == type_name]


def _unpadded_b64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4))


def connect_answer(error: Mapping[str, Any]) -> Answer:
    details = tuple((d["type"], _unpadded_b64(d["value"])) for d in error.get("details", []))
    return Answer(error["code"], error["message"], details)


def grpc_answer(status: Mapping[str, str]) -> Answer:
    code = GRPC_CODES[int(status["grpc-status"])]
    details = status_pb2.Status.FromString(_unpadded_b64(status.get("grpc-status-details-bin", "")))
    assert GRPC_CODES[details.code] == code, (details, status)
    assert details.message == httpx.URL("/?m=" + status.get("grpc-message", "")).params["m"], (details, status)
    found = tuple((d.type_url.removeprefix("type.googleapis.com/"), d.value) for d in details.details)
    return Answer(code, details.message, found)


def frames(data: bytes) -> list[tuple[int, bytes]]:
    found = []
    while data:
        flags, size = struct.unpack(">BI", data[:5])
        found.append((flags, data[5 : 5 + size]))
        data = data[5 + size :]
    return found


def answer_of(response: httpx.Response, protocol: str) -> Answer:
    content_type = response.headers.get("content-type", "")
    if protocol == CONNECT:
        if content_type.startswith("application/connect+"):  # a stream: its end message says how it ended
            flags, end = frames(response.content)[-1]
            assert flags == 2, response.content
            return connect_answer(json.loads(end)["error"])
        assert content_type == "application/json", (response.status_code, response.headers, response.content)
        return connect_answer(response.json())
    assert response.status_code == 200, (response.status_code, response.headers, response.content)
    if "grpc-status" in response.headers:  # trailers-only
        return grpc_answer(response.headers)
    (trailers,) = [body for flags, body in frames(response.content) if flags & 0x80]
    lines = [line.partition(":") for line in trailers.decode().split("\r\n") if line]
    return grpc_answer({name.strip().lower(): value.strip() for name, _, value in lines})


# Requests, sent in any protocol.

STREAMING: Final = frozenset(
    {
        "/platform.v1.VaultService/WatchChanges",
        "/grpc.health.v1.Health/Watch",
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    }
)


@dataclass(frozen=True)
class Call:
    path: str
    message: Message
    token: str | None = None
    scheme: str = "Bearer"
    headers: Mapping[str, str | bytes] = field(default_factory=dict)  # added to the protocol's own
    drop: tuple[str, ...] = ()  # protocol headers left out
    body: bytes | None = None  # instead of the message's encoding (in a frame, for the framed protocols)
    method: str = "POST"
    query: str = ""
    stall: bool = False  # the body's first bytes arrive, the rest never does
    timeout_ms: int | None = None  # the call's deadline, in the protocol's header


async def _stalled(first: bytes) -> AsyncIterator[bytes]:
    yield first[:10]
    await asyncio.Event().wait()


def _frame(payload: bytes) -> bytes:
    return struct.pack(">BI", 0, len(payload)) + payload


async def send(client: httpx.AsyncClient, call: Call, protocol: str) -> httpx.Response:
    streaming = call.path in STREAMING
    headers: dict[str, str] = {}
    if protocol == CONNECT:
        payload = call.body if call.body is not None else json_format.MessageToJson(call.message).encode()
        if streaming:
            payload = _frame(payload)
        headers["content-type"] = "application/connect+json" if streaming else "application/json"
        headers["connect-protocol-version"] = "1"
        if call.timeout_ms is not None:
            headers["connect-timeout-ms"] = str(call.timeout_ms)
    else:
        payload = _frame(call.body if call.body is not None else call.message.SerializeToString())
        headers["content-type"] = "application/grpc-web+proto" if protocol == GRPC_WEB else "application/grpc"
        if call.timeout_ms is not None:
            headers["grpc-timeout"] = f"{call.timeout_ms}m"
    if call.token is not None:
        headers["authorization"] = f"{call.scheme} {call.token}"
    for name in call.drop:
        headers.pop(name)
    raw = [(k.encode(), v.encode()) for k, v in headers.items()]
    raw += [(k.encode(), v if isinstance(v, bytes) else v.encode()) for k, v in call.headers.items()]
    url = call.path + (f"?{call.query}" if call.query else "")
    content: bytes | AsyncIterator[bytes] | None = _stalled(payload) if call.stall else payload
    if call.method == "GET":
        content = None
    return await client.request(call.method, url, content=content, headers=raw)


# The app, its store and the test's faults.


class Rigged:
    """The memory store, with any of its methods replaced by the fault a row needs."""

    def __init__(self, inner: MemoryStore) -> None:
        self.inner = inner
        self.rigged: dict[str, Callable[..., Awaitable[Any]]] = {}

    def __getattr__(self, name: str) -> Any:
        return self.rigged.get(name) or getattr(self.inner, name)


def raising(error: Exception) -> Callable[..., Awaitable[Any]]:
    async def fail(*args: object, **kwargs: object) -> Any:
        raise error

    return fail


@dataclass
class Env:
    world: World
    clock: FakeClock
    store: Rigged
    app: Server
    client: httpx.AsyncClient

    @property
    def platform(self) -> Platform:
        return self.world.platform

    def token(self, principal_id: str) -> str:
        return self.world.token(principal_id)

    async def token_with(self, principal_id: str, *scopes: Scope) -> str:
        principal = await self.store.inner.get_principal(principal_id)
        assert principal is not None
        return (await self.platform.issuer.issue(principal, 3600, scopes)).secret

    async def token_id(self, secret: str) -> str:
        record = await self.store.inner.find_token(tokens.TokenHasher(PEPPER)(secret))
        assert record is not None
        return record.token_id

    async def bound_token(self) -> tuple[str, Any]:
        """A token of alice's bound to a new key, and that key."""
        key = new_key("ec")
        mint = broker_pb2.MintUserApiTokenRequest(
            tenant_id="acme", requested_scopes=[s.value for s in Scope], pop_key_id=thumbprint(key)
        )
        proof = make_proof(key, BASE_URL + MINT.path, self.token("alice"), iat=self.clock.now)
        call = Call(MINT.path, mint, self.token("alice"), headers={"dpop": proof})
        response = await send(self.client, call, CONNECT)
        assert response.status_code == 200, response.text
        return response.json()["token"]["accessToken"], key


@dataclass(frozen=True, eq=False)  # a procedure is itself: compared (and hashed) by identity
class Rpc:
    path: str
    request: Message  # a request alice may make
    invalid: Message  # one that breaks a field rule
    get: bool = False  # also takes the Connect GET form

    @property
    def name(self) -> str:
        return self.path.rpartition(".")[2]


def _content() -> dict[str, Any]:
    payload = vault_pb2.EncryptedPayload(alg="A256GCM", nonce="bm9uY2Vub25jZW5v", ciphertext="c2VjcmV0", version=1)
    key = vault_pb2.WrappedKey(recipient_id="alice", wrap_alg="A256KW", wrapped_key="a2V5a2V5a2V5a2V5")
    return {"kind": "login", "title_hash": "th", "encrypted_payload": payload, "wrapped_keys": [key]}


VAULT = "/platform.v1.VaultService"
BROKER = "/platform.v1.BrokerService"
DIRECTORY = "/platform.v1.DirectoryService"
HEALTH = "/grpc.health.v1.Health"
DELETE = Rpc(
    f"{VAULT}/DeleteItem",
    vault_pb2.DeleteItemRequest(vault_id="acme-private", item_id="item-1", base_version=1),
    vault_pb2.DeleteItemRequest(vault_id="acme-private", item_id="item-1", base_version=0),
)
CREATE = Rpc(
    f"{VAULT}/CreateItem",
    vault_pb2.CreateItemRequest(vault_id="acme-private", item_id="new-1", **_content()),
    vault_pb2.CreateItemRequest(vault_id="no spaces", item_id="new-1", **_content()),
)
UPDATE = Rpc(
    f"{VAULT}/UpdateItem",
    vault_pb2.UpdateItemRequest(vault_id="acme-private", item_id="item-1", base_version=1, **_content()),
    vault_pb2.UpdateItemRequest(vault_id="acme-private", item_id="item-1", base_version=0, **_content()),
)
GET = Rpc(
    f"{VAULT}/GetItem",
    vault_pb2.GetItemRequest(vault_id="acme-private", item_id="item-1"),
    vault_pb2.GetItemRequest(vault_id="acme-private", item_id=""),
    get=True,
)
LIST_ITEMS = Rpc(
    f"{VAULT}/ListItems",
    vault_pb2.ListItemsRequest(vault_id="acme-private"),
    vault_pb2.ListItemsRequest(vault_id="acme-private", page_size=-1),
    get=True,
)
LIST_CHANGES = Rpc(
    f"{VAULT}/ListChanges",
    vault_pb2.ListChangesRequest(vault_id="acme-private"),
    vault_pb2.ListChangesRequest(vault_id="acme-private", since_sequence=-1),
    get=True,
)
WATCH = Rpc(
    f"{VAULT}/WatchChanges",
    vault_pb2.WatchChangesRequest(vault_id="acme-private"),
    vault_pb2.WatchChangesRequest(vault_id="acme-private", since_sequence=-1),
)
LIST_VAULTS = Rpc(
    f"{VAULT}/ListVaults",
    vault_pb2.ListVaultsRequest(),
    vault_pb2.ListVaultsRequest(page_size=-1),
    get=True,
)
GET_VAULT = Rpc(
    f"{VAULT}/GetVault",
    vault_pb2.GetVaultRequest(vault_id="acme-private"),
    vault_pb2.GetVaultRequest(vault_id="not a vault id"),
    get=True,
)
MINT = Rpc(
    f"{BROKER}/MintUserApiToken",
    broker_pb2.MintUserApiTokenRequest(tenant_id="acme", requested_scopes=["vault.items.read"]),
    broker_pb2.MintUserApiTokenRequest(tenant_id="acme", requested_scopes=[]),
)
LIST_TOKENS = Rpc(
    f"{BROKER}/ListTokens",
    broker_pb2.ListTokensRequest(),
    broker_pb2.ListTokensRequest(page_size=-1),
    get=True,
)
REVOKE = Rpc(
    f"{BROKER}/RevokeToken",
    broker_pb2.RevokeTokenRequest(token_id="tok_" + "0" * 24),
    broker_pb2.RevokeTokenRequest(token_id="not-a-token-id"),
)


# Alice's new device, first or endorsed: whichever, the rows that use it never reach that check.
NEW_DEVICE = TestDevice()
PUBLISH = Rpc(
    f"{DIRECTORY}/PublishDevice",
    NEW_DEVICE.publish("alice", START),
    directory_pb2.PublishDeviceRequest(statement="", signature=NEW_DEVICE.publish("alice", START).signature),
)
REVOKE_DEVICE = Rpc(
    f"{DIRECTORY}/RevokeDevice",
    NEW_DEVICE.revoke(NEW_DEVICE, "alice", START),
    directory_pb2.RevokeDeviceRequest(statement="{}", signature="short"),
)
RESET = Rpc(
    f"{DIRECTORY}/ResetPrincipal",
    directory_pb2.ResetPrincipalRequest(principal_id="bob"),
    directory_pb2.ResetPrincipalRequest(principal_id="bob", request_id="not-a-uuid"),
)
RECIPIENTS = Rpc(
    f"{DIRECTORY}/GetRecipientKeys",
    directory_pb2.GetRecipientKeysRequest(principal_ids=["alice"]),
    directory_pb2.GetRecipientKeysRequest(),
    get=True,
)
KEY_LOG = Rpc(
    f"{DIRECTORY}/ListKeyLog",
    directory_pb2.ListKeyLogRequest(),
    directory_pb2.ListKeyLogRequest(start_index=-1),
    get=True,
)
PLATFORM_RPCS: Final = (
    *(DELETE, CREATE, UPDATE, GET, LIST_ITEMS, LIST_CHANGES, WATCH, LIST_VAULTS, GET_VAULT),
    *(MINT, LIST_TOKENS, REVOKE),
    *(PUBLISH, REVOKE_DEVICE, RESET, RECIPIENTS, KEY_LOG),
)
VAULT_RPCS: Final = (DELETE, CREATE, UPDATE, GET, LIST_ITEMS, LIST_CHANGES, WATCH, GET_VAULT)
# The scope each vault RPC needs, and one that is not it.
NEEDS: Final = {
    DELETE: (Scope.VAULT_ITEMS_DELETE, Scope.VAULT_ITEMS_READ),
    CREATE: (Scope.VAULT_ITEMS_WRITE, Scope.VAULT_ITEMS_READ),
    UPDATE: (Scope.VAULT_ITEMS_WRITE, Scope.VAULT_ITEMS_READ),
    GET: (Scope.VAULT_ITEMS_READ, Scope.VAULT_ITEMS_WRITE),
    LIST_ITEMS: (Scope.VAULT_ITEMS_READ, Scope.VAULT_ITEMS_WRITE),
    LIST_CHANGES: (Scope.VAULT_ITEMS_READ, Scope.VAULT_ITEMS_WRITE),
    WATCH: (Scope.VAULT_ITEMS_READ, Scope.VAULT_ITEMS_WRITE),
    LIST_VAULTS: (Scope.VAULT_ITEMS_READ, Scope.VAULT_ITEMS_WRITE),
    GET_VAULT: (Scope.VAULT_ITEMS_READ, Scope.VAULT_ITEMS_WRITE),
    MINT: (Scope.BROKER_TOKENS_MINT, Scope.VAULT_ITEMS_READ),
    LIST_TOKENS: (Scope.BROKER_TOKENS_MANAGE, Scope.VAULT_ITEMS_READ),
    PUBLISH: (Scope.DIRECTORY_KEYS_PUBLISH, Scope.DIRECTORY_KEYS_READ),
    REVOKE_DEVICE: (Scope.DIRECTORY_KEYS_PUBLISH, Scope.DIRECTORY_KEYS_READ),
    RESET: (Scope.DIRECTORY_KEYS_PUBLISH, Scope.DIRECTORY_KEYS_READ),
    RECIPIENTS: (Scope.DIRECTORY_KEYS_READ, Scope.DIRECTORY_KEYS_PUBLISH),
    KEY_LOG: (Scope.DIRECTORY_KEYS_READ, Scope.DIRECTORY_KEYS_PUBLISH),
}
HEALTH_CHECK = Rpc(
    f"{HEALTH}/Check",
    health_pb2.HealthCheckRequest(service="platform.v1.VaultService"),
    health_pb2.HealthCheckRequest(),
)
HEALTH_LIST = Rpc(f"{HEALTH}/List", health_pb2.HealthListRequest(), health_pb2.HealthListRequest())
HEALTH_WATCH = Rpc(f"{HEALTH}/Watch", health_pb2.HealthCheckRequest(), health_pb2.HealthCheckRequest())
# Reflection's requests are messages of connectrpc's own runtime: any message stands in, as each
# row of it refuses the call before its request is read.
REFLECTION = Rpc(
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    health_pb2.HealthListRequest(),
    health_pb2.HealthListRequest(),
)


# The rows.

R = ErrorReason  # the table's reasons, the generated enum's values
INVALID, UNAUTHENTICATED, DENIED = Code.INVALID_ARGUMENT, Code.UNAUTHENTICATED, Code.PERMISSION_DENIED
EXHAUSTED, UNIMPLEMENTED = Code.RESOURCE_EXHAUSTED, Code.UNIMPLEMENTED

Provoke = Callable[[Env], Awaitable[Call]]


@dataclass(frozen=True)
class Row:
    rpc: str
    code: Code
    reason: ErrorReason
    case: str
    provoke: Provoke
    metadata: frozenset[str] = frozenset()
    protocols: tuple[str, ...] = BOTH
    settings: Settings = field(default_factory=Settings)
    mint_policy: MintPolicy | None = None
    watch_policy: WatchPolicy | None = None


def row(rpc: Rpc | str, code: Code, reason: ErrorReason, case: str, provoke: Provoke, *meta: str, **more: Any) -> Row:
    """A row of the table: `meta` are the ErrorInfo's metadata keys."""
    return Row(rpc if isinstance(rpc, str) else rpc.name, code, reason, case, provoke, frozenset(meta), **more)


def _calls(rpc: Rpc, **fields: Any) -> Provoke:
    """A provocation that needs no preparation: this call of the RPC (by alice, unless `token` names another)."""

    async def provoke(env: Env) -> Call:
        given = dict(fields)
        token = given.pop("token", "alice")
        return Call(rpc.path, given.pop("message", rpc.request), env.token(token) if token else None, **given)

    return provoke


def _decoding_rows(rpc: Rpc) -> list[Row]:
    """What the front and connectrpc refuse before the servicer, on any procedure."""
    streaming = rpc.path in STREAMING
    connect, grpc_web = {"protocols": (CONNECT,)}, {"protocols": (GRPC_WEB,)}
    not_utf8 = _calls(rpc, headers={"x-foo": b"\xff"})
    connect_timeout = _calls(rpc, headers={"connect-timeout-ms": "soon"})
    grpc_timeout = _calls(rpc, headers={"grpc-timeout": "soon"})
    bad_host = _calls(rpc, headers={"host": "[::1"})
    token_as_request_id = _calls(rpc, headers={"x-request-id": tokens.new_token()})
    version_2 = _calls(rpc, drop=("connect-protocol-version",), headers={"connect-protocol-version": "2"})
    not_json = _calls(rpc, body=b"\xff\xfe\xfd" if streaming else b"{")
    not_proto = _calls(rpc, body=b"\xff\xfe\xfd")
    brotli = _calls(rpc, headers={"connect-content-encoding" if streaming else "content-encoding": "br"})
    grpc_brotli = _calls(rpc, headers={"grpc-encoding": "br"})
    return [
        row(rpc, INVALID, R.TOKEN_IN_URL, "access_token", _calls(rpc, query="access_token=x")),
        row(rpc, INVALID, R.TOKEN_MISPLACED, "x-request-id", token_as_request_id),
        row(rpc, INVALID, R.HEADER_INVALID, "not-utf8", not_utf8, "header"),
        row(rpc, INVALID, R.HEADER_INVALID, "host", bad_host, "header"),
        row(rpc, INVALID, R.HEADER_INVALID, "timeout", connect_timeout, "header", **connect),
        row(rpc, INVALID, R.HEADER_INVALID, "timeout", grpc_timeout, "header", **grpc_web),
        row(rpc, INVALID, R.PROTOCOL_VERSION_INVALID, "2", version_2, **connect),
        row(rpc, EXHAUSTED, R.BODY_TOO_LARGE, "body", _calls(rpc, body=b"x" * TOO_LARGE), "maxBytes"),
        row(rpc, INVALID, R.REQUEST_MALFORMED, "body", not_json, **connect),
        row(rpc, INVALID, R.REQUEST_MALFORMED, "body", not_proto, **grpc_web),
        row(rpc, UNIMPLEMENTED, R.HTTP_METHOD_NOT_ALLOWED, "put", _calls(rpc, method="PUT")),
        row(rpc, UNIMPLEMENTED, R.ENCODING_UNSUPPORTED, "br", brotli, **connect),
        row(rpc, UNIMPLEMENTED, R.ENCODING_UNSUPPORTED, "br", grpc_brotli, **grpc_web),
    ]


def _authentication_rows(rpc: Rpc) -> list[Row]:
    """Each kind of unauthenticated answer, which every platform RPC gives alike."""

    async def expired(env: Env) -> Call:
        env.clock.advance(3601)  # the seeded tokens live an hour
        return Call(rpc.path, rpc.request, env.token("alice"))

    async def revoked(env: Env) -> Call:
        await env.store.inner.revoke_token_tree(await env.token_id(env.token("alice")), OPERATOR)
        return Call(rpc.path, rpc.request, env.token("alice"))

    async def disabled(env: Env) -> Call:  # a token that slipped by its principal's disabling
        async def found_disabled(secret_hash: bytes) -> Any:
            found = await env.store.inner.find_token_with_principal(secret_hash)
            return None if found is None else (found[0], replace(found[1], disabled=True))

        env.store.rigged["find_token_with_principal"] = found_disabled
        return Call(rpc.path, rpc.request, env.token("alice"))

    async def bound_as_bearer(env: Env) -> Call:
        token, _ = await env.bound_token()
        return Call(rpc.path, rpc.request, token)

    async def replayed(env: Env) -> Call:
        token, key = await env.bound_token()
        jti = "seen-before"
        assert await env.store.inner.remember_proof(thumbprint(key), jti, env.clock.now, env.clock.now + 120)
        proof = make_proof(key, BASE_URL + rpc.path, token, iat=env.clock.now, jti=jti)
        return Call(rpc.path, rpc.request, token, scheme="DPoP", headers={"dpop": proof})

    unknown = _calls(rpc, token=None, headers={"authorization": f"Bearer {tokens.new_token()}"})
    basic = _calls(rpc, token=None, headers={"authorization": "Basic x"})
    return [
        row(rpc, UNAUTHENTICATED, R.TOKEN_MISSING, "none", _calls(rpc, token=None)),
        row(rpc, UNAUTHENTICATED, R.TOKEN_INVALID, "unknown", unknown),
        row(rpc, UNAUTHENTICATED, R.TOKEN_INVALID, "scheme", basic),
        row(rpc, UNAUTHENTICATED, R.TOKEN_EXPIRED, "expired", expired),
        row(rpc, UNAUTHENTICATED, R.TOKEN_REVOKED, "revoked", revoked),
        row(rpc, UNAUTHENTICATED, R.PRINCIPAL_DISABLED, "disabled", disabled),
        row(rpc, UNAUTHENTICATED, R.DPOP_PROOF_INVALID, "bearer", bound_as_bearer),
        row(rpc, UNAUTHENTICATED, R.DPOP_PROOF_REPLAYED, "jti", replayed),
    ]


def _fault_rows(rpc: Rpc) -> list[Row]:
    """A store that fails, is unavailable, or is slow: what any RPC that reads it may meet
    (here at authentication, the first thing every call of the platform reads)."""

    def rigged(fault: Callable[..., Awaitable[Any]], **fields: Any) -> Provoke:
        async def provoke(env: Env) -> Call:
            env.store.rigged["find_token_with_principal"] = fault
            return Call(rpc.path, rpc.request, env.token("alice"), **fields)

        return provoke

    async def slow(*args: object) -> Any:
        await asyncio.sleep(60)

    return [
        row(rpc, Code.INTERNAL, R.INTERNAL, "bug", rigged(raising(RuntimeError("a bug")))),
        row(rpc, Code.UNAVAILABLE, R.STORE_UNAVAILABLE, "store", rigged(raising(StoreUnavailable()))),
        row(rpc, EXHAUSTED, R.STORE_BUSY, "busy", rigged(raising(StoreBusy()))),
        row(rpc, Code.DEADLINE_EXCEEDED, R.DEADLINE_EXCEEDED, "slow", rigged(slow, timeout_ms=50)),
    ]


def _access_rows(rpc: Rpc) -> list[Row]:
    """Scopes, vaults and field rules; the protocol version, which gRPC calls need not send."""
    rows = [row(rpc, INVALID, R.FIELD_INVALID, "rule", _calls(rpc, message=rpc.invalid))]
    if rpc in NEEDS:
        needed, other = NEEDS[rpc]

        async def scope_missing(env: Env) -> Call:
            return Call(rpc.path, rpc.request, await env.token_with("alice", other))

        rows.append(row(rpc, DENIED, R.SCOPE_MISSING, needed.value, scope_missing, "requiredScope"))
    if rpc in VAULT_RPCS:
        rows.append(row(rpc, DENIED, R.VAULT_ACCESS_DENIED, "bob", _calls(rpc, token="bob")))
    if rpc is not WATCH:  # a Connect stream is not asked for Connect-Protocol-Version
        missing = _calls(rpc, drop=("connect-protocol-version",))
        rows.append(row(rpc, INVALID, R.PROTOCOL_VERSION_INVALID, "missing", missing, protocols=(CONNECT,)))
    if rpc.get:  # the GET form, without connect=v1
        message = httpx.QueryParams({"message": json_format.MessageToJson(rpc.request, indent=None)})
        drop = ("connect-protocol-version", "content-type")
        get = _calls(rpc, method="GET", query=f"encoding=json&{message}", drop=drop)
        rows.append(row(rpc, INVALID, R.PROTOCOL_VERSION_INVALID, "get", get, protocols=(CONNECT,)))
    return rows


async def _deleted_item(env: Env) -> None:
    await env.store.inner.delete_item("acme-private", "item-1", 1, at(env.clock.now))


def _item_rows() -> list[Row]:
    async def tombstone_exists(env: Env) -> Call:
        await _deleted_item(env)
        return Call(CREATE.path, changed(CREATE.request, item_id="item-1"), env.token("alice"))

    async def update_tombstone(env: Env) -> Call:
        await _deleted_item(env)
        return Call(UPDATE.path, UPDATE.request, env.token("alice"))

    def calls(rpc: Rpc, **fields: Any) -> Provoke:
        return _calls(rpc, message=changed(rpc.request, **fields))

    return [
        row(DELETE, Code.NOT_FOUND, R.ITEM_NOT_FOUND, "item", calls(DELETE, item_id="nope")),
        row(DELETE, Code.ABORTED, R.VERSION_MISMATCH, "stale", calls(DELETE, base_version=3), "currentVersion"),
        row(CREATE, Code.ALREADY_EXISTS, R.ITEM_EXISTS, "live", calls(CREATE, item_id="item-1"), "currentVersion"),
        row(CREATE, Code.ALREADY_EXISTS, R.ITEM_EXISTS, "tombstone", tombstone_exists, "currentVersion", "deleted"),
        row(UPDATE, Code.NOT_FOUND, R.ITEM_NOT_FOUND, "item", calls(UPDATE, item_id="nope")),
        row(UPDATE, Code.FAILED_PRECONDITION, R.ITEM_DELETED, "tombstone", update_tombstone),
        row(UPDATE, Code.ABORTED, R.VERSION_MISMATCH, "stale", calls(UPDATE, base_version=3), "currentVersion"),
        row(GET, Code.NOT_FOUND, R.ITEM_NOT_FOUND, "item", calls(GET, item_id="nope")),
        row(LIST_ITEMS, INVALID, R.PAGE_TOKEN_INVALID, "garbage", calls(LIST_ITEMS, page_token="garbage")),
        row(LIST_VAULTS, INVALID, R.PAGE_TOKEN_INVALID, "garbage", calls(LIST_VAULTS, page_token="garbage")),
    ]


def _change_rows() -> list[Row]:
    def expired_cursor(rpc: Rpc) -> Provoke:
        async def provoke(env: Env) -> Call:
            await _deleted_item(env)
            assert await env.store.inner.purge_tombstones(env.clock.now + 1, OPERATOR) == 1
            return Call(rpc.path, changed(rpc.request, since_sequence=1), env.token("alice"))

        return provoke

    async def watch_behind(env: Env) -> Call:
        """The watch's second read finds the vault far past its cursor: its client reads too slowly."""
        backlog: list[Any] = []

        async def list_changes(vault_id: str, since: int, limit: int) -> Any:
            if not backlog:  # the first read: the backlog; then a change wakes the watch
                backlog.append(await env.store.inner.list_changes(vault_id, since, limit))
                asyncio.get_running_loop().call_later(0.01, env.store.inner.change_feed().notify, vault_id)
                return backlog[0]
            return replace(backlog[0], sequence=since + 1_000_000)

        env.store.rigged["list_changes"] = list_changes
        return Call(WATCH.path, WATCH.request, env.token("alice"))

    async def shutting_down(env: Env) -> Call:
        env.app.end_streams()
        return Call(WATCH.path, WATCH.request, env.token("alice"))

    rows = []
    for rpc in (LIST_CHANGES, WATCH):
        ahead = _calls(rpc, message=changed(rpc.request, since_sequence=999))
        another_epoch = _calls(rpc, message=changed(rpc.request, since_epoch="another-epoch"))
        rows += [
            row(rpc, Code.FAILED_PRECONDITION, R.CURSOR_EXPIRED, "purged", expired_cursor(rpc), "minSequence", "epoch"),
            row(rpc, Code.FAILED_PRECONDITION, R.CURSOR_EXPIRED, "epoch", another_epoch, "epoch"),
            row(rpc, Code.OUT_OF_RANGE, R.CURSOR_AHEAD, "ahead", ahead, "currentSequence"),
        ]
    per_principal, per_server = WatchPolicy(max_per_principal=0), WatchPolicy(max_per_worker=0)
    limits, no_streams = ("limit", "appliesTo"), Settings(max_streams=0)
    return [
        *rows,
        row(WATCH, EXHAUSTED, R.WATCH_LIMIT_EXCEEDED, "principal", _calls(WATCH), *limits, watch_policy=per_principal),
        row(WATCH, EXHAUSTED, R.WATCH_LIMIT_EXCEEDED, "server", _calls(WATCH), *limits, watch_policy=per_server),
        row(WATCH, EXHAUSTED, R.STREAM_LIMIT_EXCEEDED, "streams", _calls(WATCH), "limit", settings=no_streams),
        row(WATCH, Code.ABORTED, R.WATCH_BEHIND, "slow-reader", watch_behind),
        row(WATCH, Code.UNAVAILABLE, R.SERVER_SHUTTING_DOWN, "stopping", shutting_down),
    ]


def _broker_rows() -> list[Row]:
    async def parent_expires_soon(env: Env) -> Call:
        env.clock.advance(3600 - 30)
        return Call(MINT.path, MINT.request, env.token("alice"))

    async def scopes_not_held(env: Env) -> Call:
        return Call(MINT.path, MINT.request, await env.token_with("alice", Scope.BROKER_TOKENS_MINT))

    async def after_one_mint(env: Env) -> Call:
        assert (await send(env.client, Call(MINT.path, MINT.request, env.token("alice")), CONNECT)).status_code == 200
        return Call(MINT.path, MINT.request, env.token("alice"))

    def mint_failing(error: Exception) -> Provoke:
        async def provoke(env: Env) -> Call:
            env.store.rigged["add_minted_token"] = raising(error)
            return Call(MINT.path, MINT.request, env.token("alice"))

        return provoke

    def calls(rpc: Rpc, **fields: Any) -> Provoke:
        return _calls(rpc, message=changed(rpc.request, **fields))

    rate, cap = MintPolicy(mints_per_minute=1), MintPolicy(active_minted_cap=1)
    return [
        row(MINT, DENIED, R.TENANT_MISMATCH, "globex", calls(MINT, tenant_id="globex")),
        row(MINT, DENIED, R.SCOPES_NOT_HELD, "read", scopes_not_held, "refusedScopes"),
        row(MINT, DENIED, R.PRINCIPAL_DISABLED, "while-minting", mint_failing(PrincipalDisabled("disabled"))),
        row(MINT, UNAUTHENTICATED, R.TOKEN_REVOKED, "while-minting", mint_failing(ParentRevoked("revoked"))),
        row(MINT, UNAUTHENTICATED, R.DPOP_PROOF_INVALID, "binding", calls(MINT, pop_key_id=thumbprint(new_key("ec")))),
        row(MINT, INVALID, R.FIELD_INVALID, "ttl", calls(MINT, requested_ttl_seconds=5)),
        row(MINT, Code.FAILED_PRECONDITION, R.PARENT_EXPIRES_SOON, "30s", parent_expires_soon),
        row(MINT, EXHAUSTED, R.RATE_LIMIT_EXCEEDED, "rate", after_one_mint, "limit", mint_policy=rate),
        row(MINT, EXHAUSTED, R.ACTIVE_TOKEN_LIMIT_EXCEEDED, "cap", after_one_mint, "limit", mint_policy=cap),
        row(LIST_TOKENS, DENIED, R.PRINCIPAL_ACCESS_DENIED, "bob", _calls(LIST_TOKENS, token="bob", message=OF_ALICE)),
        row(LIST_TOKENS, INVALID, R.PAGE_TOKEN_INVALID, "garbage", calls(LIST_TOKENS, page_token="garbage")),
        row(REVOKE, Code.NOT_FOUND, R.TOKEN_NOT_FOUND, "unknown", _calls(REVOKE)),
    ]


OF_ALICE = broker_pb2.ListTokensRequest(principal_id="alice")


def _directory_rows() -> list[Row]:  # noqa: C901 # one provocation per row
    """The seeded principals each have their demo device, live: alice's endorses, bob's is another's."""

    def demo(env: Env, principal_id: str) -> TestDevice:
        (principal,) = [p for t in env.world.tenants for p in t.principals if p["principalId"] == principal_id]
        return TestDevice.of_demo(principal)

    async def sent(env: Env, path: str, message: Message) -> None:
        done = await send(env.client, Call(path, message, env.token("alice")), CONNECT)
        assert done.status_code == 200, done.text

    def publishing(make: Callable[[Env], Message]) -> Provoke:
        async def provoke(env: Env) -> Call:
            return Call(PUBLISH.path, make(env), env.token("alice"))

        return provoke

    def revoking(make: Callable[[Env], Message]) -> Provoke:
        async def provoke(env: Env) -> Call:
            return Call(REVOKE_DEVICE.path, make(env), env.token("alice"))

        return provoke

    def possession_unsigned(env: Env) -> Message:
        request = TestDevice().publish("alice", env.clock.now)
        request.signature = TestDevice().sign(PUBLISH_STATEMENT)
        return request

    def endorsed_by_bob(env: Env) -> Message:
        return TestDevice().publish("alice", env.clock.now, endorser=demo(env, "bob"))

    def bobs_keys(env: Env) -> Message:
        return demo(env, "bob").publish("alice", env.clock.now, endorser=demo(env, "alice"))

    async def revoked_keys(env: Env) -> Call:
        device, alices = TestDevice(), demo(env, "alice")
        await sent(env, PUBLISH.path, device.publish("alice", env.clock.now, endorser=alices))
        await sent(env, REVOKE_DEVICE.path, alices.revoke(device, "alice", env.clock.now))
        return Call(PUBLISH.path, device.publish("alice", env.clock.now + 1, endorser=alices), env.token("alice"))

    def unknown_device(env: Env) -> Message:
        return demo(env, "alice").revoke(TestDevice(), "alice", env.clock.now)

    def unknown_revoker(env: Env) -> Message:
        return TestDevice().revoke(demo(env, "alice"), "alice", env.clock.now)

    def revocation_unsigned(env: Env) -> Message:
        request = demo(env, "alice").revoke(demo(env, "alice"), "alice", env.clock.now)
        request.signature = TestDevice().sign(PUBLISH_STATEMENT)
        return request

    def bobs_statement(env: Env) -> Message:
        return TestDevice().publish("bob", env.clock.now)

    of_globex = _calls(RESET, message=changed(RESET.request, principal_id="carol"))
    by_a_member = _calls(RESET, token="bob", message=changed(RESET.request, principal_id="alice"))
    garbage = _calls(KEY_LOG, message=changed(KEY_LOG.request, page_token="garbage"))
    not_ours = _calls(RECIPIENTS, message=changed(RECIPIENTS.request, page_token="garbage"))
    return [
        row(PUBLISH, INVALID, R.FIELD_INVALID, "bobs-statement", publishing(bobs_statement)),
        row(PUBLISH, INVALID, R.SIGNATURE_INVALID, "possession", publishing(possession_unsigned)),
        row(PUBLISH, Code.ALREADY_EXISTS, R.KEY_EXISTS, "bobs-device", publishing(bobs_keys)),
        row(PUBLISH, Code.FAILED_PRECONDITION, R.KEY_REVOKED, "revoked", revoked_keys),
        row(PUBLISH, Code.FAILED_PRECONDITION, R.ENDORSEMENT_REQUIRED, "unendorsed", _calls(PUBLISH)),
        row(PUBLISH, Code.FAILED_PRECONDITION, R.ENDORSER_NOT_LIVE, "bobs", publishing(endorsed_by_bob), "deviceId"),
        row(REVOKE_DEVICE, Code.NOT_FOUND, R.KEY_NOT_FOUND, "unknown", revoking(unknown_device)),
        row(
            REVOKE_DEVICE,
            Code.FAILED_PRECONDITION,
            R.REVOKER_NOT_LIVE,
            "unknown",
            revoking(unknown_revoker),
            "deviceId",
        ),
        row(REVOKE_DEVICE, INVALID, R.SIGNATURE_INVALID, "revoker", revoking(revocation_unsigned)),
        row(RESET, DENIED, R.KEY_ACCESS_DENIED, "member", by_a_member),
        row(RESET, Code.NOT_FOUND, R.PRINCIPAL_NOT_FOUND, "globex", of_globex),
        row(KEY_LOG, INVALID, R.PAGE_TOKEN_INVALID, "garbage", garbage),
        row(RECIPIENTS, INVALID, R.PAGE_TOKEN_INVALID, "garbage", not_ours),
    ]


PUBLISH_STATEMENT = NEW_DEVICE.keys("acme", "alice", START)


def _request_id_rows() -> list[Row]:
    """A request id used again: with other content, or for a mint (whose secret is not kept)."""
    request_id = "6f1c3c1e-8f6a-4e55-9a3e-0d6b8f7b2d11"

    def again(rpc: Rpc, first: Message, then: Message) -> Provoke:
        async def provoke(env: Env) -> Call:
            done = await send(
                env.client, Call(rpc.path, changed(first, request_id=request_id), env.token("alice")), CONNECT
            )
            assert done.status_code == 200, done.text
            return Call(rpc.path, changed(then, request_id=request_id), env.token("alice"))

        return provoke

    async def revoke_again(env: Env) -> Call:
        own = [await env.token_id(await env.token_with("alice", Scope.VAULT_ITEMS_READ)) for _ in range(2)]
        first, then = (broker_pb2.RevokeTokenRequest(token_id=token_id) for token_id in own)
        return await again(REVOKE, first, then)(env)

    other = {
        RESET: changed(RESET.request, principal_id="alice"),
        DELETE: changed(DELETE.request, item_id="item-2"),
        CREATE: changed(CREATE.request, item_id="new-2"),
        UPDATE: changed(UPDATE.request, item_id="item-2"),
        MINT: changed(MINT.request, requested_scopes=["vault.items.write"]),
    }
    reused = R.REQUEST_ID_REUSED
    return [
        *(row(rpc, INVALID, reused, "other-content", again(rpc, rpc.request, then)) for rpc, then in other.items()),
        row(REVOKE, INVALID, reused, "other-content", revoke_again),
        row(
            MINT,
            Code.ALREADY_EXISTS,
            R.TOKEN_ALREADY_MINTED,
            "repeat",
            again(MINT, MINT.request, MINT.request),
            "tokenId",
        ),
    ]


def _front_rows() -> list[Row]:
    unknown = Rpc(f"{VAULT}/NoSuchMethod", DELETE.request, DELETE.request)

    async def stalled(env: Env) -> Call:
        return Call(DELETE.path, DELETE.request, env.token("alice"), stall=True)

    no_such_service = _calls(HEALTH_CHECK, message=health_pb2.HealthCheckRequest(service="nope"))
    token_as_item_id = _calls(DELETE, message=changed(DELETE.request, item_id=tokens.new_token()))
    impatient = Settings(body_read_timeout_seconds=1)
    return [
        row("(any path)", UNIMPLEMENTED, R.PROCEDURE_NOT_FOUND, "unknown", _calls(unknown)),
        row("(any path)", UNIMPLEMENTED, R.HTTP2_REQUIRED, "http1", _calls(DELETE), protocols=(GRPC,)),
        row(DELETE, Code.DEADLINE_EXCEEDED, R.BODY_READ_TIMEOUT, "stalled", stalled, settings=impatient),
        row(HEALTH_CHECK, Code.NOT_FOUND, R.SERVICE_NOT_FOUND, "unknown", no_such_service),
        row(DELETE, INVALID, R.TOKEN_MISPLACED, "field", token_as_item_id),
    ]


def changed(message: Message, **fields: Any) -> Any:
    """A copy of the message with these fields set."""
    copy = type(message)()
    copy.CopyFrom(message)
    for name, value in fields.items():
        if isinstance(value, list):  # a repeated field is replaced in place
            copy.ClearField(name)
            getattr(copy, name).extend(value)
        else:
            setattr(copy, name, value)
    return copy


ROWS: Final = [
    *(
        each
        for rpc in PLATFORM_RPCS
        for each in (*_decoding_rows(rpc), *_authentication_rows(rpc), *_fault_rows(rpc), *_access_rows(rpc))
    ),
    *(each for rpc in (HEALTH_CHECK, HEALTH_LIST, HEALTH_WATCH, REFLECTION) for each in _decoding_rows(rpc)),
    *_item_rows(),
    *_change_rows(),
    *_broker_rows(),
    *_directory_rows(),
    *_request_id_rows(),
    *_front_rows(),
]
CASES: Final = [(each, protocol) for each in ROWS for protocol in each.protocols]


@pytest.fixture
async def env(request: pytest.FixtureRequest, clock: FakeClock) -> AsyncIterator[Env]:
    table_row: Row = request.param
    store = Rigged(MemoryStore())
    platform = Platform.build(
        cast("Store", store), PEPPER, clock, policy=table_row.mint_policy, watch_policy=table_row.watch_policy
    )
    world = await World.seed(platform)
    app = create_app(table_row.settings, platform=platform)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as client:
        yield Env(world, clock, store, app, client)


def _case_id(case: tuple[Row, str]) -> str:
    table_row, protocol = case
    return f"{table_row.rpc}-{ErrorReason.Name(table_row.reason)}-{table_row.case}-{protocol}"


@pytest.mark.parametrize(("env", "protocol"), CASES, ids=[_case_id(c) for c in CASES], indirect=["env"])
async def test_every_error_carries_one_error_info_with_its_reason(
    env: Env, protocol: str, request: pytest.FixtureRequest
) -> None:
    table_row: Row = request.node.callspec.params["env"]
    call = await table_row.provoke(env)

    async with asyncio.timeout(10):
        answer = answer_of(await send(env.client, call, protocol), protocol)

    assert answer.code == table_row.code.value, answer
    (info_bytes,) = answer.of_type(ERROR_INFO)
    info = error_details_pb2.ErrorInfo.FromString(info_bytes)
    assert (info.domain, info.reason) == ("zkplatform.dev", ErrorReason.Name(table_row.reason)), answer
    assert set(info.metadata) == table_row.metadata, info
    expected_types = {ERROR_INFO}
    if table_row.code is Code.INVALID_ARGUMENT:
        expected_types.add(BAD_REQUEST)
        (bad_request,) = answer.of_type(BAD_REQUEST)
        assert error_details_pb2.BadRequest.FromString(bad_request).field_violations, answer
    if table_row.code in {Code.RESOURCE_EXHAUSTED, Code.UNAVAILABLE}:
        expected_types.add(RETRY_INFO)
        (retry,) = answer.of_type(RETRY_INFO)
        assert error_details_pb2.RetryInfo.FromString(retry).HasField("retry_delay"), answer
    assert sorted(name for name, _ in answer.details) == sorted(expected_types), answer


# The reasons: declared once, every one of them answered, every one documented.

# Reasons of the enum no row above can show: answered to nobody, or before the application.
NOT_IN_THE_TABLE: Final = {
    ErrorReason.REQUEST_CANCELED: "answers a client that has gone: nobody reads it (see test_reasons_of_connectrpc)",
    ErrorReason.TLS_REQUIRED: "answered by the TLS port, below the application (tests/e2e/test_tls.py)",
}


def test_every_reason_answered_is_a_value_of_the_error_reason_enum() -> None:
    answered = {each.reason for each in ROWS}
    mapped = {reason for _, reason in rpc_errors._DOMAIN_ERRORS.values()}

    assert answered <= set(ErrorReason.values())
    assert mapped <= answered  # every domain error's reason is shown by a row
    assert set(ErrorReason.values()) - {ErrorReason.ERROR_REASON_UNSPECIFIED} == answered | set(NOT_IN_THE_TABLE)
    assert not answered & set(NOT_IN_THE_TABLE)


def test_every_reason_is_in_the_error_table_of_the_api_reference() -> None:
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", API_DOC.read_text()))

    missing = {ErrorReason.Name(v) for v in ErrorReason.values()} - documented - {"ERROR_REASON_UNSPECIFIED"}

    assert not missing


@pytest.mark.parametrize(
    ("code", "message", "reason"),
    [
        (Code.RESOURCE_EXHAUSTED, "message is larger than configured max 65536", ErrorReason.BODY_TOO_LARGE),
        (Code.DEADLINE_EXCEEDED, "Request timed out", ErrorReason.DEADLINE_EXCEEDED),
        (Code.CANCELED, "Client disconnected", ErrorReason.REQUEST_CANCELED),
        (
            Code.UNIMPLEMENTED,
            "unknown compression: 'br': supported encodings are gzip",
            ErrorReason.ENCODING_UNSUPPORTED,
        ),
        (Code.UNIMPLEMENTED, "unary request has zero messages", ErrorReason.REQUEST_MALFORMED),
        (Code.INVALID_ARGUMENT, "unmarshal message: corrupt", ErrorReason.REQUEST_MALFORMED),
        (Code.INVALID_ARGUMENT, "decompress: Error -3 while decompressing data", ErrorReason.REQUEST_MALFORMED),
        (Code.INTERNAL, "protocol error: invalid envelope flags", ErrorReason.REQUEST_MALFORMED),
        (Code.INTERNAL, "something else", ErrorReason.INTERNAL),
        (Code.UNKNOWN, "Request was interrupted", ErrorReason.INTERNAL),
    ],
)
def test_reasons_of_connectrpc(code: Code, message: str, reason: ErrorReason) -> None:
    """The errors connectrpc raises itself, some of which no client can be shown (a cancelled call)."""
    mapped = rpc_errors._of_connectrpc(ConnectError(code, message), 65536)

    info = error_details_pb2.ErrorInfo.FromString(
        next(d.message_bytes for d in mapped.details if d.type_name == ERROR_INFO)
    )
    assert (info.domain, info.reason) == ("zkplatform.dev", ErrorReason.Name(reason))
