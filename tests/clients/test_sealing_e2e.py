"""Sealed items and the key directory of the Python package against a real `zkplatform serve`:
alice seals for bob with the keys the verified log vouches for, bob opens, unsharing shuts him
out and sharing lets him in again; a revoked key is no longer offered, another tenant's
principals have none; and a key log rewritten in the database behind the server's back is
refused, on every call after, with the verified state left as it was."""

from __future__ import annotations

import base64
import contextlib
import json
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from connectrpc.request import RequestContext
from google.protobuf.field_mask_pb2 import FieldMask

from tests.e2e.server import Server, serving
from tests.e2e.test_durable import ENV, seed
from zkplatform.domain.key_log import EMPTY, KeyLogEntry, appended
from zkplatform_api.platform.v1.directory_pb2 import RecipientKey, RevokeKeyRequest
from zkplatform_api.platform.v1.vault_pb2 import CreateItemRequest, GetItemRequest, Item, UpdateItemRequest
from zkplatform_client import (
    FileKeyLogStore,
    KeyDirectory,
    KeyLogError,
    RecipientPrivateKey,
    SealContext,
    Sealed,
    SealingError,
    clients,
    open_item,
    seal,
    share,
    unshare,
)

pytestmark = pytest.mark.e2e  # starts servers (tests/conftest.py marks only tests/e2e by place)

VAULT = "acme-shared"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("sealing"), "--dev") as server:
        yield server


@pytest.fixture(scope="module")
def tokens(server: Server) -> dict[str, str]:
    credentials: dict[str, Any] = json.loads((server.log_path.parent / "var" / "dev-credentials.json").read_text())
    return {p["principalId"]: p["token"] for t in credentials["tenants"] for p in t["principals"]}


def ids(keys: list[RecipientKey]) -> set[str]:
    return {key.key_id for key in keys}


async def create(server: Server, token: str, item_id: str, sealed: Sealed) -> Item:
    async with clients(server.base_url, token=token) as platform:
        request = CreateItemRequest(
            vault_id=VAULT,
            item_id=item_id,
            kind="note",
            encrypted_payload=sealed.encrypted_payload,
            wrapped_keys=sealed.wrapped_keys,
        )
        return (await platform.vault.create_item(request)).item


async def read(server: Server, token: str, item_id: str) -> Item:
    async with clients(server.base_url, token=token) as platform:
        return (await platform.vault.get_item(GetItemRequest(vault_id=VAULT, item_id=item_id))).item


async def update(server: Server, token: str, item: Item, mask: list[str], sealed: Sealed) -> Item:
    async with clients(server.base_url, token=token) as platform:
        request = UpdateItemRequest(
            vault_id=VAULT,
            item_id=item.item_id,
            encrypted_payload=sealed.encrypted_payload,
            wrapped_keys=sealed.wrapped_keys,
            base_version=item.version,
            update_mask=FieldMask(paths=mask),
        )
        return (await platform.vault.update_item(request)).item


async def publish(server: Server, token: str, key: RecipientPrivateKey) -> RecipientKey:
    async with clients(server.base_url, token=token) as platform:
        return await KeyDirectory(platform.directory).publish(key)


def refusal(item: Item, key: RecipientPrivateKey) -> str:
    with pytest.raises(SealingError) as raised:
        open_item(item, key)
    return raised.value.reason


async def test_bob_opens_what_alice_sealed_for_him_until_she_unshares_and_again_once_she_shares(
    server: Server, tokens: dict[str, str]
) -> None:
    alice, bob = tokens["alice"], tokens["bob"]
    alice_key, bob_key = RecipientPrivateKey.generate("X25519"), RecipientPrivateKey.generate("P-256")
    published = await publish(server, bob, bob_key)
    await publish(server, alice, alice_key)
    async with clients(server.base_url, token=alice) as platform:
        directory = KeyDirectory(platform.directory)
        recipients = await directory.recipient_keys(["alice", "bob"])
        alice_only = await directory.recipient_keys(["alice"])
        bob_only = await directory.recipient_keys(["bob"])
    assert {alice_key.key_id, bob_key.key_id} <= ids(recipients)
    assert published.principal_id == "bob"
    assert {k.principal_id for k in alice_only} == {"alice"}

    context = SealContext("acme", VAULT, "sealed-round", "note")
    await create(server, alice, "sealed-round", seal(b"for alice and bob", recipients, context))
    shared = await read(server, bob, "sealed-round")
    unshared = await update(
        server, alice, shared, ["encrypted_payload", "wrapped_keys"], unshare(shared, alice_key, alice_only)
    )
    shut_out = await read(server, bob, "sealed-round")
    again = Sealed(unshared.encrypted_payload, share(unshared, alice_key, bob_only))
    reshared = await update(server, alice, unshared, ["wrapped_keys"], again)
    let_in = await read(server, bob, "sealed-round")

    assert open_item(shared, bob_key) == b"for alice and bob"
    assert refusal(shut_out, bob_key) == "NOT_A_RECIPIENT"
    assert open_item(shut_out, alice_key) == b"for alice and bob"
    assert reshared.encrypted_payload == unshared.encrypted_payload  # sharing sends no ciphertext
    assert open_item(let_in, bob_key) == b"for alice and bob"
    assert open_item(let_in, alice_key) == b"for alice and bob"


async def test_a_revoked_key_is_no_longer_offered(server: Server, tokens: dict[str, str]) -> None:
    bob_key = RecipientPrivateKey.generate()
    await publish(server, tokens["bob"], bob_key)
    async with clients(server.base_url, token=tokens["alice"]) as alice:
        directory = KeyDirectory(alice.directory)
        before = await directory.recipient_keys(["bob"])
        async with clients(server.base_url, token=tokens["bob"]) as bob:
            await bob.directory.revoke_key(RevokeKeyRequest(key_id=bob_key.key_id))
        after = await directory.recipient_keys(["bob"])
        state = await directory.state()

    assert bob_key.key_id in ids(before)
    assert bob_key.key_id not in ids(after)
    assert state.keys[bob_key.key_id].revoked


class AfterFirstAnswer:
    """A connectrpc interceptor that runs `action` right after the first GetRecipientKeys answer,
    before the client verifies the log up to it: a change that lands in between."""

    def __init__(self, action: Callable[[], Awaitable[object]]) -> None:
        self.action = action
        self.ran = False

    async def on_start(self, ctx: RequestContext[Any, Any]) -> None:
        return None

    async def on_end(self, _: None, ctx: RequestContext[Any, Any], error: Exception | None) -> None:
        if ctx.method.name == "GetRecipientKeys" and error is None and not self.ran:
            self.ran = True
            await self.action()


async def test_a_key_revoked_between_an_answer_and_its_verification_is_not_offered(
    server: Server, tokens: dict[str, str]
) -> None:
    bob_key = RecipientPrivateKey.generate()
    await publish(server, tokens["bob"], bob_key)
    async with clients(server.base_url, token=tokens["bob"]) as bob:
        revocation = AfterFirstAnswer(lambda: bob.directory.revoke_key(RevokeKeyRequest(key_id=bob_key.key_id)))
        async with clients(server.base_url, token=tokens["alice"], interceptors=[revocation]) as alice:
            keys = await KeyDirectory(alice.directory).recipient_keys(["bob"])

    assert revocation.ran
    assert bob_key.key_id not in ids(keys)


async def test_another_tenant_s_principals_have_no_keys(server: Server, tokens: dict[str, str]) -> None:
    alice_key = RecipientPrivateKey.generate()
    await publish(server, tokens["alice"], alice_key)
    async with clients(server.base_url, token=tokens["carol"]) as carol:
        directory = KeyDirectory(carol.directory)
        found = await directory.recipient_keys(["alice", "bob"])
        state = await directory.state()

    assert found == []
    assert state.tenant_id in ("", "globex")
    assert alice_key.key_id not in state.keys


# A key log rewritten behind the server's back


def swap_key(db: Path, tenant_id: str, old: str, new_jwk: str, new_key_id: str) -> None:
    """Give the key `old`'s log entries (and its directory row) another key, and chain
    the whole log again from its first entry, head included: a coherent rewrite of the history,
    as a server (or whoever holds its database) that swaps a recipient's key would make."""
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        rows = conn.execute("SELECT entry FROM key_log WHERE tenant_id = ? ORDER BY log_index", (tenant_id,)).fetchall()
        entries = [KeyLogEntry.read(bytes(row[0])) for row in rows]
        rewritten = [
            KeyLogEntry(e.action, e.tenant_id, e.principal_id, new_key_id, new_jwk, e.time) if e.key_id == old else e
            for e in entries
        ]
        for record in appended(EMPTY, tenant_id, rewritten):
            conn.execute(
                "UPDATE key_log SET entry = ?, hash = ? WHERE tenant_id = ? AND log_index = ?",
                (record.data, record.hash, tenant_id, record.index),
            )
        conn.execute("UPDATE key_log_heads SET hash = ? WHERE tenant_id = ?", (record.hash, tenant_id))
        conn.execute(
            "UPDATE recipient_keys SET key_id = ?, jwk = ? WHERE tenant_id = ? AND key_id = ?",
            (new_key_id, new_jwk, tenant_id, old),
        )


async def test_a_log_rewritten_in_the_database_is_refused_on_every_call_after(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/zk.db"
    world = await seed(url)
    alice, bob = world.token("alice"), world.token("bob")
    bob_key, intruder = RecipientPrivateKey.generate(), RecipientPrivateKey.generate()
    state_file = tmp_path / "alice-key-log.json"
    with serving(tmp_path, "--store", url, env=ENV) as server:
        await publish(server, alice, RecipientPrivateKey.generate())
        await publish(server, bob, bob_key)
        async with clients(server.base_url, token=alice) as platform:
            directory = KeyDirectory(platform.directory, FileKeyLogStore(state_file))
            trusted = await directory.recipient_keys(["bob"])
            verified = state_file.read_bytes()

            swap_key(tmp_path / "zk.db", "acme", bob_key.key_id, intruder.public_jwk, intruder.key_id)

            with pytest.raises(KeyLogError) as asked:
                await directory.recipient_keys(["bob"])
            with pytest.raises(KeyLogError) as verifying:
                await directory.verify()
        # A client started again from the same file refuses it too.
        async with clients(server.base_url, token=alice) as platform:
            with pytest.raises(KeyLogError) as restarted:
                await KeyDirectory(platform.directory, FileKeyLogStore(state_file)).recipient_keys(["bob"])
            # Without what it verified before, a client can only trust what it is given.
            first_look = await KeyDirectory(platform.directory).recipient_keys(["bob"])

    dev_key = world.tenants[0].principals[1]["keyId"]  # bob's in the development data set
    assert ids(trusted) == {dev_key, bob_key.key_id}
    assert ids(first_look) == {dev_key, intruder.key_id}  # the server does serve the rewritten log
    assert [asked.value.reason, verifying.value.reason, restarted.value.reason] == ["LOG_FORKED"] * 3
    assert state_file.read_bytes() == verified
    assert json.loads(verified)["size"] == 4  # the development data set's two keys, then the test's
    assert base64.urlsafe_b64decode(json.loads(verified)["hash"] + "=") != bytes(32)
