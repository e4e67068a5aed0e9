"""Sealed items and the key directory of the Python package against a real `zkplatform serve`:
alice seals for the devices the log she verified holds, bob's laptop (endorsed by his phone)
opens and is told alice's device sealed it, unsharing shuts him out and sharing lets him in
again, each write signed for the version it creates; a revoked device is no longer sealed for,
and what it sealed before opens answered as revoked; the server's own changes to a stored item
(a recipient added, an older payload served again) are refused; another tenant's principals
have none; and a key log rewritten in the database behind the server's back is refused, on
every call after and after a restart, with the verified state left as it was."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.field_mask_pb2 import FieldMask

from tests.clients.conftest import dev_device, dev_policy, dev_principals, verified_until
from tests.clients.sealing_support import TESTDATA
from tests.e2e.server import Server, serving
from tests.e2e.test_durable import ENV, seed
from zkplatform_api.platform.v1.vault_pb2 import CreateItemRequest, GetItemRequest, Item, UpdateItemRequest
from zkplatform_client import (
    DeviceKeyPair,
    FileKeyLogStore,
    KeyDirectory,
    KeyLogError,
    KeyLogState,
    Me,
    MemoryKeyLogStore,
    Opened,
    RecipientKey,
    RecipientPrivateKey,
    SealContext,
    Sealed,
    SealedBy,
    SealingError,
    TrustPolicy,
    clients,
    open_item,
    seal,
    share,
    unshare,
)
from zkplatform_tlog.merkle import leaf_hash
from zkplatform_tlog.statements import Entry, EntrySignature, b64url_decode

pytestmark = pytest.mark.e2e  # starts servers (tests/conftest.py marks only tests/e2e by place)

VAULT = "acme-shared"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("sealing"), "--dev") as server:
        yield server


@pytest.fixture(scope="module")
def credentials(server: Server) -> Path:
    return server.log_path.parent / "var" / "dev-credentials.json"


@pytest.fixture(scope="module")
def principals(credentials: Path) -> dict[str, dict[str, Any]]:
    return dev_principals(credentials)


def flat(found: dict[str, list[RecipientKey]]) -> list[RecipientKey]:
    return [key for keys in found.values() for key in keys]


def ids(keys: list[RecipientKey]) -> set[str]:
    return {key.key_id for key in keys}


async def verified(server: Server, credentials: Path, principal: dict[str, Any]) -> KeyLogState:
    """The key log as the principal's demo device verified it: what it opens items against."""
    async with clients(server.base_url, token=principal["token"]) as platform:
        return await directory_of(platform, credentials, principal).verify()


def directory_of(platform: Any, credentials: Path, principal: dict[str, Any]) -> KeyDirectory:
    return KeyDirectory(
        platform.directory,
        principal["tenantId"],
        dev_policy(credentials),
        MemoryKeyLogStore(),
        me=Me(principal["principalId"]),
        device=dev_device(principal),
    )


async def keys_of(server: Server, credentials: Path, principal: dict[str, Any], asked: list[str]) -> list[RecipientKey]:
    """What the principal's demo device seals for, from the log it verified."""
    async with clients(server.base_url, token=principal["token"]) as platform:
        return flat(await directory_of(platform, credentials, principal).recipient_keys(asked))


async def new_device_of_bob(server: Server, credentials: Path, bob: dict[str, Any]) -> DeviceKeyPair:
    """A laptop of bob's, endorsed by his demo phone."""
    laptop, phone = DeviceKeyPair.generate("P-256"), dev_device(bob)
    async with clients(server.base_url, token=bob["token"]) as platform:
        directory = KeyDirectory(
            platform.directory, "acme", dev_policy(credentials), MemoryKeyLogStore(), me=Me("bob"), device=phone
        )
        await directory.add_device(laptop.device_statement("acme", "bob", endorser=phone.device_id), phone)
        await verified_until(directory, lambda state: laptop.device_id in state.devices)
    return laptop


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


def refusal(item: Item, key: RecipientPrivateKey, state: KeyLogState) -> str:
    with pytest.raises(SealingError) as raised:
        open_item(item, key, state)
    return raised.value.reason


async def test_bob_opens_what_alice_sealed_for_him_until_she_unshares_and_again_once_she_shares(
    server: Server, credentials: Path, principals: dict[str, Any]
) -> None:
    alice, bob = principals["alice"], principals["bob"]
    laptop_keys = await new_device_of_bob(server, credentials, bob)
    laptop = laptop_keys.recipient_key()
    alices_device = dev_device(alice)
    alice_key = alices_device.recipient_key()
    recipients = await keys_of(server, credentials, alice, ["alice", "bob"])
    alice_only = await keys_of(server, credentials, alice, ["alice"])
    bob_only = await keys_of(server, credentials, alice, ["bob"])
    assert {alice_key.key_id, laptop.key_id, bob["keyId"]} <= ids(recipients)
    assert {key.principal_id for key in alice_only} == {"alice"}
    alices_log, bobs_log = await verified(server, credentials, alice), await verified(server, credentials, bob)

    context = SealContext("acme", VAULT, "sealed-round", "note")
    sealed = seal(b"for alice and bob", recipients, context, alices_device)
    await create(server, alice["token"], "sealed-round", sealed)
    shared = await read(server, bob["token"], "sealed-round")
    sealed_again = unshare(shared, alice_key, alice_only, alices_device, alices_log)
    unshared = await update(server, alice["token"], shared, ["encrypted_payload", "wrapped_keys"], sealed_again)
    shut_out = await read(server, bob["token"], "sealed-round")
    again = share(unshared, alice_key, bob_only, alices_device, alices_log)
    reshared = await update(server, alice["token"], unshared, ["encrypted_payload", "wrapped_keys"], again)
    let_in = await read(server, bob["token"], "sealed-round")

    by_alice = SealedBy("alice", alices_device.device_id, live=True)
    assert open_item(shared, laptop, bobs_log) == Opened(b"for alice and bob", 2, by_alice)
    assert refusal(shut_out, laptop, bobs_log) == "NOT_A_RECIPIENT"
    assert open_item(shut_out, alice_key, alices_log).plaintext == b"for alice and bob"
    assert (sealed_again.version, again.version, reshared.version) == (2, 3, 3)
    assert reshared.encrypted_payload.ciphertext == unshared.encrypted_payload.ciphertext  # no new ciphertext
    assert open_item(let_in, laptop, bobs_log) == Opened(b"for alice and bob", 2, by_alice)
    assert open_item(let_in, alice_key, alices_log).sealed_by == by_alice


async def test_what_a_writer_changes_behind_the_sealer_s_back_does_not_open(
    server: Server, credentials: Path, principals: dict[str, Any]
) -> None:
    """A token with write access to the vault (alice's own here) stands for a server that
    rewrites what it stores: version 1's payload written again over version 2 (a replay), and a
    wrapped key for bob added to the keys alice signed (through UpdateItem, which moves the
    version too, so no single cause is told: SIGNATURE_INVALID)."""
    alice = principals["alice"]
    alices_device = dev_device(alice)
    key = alices_device.recipient_key()
    alices_log = await verified(server, credentials, alice)
    alice_only = await keys_of(server, credentials, alice, ["alice"])
    context = SealContext("acme", VAULT, "rewritten", "note")
    first = seal(b"version 1", alice_only, context, alices_device)
    created = await create(server, alice["token"], "rewritten", first)
    second = await update(server, alice["token"], created, ["encrypted_payload", "wrapped_keys"],
                          unshare(created, key, alice_only, alices_device, alices_log))  # fmt: skip
    replayed = await update(server, alice["token"], second, ["encrypted_payload", "wrapped_keys"], first)
    restored = await update(server, alice["token"], replayed, ["encrypted_payload", "wrapped_keys"],
                            share(second, key, [], alices_device, alices_log, version=4))  # fmt: skip
    for_bob = share(restored, key, await keys_of(server, credentials, alice, ["bob"]), alices_device, alices_log)
    added = await update(server, alice["token"], restored, ["wrapped_keys"], for_bob)  # the old signature kept

    assert (created.version, second.version, replayed.version, restored.version, added.version) == (1, 2, 3, 4, 5)
    assert refusal(replayed, key, alices_log) == "VERSION_MISMATCH"
    assert open_item(restored, key, alices_log).plaintext == b"version 1"
    assert refusal(added, key, alices_log) == "SIGNATURE_INVALID"


async def test_a_revoked_device_is_no_longer_sealed_for_and_what_it_sealed_opens_as_revoked(
    server: Server, credentials: Path, principals: dict[str, Any]
) -> None:
    bob, alice = principals["bob"], principals["alice"]
    laptop = await new_device_of_bob(server, credentials, bob)
    before = await keys_of(server, credentials, alice, ["bob"])
    for_alice = await keys_of(server, credentials, bob, ["alice"])
    context = SealContext("acme", VAULT, "from-bobs-laptop", "note")
    await create(server, bob["token"], context.item_id, seal(b"from the laptop", for_alice, context, laptop))
    phone = dev_device(bob)
    async with clients(server.base_url, token=bob["token"]) as platform:
        directory = KeyDirectory(
            platform.directory, "acme", dev_policy(credentials), MemoryKeyLogStore(), me=Me("bob"), device=phone
        )
        await directory.revoke_device(laptop.device_id, phone)
        await verified_until(directory, lambda state: not state.devices[laptop.device_id].live)
    after = await keys_of(server, credentials, alice, ["bob"])
    written = await read(server, alice["token"], context.item_id)
    opened = open_item(written, dev_device(alice).recipient_key(), await verified(server, credentials, alice))

    assert opened == Opened(b"from the laptop", 2, SealedBy("bob", laptop.device_id, live=False))
    assert laptop.agreement_key_id in ids(before)
    assert laptop.agreement_key_id not in ids(after)
    assert bob["keyId"] in ids(after)


async def test_another_tenant_s_principals_have_no_keys(
    server: Server, credentials: Path, principals: dict[str, Any]
) -> None:
    carol = principals["carol"]
    async with clients(server.base_url, token=carol["token"]) as platform:
        directory = KeyDirectory(platform.directory, "globex", dev_policy(credentials), MemoryKeyLogStore())
        found = await directory.recipient_keys(["alice", "bob", "carol"])
        state = await directory.state()

    assert state is not None
    assert {principal: [k.key_id for k in keys] for principal, keys in found.items()} == {
        "alice": [],
        "bob": [],
        "carol": [carol["keyId"]],
    }
    assert state.principals() == ["carol"]


# A key log rewritten behind the server's back


def swap_device(db: Path, tenant_id: str, device_id: str, intruder: DeviceKeyPair) -> None:
    """Give the entry that published `device_id` (a first device) the intruder's keys instead, its
    leaf hash and its device row with it: a coherent rewrite of the history, as a server (or
    whoever holds its database) that swaps a recipient's device would make."""
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        row = conn.execute(
            "SELECT log_index, principal_id, created_at FROM devices WHERE tenant_id = ? AND device_id = ?",
            (tenant_id, device_id),
        ).fetchone()
        index, principal_id, created = row
        statement = intruder.first_device_statement(tenant_id, principal_id, created)
        data = Entry(statement.statement, (EntrySignature(intruder.device_id, statement.signature),)).canonical()
        conn.execute(
            "UPDATE key_log_entries SET data = ?, leaf_hash = ? WHERE tenant_id = ? AND idx = ?",
            (data, leaf_hash(data), tenant_id, index),
        )
        conn.execute(
            "UPDATE devices SET device_id = ?, signing_jwk = ?, agreement_key_id = ?, agreement_jwk = ?"
            " WHERE tenant_id = ? AND device_id = ?",
            (
                intruder.device_id,
                intruder.signing_jwk,
                intruder.agreement_key_id,
                intruder.agreement_jwk,
                tenant_id,
                device_id,
            ),
        )


async def test_a_log_rewritten_in_the_database_is_refused_on_every_call_after(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/zk.db"
    world = await seed(url)
    bob = next(p for t in world.tenants for p in t.principals if p["principalId"] == "bob")
    intruder = DeviceKeyPair.generate()
    state_file = tmp_path / "alice-key-log.json"
    with serving(tmp_path, "--store", url, env=ENV) as server:
        # No witness here: the log key alone, which the server made beside its database.
        log_key = (tmp_path / "zk.db.log-key.pub").read_text().strip()
        policy = TrustPolicy([log_key], [], 0, allow_no_witnesses=True)
        async with clients(server.base_url, token=world.token("alice")) as platform:
            directory = KeyDirectory(platform.directory, "acme", policy, FileKeyLogStore(state_file))
            trusted = flat(await directory.recipient_keys(["bob"]))
            verified = state_file.read_bytes()

            swap_device(tmp_path / "zk.db", "acme", bob["deviceId"], intruder)

            with pytest.raises(KeyLogError) as asked:
                await directory.recipient_keys(["bob"])
            with pytest.raises(KeyLogError) as verifying:
                await directory.verify()
        # A client started again from the same file refuses it too.
        async with clients(server.base_url, token=world.token("alice")) as platform:
            with pytest.raises(KeyLogError) as restarted:
                await KeyDirectory(platform.directory, "acme", policy, FileKeyLogStore(state_file)).verify()
            # Without what it verified before, a client can only trust what it is given.
            first_look = flat(
                await KeyDirectory(platform.directory, "acme", policy, MemoryKeyLogStore()).recipient_keys(["bob"])
            )

    assert ids(trusted) == {bob["keyId"]}
    assert ids(first_look) == {intruder.agreement_key_id}  # the server does serve the rewritten log
    assert [asked.value.reason, verifying.value.reason, restarted.value.reason] == ["LOG_FORKED"] * 3
    assert state_file.read_bytes() == verified
    assert json.loads(verified)["checkpoint"]["size"] == 3  # the development data set's three devices


async def test_a_version_1_item_on_the_server_opens_unsigned_and_sharing_it_writes_version_2(
    server: Server, credentials: Path, principals: dict[str, Any]
) -> None:
    """sealed-python.json's version 1 item sealed for all four test keys, stored through the API
    as a client of the previous release stored it: it opens, answered unsigned; shared (with
    bob's demo device), it is sealed again in version 2, signed by alice's device."""
    document = json.loads((TESTDATA / "sealed-python.json").read_text())
    vector = next(v for v in document["vectors"] if v["name"] == "sealed for all four keys, opened with p256-a")
    old = json_format.ParseDict(vector["item"], Item())
    test_key = RecipientPrivateKey.from_jwk(json.loads((TESTDATA / "recipients.json").read_text())["keys"]["p256-a"])
    alice, bob = principals["alice"], principals["bob"]
    alices_device = dev_device(alice)
    alices_log, bobs_log = await verified(server, credentials, alice), await verified(server, credentials, bob)
    stored = await create(server, alice["token"], old.item_id, Sealed(old.encrypted_payload, list(old.wrapped_keys)))
    for_bob = await keys_of(server, credentials, alice, ["bob"])
    shared = share(stored, test_key, for_bob, alices_device, alices_log)
    updated = await update(server, alice["token"], stored, ["encrypted_payload", "wrapped_keys"], shared)

    assert open_item(stored, test_key, alices_log) == Opened(b64url_decode(vector["plaintext"]), 1, None)
    assert (updated.version, updated.encrypted_payload.version) == (2, 2)
    by_alice = SealedBy("alice", alices_device.device_id, live=True)
    assert open_item(updated, dev_device(bob).recipient_key(), bobs_log) == Opened(
        b64url_decode(vector["plaintext"]), 2, by_alice
    )
    assert open_item(updated, test_key, alices_log).sealed_by == by_alice  # the sharer's own key kept
