"""The Python package's KeyDirectory against a server that lies (tests/clients/lying_server.py, in
process): every page read, the state saved only after a whole verification passed, a file
store that survives a restart and then refuses a rollback, this device's own changes raising
no alert and another's raising one, GetRecipientKeys only ever refusing, resets held until
acknowledged; and the parts under it (TrustPolicy, DeviceKeyPair, the state file)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.clients.lying_server import LOG, T0, TENANT, WITNESSES, LyingDirectory
from zkplatform_api.platform.v1 import directory_pb2
from zkplatform_api.platform.v1.vault_pb2 import Item
from zkplatform_client import (
    Alert,
    DeviceKeyPair,
    DeviceStatement,
    FileKeyLogStore,
    KeyDirectory,
    KeyLogError,
    KeyLogStore,
    Me,
    MemoryKeyLogStore,
    Opened,
    Reset,
    SealedBy,
    TrustPolicy,
    endorse,
    open_item,
    seal,
)
from zkplatform_client.key_log_store import format_state, parse_state
from zkplatform_client.sealing import SealContext
from zkplatform_tlog.note import generate_cosigner_key, generate_signer_key
from zkplatform_tlog.statements import Entry, EntrySignature

POLICY = TrustPolicy([LOG.verifier().vkey()], [w.verifier().vkey() for w in WITNESSES], 2)


class Clock:
    def __init__(self) -> None:
        self.now = float(T0)

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def server(clock: Clock) -> LyingDirectory:
    return LyingDirectory(clock)


def directory(
    server: LyingDirectory,
    store: KeyLogStore,
    *,
    me: Me | None = None,
    device: DeviceKeyPair | None = None,
    on_alert: Callable[[Alert], object] | None = None,
) -> KeyDirectory:
    return KeyDirectory(
        server.client(), TENANT, POLICY, store, me=me, device=device, clock=server.clock, on_alert=on_alert
    )


def entry(statement: DeviceStatement) -> Entry:
    keys = statement.statement
    signatures = [EntrySignature(keys.device_id, statement.signature)]
    if statement.endorsement:
        signatures.append(EntrySignature(keys.endorser, statement.endorsement))
    return Entry(keys, tuple(signatures))


def first(device: DeviceKeyPair, principal_id: str) -> Entry:
    return entry(device.first_device_statement(TENANT, principal_id, T0 - 100))


def endorsed(device: DeviceKeyPair, principal_id: str, endorser: DeviceKeyPair) -> Entry:
    statement = device.device_statement(TENANT, principal_id, endorser=endorser.device_id, created=T0 - 50)
    return entry(endorse(statement, endorser))


def revoked(revoker: DeviceKeyPair, principal_id: str, device: DeviceKeyPair) -> Entry:
    revocation = revoker.revocation(TENANT, principal_id, device.device_id, T0 - 10)
    return Entry(revocation.statement, (EntrySignature(revoker.device_id, revocation.signature),))


def key_ids(found: dict[str, list[Any]]) -> dict[str, list[str]]:
    return {principal: [key.key_id for key in keys] for principal, keys in found.items()}


async def refused(call: Any) -> str:
    with pytest.raises(KeyLogError) as raised:
        await call
    return raised.value.reason


# Reading and keeping the log


async def test_verify_reads_every_page_and_keeps_the_whole_log(server: LyingDirectory, tmp_path: Path) -> None:
    alice, bob, bob2 = DeviceKeyPair.generate(), DeviceKeyPair.generate(), DeviceKeyPair.generate("P-256")
    for made in (first(alice, "alice"), first(bob, "bob"), endorsed(bob2, "bob", bob), revoked(bob, "bob", bob2)):
        server.append(made)
    server.page_size = 1
    store = FileKeyLogStore(tmp_path / "key-log.json")

    state = await directory(server, store).verify()
    saved = store.load()

    assert server.calls == ["ListKeyLog"] * 4
    assert state.size == 4
    assert saved == state
    assert [d.device_id for d in state.live_devices("bob")] == [bob.device_id]
    assert json.loads((tmp_path / "key-log.json").read_text())["version"] == 2


async def test_a_file_store_survives_a_restart_and_then_refuses_a_rollback(
    server: LyingDirectory, tmp_path: Path
) -> None:
    """The issue's "restart with the default state refusing a rollback": bob's revocation of his
    second device, hidden again by a log cut back to before it."""
    alice, bob, bob2 = DeviceKeyPair.generate(), DeviceKeyPair.generate(), DeviceKeyPair.generate()
    for made in (first(alice, "alice"), first(bob, "bob"), endorsed(bob2, "bob", bob), revoked(bob, "bob", bob2)):
        server.append(made)
    path = tmp_path / "key-log.json"
    before = await directory(server, FileKeyLogStore(path)).recipient_keys(["bob"])
    verified = path.read_bytes()

    server.served_size = 3  # the revocation gone
    restarted = directory(server, FileKeyLogStore(path))
    kept = await restarted.state()
    reasons = [await refused(restarted.verify()), await refused(restarted.recipient_keys(["bob"]))]
    forgetful = await directory(server, MemoryKeyLogStore()).recipient_keys(["bob"])

    assert key_ids(before) == {"bob": [bob.agreement_key_id]}
    assert kept is not None
    assert kept.size == 4
    assert reasons == ["LOG_TRUNCATED", "LOG_TRUNCATED"]
    assert path.read_bytes() == verified
    # What a client that keeps its state in memory only would seal for after a restart:
    assert key_ids(forgetful) == {"bob": [bob.agreement_key_id, bob2.agreement_key_id]}


async def test_a_fork_is_refused_on_every_call_and_the_state_kept(server: LyingDirectory, tmp_path: Path) -> None:
    alice, bob, intruder = DeviceKeyPair.generate(), DeviceKeyPair.generate(), DeviceKeyPair.generate()
    server.append(first(alice, "alice"))
    server.append(first(bob, "bob"))
    path = tmp_path / "key-log.json"
    keys = directory(server, FileKeyLogStore(path))
    await keys.verify()
    verified = path.read_bytes()

    server.entries[1] = first(intruder, "bob").canonical().decode()  # bob's first device swapped
    server.append(first(DeviceKeyPair.generate(), "carol"))
    reasons = [await refused(keys.verify()), await refused(keys.recipient_keys(["bob"]))]
    restarted = await refused(directory(server, FileKeyLogStore(path)).verify())

    assert reasons == ["LOG_FORKED", "LOG_FORKED"]
    assert restarted == "LOG_FORKED"
    assert path.read_bytes() == verified


async def test_a_page_without_entries_that_is_not_the_last_is_refused(server: LyingDirectory) -> None:
    server.append(first(DeviceKeyPair.generate(), "alice"))
    server.page_size = 0  # every page empty, each with a next page token

    assert await refused(directory(server, MemoryKeyLogStore()).verify()) == "LOG_GAP"


async def test_pages_that_run_past_their_checkpoint_are_not_followed(server: LyingDirectory) -> None:
    for _ in range(3):
        server.append(first(DeviceKeyPair.generate(), "alice"))
    server.served_size = 1
    server.page_size = 1
    server.list_past_size = True

    assert await refused(directory(server, MemoryKeyLogStore()).verify()) == "LOG_GAP"
    assert server.calls == ["ListKeyLog", "ListKeyLog"]


# This device's own changes, and another's


async def test_this_device_s_own_changes_raise_no_alert_and_another_s_do(
    server: LyingDirectory, tmp_path: Path
) -> None:
    phone, laptop = DeviceKeyPair.generate(), DeviceKeyPair.generate()
    path = tmp_path / "bob-key-log.json"
    told: list[Alert] = []
    bob = directory(server, FileKeyLogStore(path), me=Me("bob"), device=phone, on_alert=told.append)
    server.append(first(DeviceKeyPair.generate(), "alice"))

    await bob.publish_first_device(phone)
    await bob.verify()
    shown = laptop.device_statement(TENANT, "bob", endorser=phone.device_id)  # the laptop's, shown to the phone
    await bob.add_device(shown, phone)
    await bob.verify()
    await bob.revoke_device(laptop.device_id, phone)
    own = await bob.verify()
    # Someone else with the phone's key (stolen) revokes the phone.
    stolen = server.append(revoked(phone, "bob", phone))
    await bob.verify()
    restarted = directory(server, FileKeyLogStore(path), me=Me("bob"), device=phone)
    pending = await restarted.alerts()
    await restarted.acknowledge_alert(stolen)

    assert own.size == 4
    assert [d.device_id for d in own.live_devices("bob")] == [phone.device_id]
    assert told == [Alert(stolen, "DEVICE_REVOKED", phone.device_id)]
    assert pending == told
    assert await directory(server, FileKeyLogStore(path), me=Me("bob")).alerts() == []
    with pytest.raises(ValueError, match="no pending alert"):
        await restarted.acknowledge_alert(stolen)


async def test_a_device_the_server_published_in_place_of_bob_s_first_alerts_bob(server: LyingDirectory) -> None:
    """Bob's first publication is recorded before it is sent: the device the server put there
    first (and that made the real server refuse bob's) is an alert, not history."""
    phone, servers = DeviceKeyPair.generate(), DeviceKeyPair.generate()
    intruded = server.append(first(servers, "bob"))
    told: list[Alert] = []
    bob = directory(server, MemoryKeyLogStore(), me=Me("bob"), device=phone, on_alert=told.append)

    before = await bob.verify()
    await bob.publish_first_device(phone)  # this lying server takes it; its entry is then refused
    reason = await refused(bob.verify())

    assert before.alerts == ()
    assert reason == "NOT_ENDORSED"
    assert told == []  # nothing alerted yet: the log is refused
    server.entries.pop()
    await bob.verify()
    assert told == [Alert(intruded, "DEVICE_ADDED", servers.device_id)]


async def test_an_async_alert_handler_is_awaited(server: LyingDirectory) -> None:
    phone = DeviceKeyPair.generate()
    server.append(first(phone, "bob"))
    revoked_elsewhere = server.append(revoked(phone, "bob", phone))
    told: list[Alert] = []

    async def tell(alert: Alert) -> None:
        told.append(alert)

    bob = directory(server, MemoryKeyLogStore(), me=Me("bob"), device=phone, on_alert=tell)
    await bob.verify()

    assert told == [Alert(revoked_elsewhere, "DEVICE_REVOKED", phone.device_id)]


# Recipient keys


async def test_recipient_keys_come_from_the_verified_log_and_made_up_answers_are_refused(
    server: LyingDirectory,
) -> None:
    alice, bob, bob2, stranger = (DeviceKeyPair.generate() for _ in range(4))
    for made in (first(alice, "alice"), first(bob, "bob"), endorsed(bob2, "bob", bob), revoked(bob, "bob", bob2)):
        server.append(made)
    keys = directory(server, MemoryKeyLogStore())
    truthful = await keys.recipient_keys(["alice", "bob", "alice"])
    live = server.live_devices(4)

    lies = {
        "a device the log does not have": [*live, _device(stranger, "bob")],
        "a revoked device": [*live, _device(bob2, "bob")],
        "bob's device as alice's": [_device(bob, "alice")],
        "a principal not asked for": [_device(alice, "alice")],
        "a device answered twice": [*live, *live],
    }
    reasons = {}
    for lie, answer in lies.items():
        server.recipient_answer = answer
        asked = ["bob"] if lie == "a principal not asked for" else ["alice", "bob"]
        reasons[lie] = await refused(keys.recipient_keys(asked))

    assert key_ids(truthful) == {"alice": [alice.agreement_key_id], "bob": [bob.agreement_key_id]}
    assert all(key.device_id == bob.device_id for key in truthful["bob"])
    assert reasons == dict.fromkeys(lies, "KEY_NOT_LIVE")


async def test_a_device_that_lands_between_the_listing_and_the_answer_is_verified_before_use(
    server: LyingDirectory,
) -> None:
    alice, bob, bob2 = DeviceKeyPair.generate(), DeviceKeyPair.generate(), DeviceKeyPair.generate()
    for made in (first(alice, "alice"), first(bob, "bob"), endorsed(bob2, "bob", bob)):
        server.append(made)
    server.served_size = 2

    def land() -> None:
        server.served_size = None  # bob's second device, cosigned right after the first listing
        server.after_list = None

    server.after_list = land
    found = await directory(server, MemoryKeyLogStore()).recipient_keys(["bob"])

    assert key_ids(found) == {"bob": [bob.agreement_key_id, bob2.agreement_key_id]}
    assert server.calls == ["ListKeyLog", "GetRecipientKeys", "ListKeyLog", "GetRecipientKeys"]


async def test_an_answer_beyond_the_verified_log_is_not_used(server: LyingDirectory) -> None:
    bob, bob2 = DeviceKeyPair.generate(), DeviceKeyPair.generate()
    server.append(first(bob, "bob"))
    server.append(endorsed(bob2, "bob", bob))
    server.served_size = 1
    server.recipient_size = 2  # a GetRecipientKeys answer ahead of every listing

    found = await directory(server, MemoryKeyLogStore()).recipient_keys(["bob"])

    assert key_ids(found) == {"bob": [bob.agreement_key_id]}


async def test_a_reset_is_refused_until_acknowledged_and_the_acknowledgement_is_kept(
    server: LyingDirectory, tmp_path: Path
) -> None:
    alice, bob, bob_again = DeviceKeyPair.generate(), DeviceKeyPair.generate(), DeviceKeyPair.generate()
    server.append(first(alice, "alice"))
    server.append(first(bob, "bob"))
    at = server.reset("bob")
    server.append(first(bob_again, "bob"))
    path = tmp_path / "alice-key-log.json"
    keys = directory(server, FileKeyLogStore(path), me=Me("alice"), device=alice)

    reason = await refused(keys.recipient_keys(["bob"]))
    state = await keys.state()
    with pytest.raises(ValueError, match="no unacknowledged reset"):
        await keys.acknowledge_reset("bob", at + 1)
    await keys.acknowledge_reset("bob", at)
    after = await directory(server, FileKeyLogStore(path), me=Me("alice")).recipient_keys(["bob"])

    assert reason == "RESET_UNACKNOWLEDGED"
    assert state is not None
    assert state.unacknowledged_resets == (Reset("bob", at),)
    assert key_ids(after) == {"bob": [bob_again.agreement_key_id]}


async def test_sealing_for_the_verified_keys_opens_with_the_device_s_agreement_key(server: LyingDirectory) -> None:
    bob = DeviceKeyPair.generate("P-256")
    server.append(first(bob, "bob"))
    verified = directory(server, MemoryKeyLogStore())
    found = await verified.recipient_keys(["bob"])
    context = SealContext(TENANT, "acme-shared", "item-1", "note")
    sealed = seal(b"for bob's device", found["bob"], context, bob)

    opened = open_item(
        Item(
            tenant_id=TENANT,
            vault_id="acme-shared",
            item_id="item-1",
            kind="note",
            version=1,
            encrypted_payload=sealed.encrypted_payload,
            wrapped_keys=sealed.wrapped_keys,
        ),
        bob.recipient_key(),
        await verified.verify(),
    )
    assert opened == Opened(b"for bob's device", 2, SealedBy("bob", bob.device_id, live=True))


# What a KeyDirectory is made of


def test_a_device_needs_its_principal(server: LyingDirectory) -> None:
    with pytest.raises(ValueError, match="principal"):
        directory(server, MemoryKeyLogStore(), device=DeviceKeyPair.generate())


async def test_publishing_needs_this_device_s_principal(server: LyingDirectory) -> None:
    with pytest.raises(ValueError, match="principal"):
        await directory(server, MemoryKeyLogStore()).publish_first_device(DeviceKeyPair.generate())


async def test_a_store_of_another_tenant_or_principal_is_refused(server: LyingDirectory) -> None:
    server.append(first(DeviceKeyPair.generate(), "alice"))
    store = MemoryKeyLogStore()
    await directory(server, store, me=Me("alice")).verify()
    other = KeyDirectory(server.client(), "globex", POLICY, store, clock=server.clock)

    with pytest.raises(ValueError, match="tenant acme"):
        await other.verify()
    with pytest.raises(ValueError, match="principal alice"):
        await directory(server, store, me=Me("bob")).verify()


def _device(keys: DeviceKeyPair, principal_id: str) -> directory_pb2.Device:
    return directory_pb2.Device(
        device_id=keys.device_id,
        tenant_id=TENANT,
        principal_id=principal_id,
        signing_jwk=keys.signing_jwk,
        agreement_key_id=keys.agreement_key_id,
        agreement_jwk=keys.agreement_jwk,
    )


# TrustPolicy


def _witnesses(count: int) -> list[str]:
    return [generate_cosigner_key(f"w{n}.test")[1] for n in range(count)]


@pytest.mark.parametrize(
    ("witnesses", "quorum", "allow", "message"),
    [
        (0, 0, False, "quorum of 0"),
        (1, 0, True, "quorum of 0"),
        (2, 3, False, "from 1 to the 2"),
        (2, -1, False, "from 1 to the 2"),
        (0, 1, False, "from 1 to the 0"),
    ],
)
def test_a_policy_s_quorum_is_within_its_witnesses(witnesses: int, quorum: int, allow: bool, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TrustPolicy([LOG.verifier().vkey()], _witnesses(witnesses), quorum, allow_no_witnesses=allow)


def test_a_policy_without_witnesses_is_said_so() -> None:
    policy = TrustPolicy([LOG.verifier().vkey()], [], 0, allow_no_witnesses=True)
    assert policy.quorum == 0


@pytest.mark.parametrize(
    ("log_keys", "witnesses", "message"),
    [
        ([], [], "at least one log key"),
        (["not a key"], [], "key"),
        ([generate_cosigner_key("w.test")[1]], [], "signature type"),  # a witness key given as a log key
        ([LOG.verifier().vkey(), LOG.verifier().vkey()], [], "twice"),
    ],
)
def test_a_policy_s_keys_are_checked(log_keys: list[str], witnesses: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TrustPolicy(log_keys, witnesses, 0, allow_no_witnesses=True)


def test_a_witness_given_twice_and_an_age_of_zero_are_refused() -> None:
    witness = generate_cosigner_key("w.test")[1]
    with pytest.raises(ValueError, match="twice"):
        TrustPolicy([LOG.verifier().vkey()], [witness, witness], 1)
    with pytest.raises(ValueError, match="positive"):
        TrustPolicy([LOG.verifier().vkey()], [witness], 1, max_age_seconds=0)
    with pytest.raises(ValueError, match="signature type"):
        TrustPolicy([LOG.verifier().vkey()], [generate_signer_key("log.test")[1]], 1)


# DeviceKeyPair


@pytest.mark.parametrize("curve", ["X25519", "P-256"])
def test_a_device_s_keys_go_to_and_from_jwks(curve: Any) -> None:
    keys = DeviceKeyPair.generate(curve)
    saved = json.loads(json.dumps(keys.to_jwks()))
    as_text = {name: json.dumps(jwk) for name, jwk in saved.items()}

    again = DeviceKeyPair.from_jwks(saved["signingKeyJwk"], saved["privateKeyJwk"])
    from_text = DeviceKeyPair.from_jwks(as_text["signingKeyJwk"], as_text["privateKeyJwk"])

    assert (again.device_id, again.agreement_jwk) == (keys.device_id, keys.agreement_jwk)
    assert from_text.to_jwks() == keys.to_jwks()
    assert again.recipient_key().key_id == keys.agreement_key_id
    assert json.loads(keys.agreement_jwk)["crv"] == curve
    assert saved["signingKeyJwk"]["d"] not in repr(keys)
    assert repr(keys) == f"DeviceKeyPair(device_id={keys.device_id!r})"


def test_a_jwk_whose_public_part_is_another_key_s_is_refused() -> None:
    keys, other = DeviceKeyPair.generate(), DeviceKeyPair.generate()
    saved, others = keys.to_jwks(), other.to_jwks()

    with pytest.raises(ValueError, match="signing key"):
        DeviceKeyPair.from_jwks({**saved["signingKeyJwk"], "x": others["signingKeyJwk"]["x"]}, saved["privateKeyJwk"])
    with pytest.raises(ValueError, match="agreement key"):
        DeviceKeyPair.from_jwks(saved["signingKeyJwk"], {**saved["privateKeyJwk"], "x": others["privateKeyJwk"]["x"]})
    with pytest.raises(ValueError, match="Ed25519"):
        DeviceKeyPair.from_jwks(saved["privateKeyJwk"], saved["privateKeyJwk"])
    with pytest.raises(ValueError, match="X25519"):
        DeviceKeyPair.from_jwks(saved["signingKeyJwk"], saved["signingKeyJwk"])


def test_an_endorsement_is_only_of_what_the_new_device_signed_and_names_the_endorser() -> None:
    phone, laptop, other = DeviceKeyPair.generate(), DeviceKeyPair.generate(), DeviceKeyPair.generate()
    shown = laptop.device_statement(TENANT, "bob", endorser=phone.device_id)
    forged = DeviceStatement(shown.statement, other.sign(shown.statement))

    with pytest.raises(ValueError, match="endorser"):
        endorse(shown, other)
    with pytest.raises(ValueError, match="signature"):
        endorse(forged, phone)
    assert endorse(shown, phone).endorsement


# The state file


async def test_the_state_file_reads_back_what_it_wrote_and_refuses_what_it_did_not(
    server: LyingDirectory, tmp_path: Path
) -> None:
    bob = DeviceKeyPair.generate()
    server.append(first(bob, "bob"))
    server.reset("bob")
    state = await directory(server, MemoryKeyLogStore(), me=Me("alice", ["x" * 43], ["{}"])).verify()
    text = format_state(state)
    document = json.loads(text)

    assert parse_state(text) == state
    with pytest.raises(ValueError, match="version 1"):
        parse_state(json.dumps({"version": 1, "tenantId": "acme", "size": 0, "hash": "A" * 43, "keys": {}}))
    with pytest.raises(ValueError, match="not a key log state file"):
        parse_state(json.dumps({**document, "format": "something else"}))
    with pytest.raises(ValueError, match="do not make its checkpoint"):
        parse_state(json.dumps({**document, "entries": document["entries"][:1]}))
    with pytest.raises(ValueError, match="incomplete"):
        parse_state(json.dumps({k: v for k, v in document.items() if k != "alerts"}))
    with pytest.raises(ValueError, match="not JSON"):
        parse_state("{")
    assert FileKeyLogStore(tmp_path / "none.json").load() is None
