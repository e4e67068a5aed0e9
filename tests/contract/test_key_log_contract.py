"""Each tenant's key log, on every store alike (KeyLogRepository): appends by compare-and-set on
the log's size, concurrent ones that never leave a gap or a fork, the devices the entries make
and revoke, their audit events and request ids, and the witnesses' cosignatures.

The store keeps entries as opaque bytes (the domain makes and checks them), so the entries here
are any bytes; their leaf hashes are checked against RFC 9162's, computed here."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from tests.actors import OPERATOR
from tests.store.stores import closing
from zkplatform.domain.audit import Action, Actor, ActorKind
from zkplatform.domain.key_log import AddDevice, Cosignature, Device, Leaf, LogChange, RevokeDevices
from zkplatform.domain.models import Principal, Role, Tenant
from zkplatform.domain.ports.refusals import AlreadyExists, UnknownReference
from zkplatform.domain.request_ids import Repeated, RequestId, Reused
from zkplatform.store import MigratableStore, open_store

NOW = 1_800_000_000
ALICE = Actor(ActorKind.PRINCIPAL, NOW, "alice", "tok_alice", "req-1")
_serial = itertools.count()


@pytest.fixture
async def seeded(store: MigratableStore) -> MigratableStore:
    """Two tenants: acme with alice (owner), bob and dave (members); globex with carol."""
    for tenant_id, principals in (("acme", ("alice", "bob", "dave")), ("globex", ("carol",))):
        await store.add_tenant(Tenant(tenant_id), OPERATOR)
        for principal_id in principals:
            role = Role.OWNER if principal_id in ("alice", "carol") else Role.MEMBER
            await store.add_principal(Principal.new(principal_id, tenant_id, role), OPERATOR)
    return store


def device(principal_id: str, tenant_id: str = "acme", *, device_id: str = "", agreement_key_id: str = "") -> Device:
    """A device with key ids of its own (unless given); its log_index is the store's to set."""
    n = next(_serial)
    return Device(
        tenant_id=tenant_id,
        principal_id=principal_id,
        device_id=device_id or f"dev-{n}",
        signing_jwk=f'{{"crv":"Ed25519","kty":"OKP","x":"s{n}"}}',
        agreement_key_id=agreement_key_id or f"agr-{n}",
        agreement_jwk=f'{{"crv":"X25519","kty":"OKP","x":"a{n}"}}',
        endorser="",
        created_at=NOW + n,
        log_index=-1,
    )


def entry_of(change: LogChange) -> bytes:
    """Bytes that stand for the entry of that change (unique per change)."""
    what = change.device.device_id if isinstance(change, AddDevice) else ",".join(change.device_ids)
    return f'{{"change":"{type(change).__name__}","of":"{what}","n":{next(_serial)}}}'.encode()


def leaf_hash(entry: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + entry).digest()


async def append(
    store: MigratableStore,
    size: int,
    change: LogChange,
    *,
    tenant_id: str = "acme",
    actor: Actor = ALICE,
    request: RequestId | None = None,
    entry: bytes | None = None,
) -> int | Repeated[tuple[str, ...]] | Reused | None:
    principal_id = change.device.principal_id if isinstance(change, AddDevice) else change.principal_id
    action = Action.DEVICE_PUBLISHED if isinstance(change, AddDevice) else Action.DEVICE_REVOKED
    return await store.append_key_log(
        tenant_id,
        size,
        entry_of(change) if entry is None else entry,
        change=change,
        event=(action, {"principal": principal_id}),
        actor=actor,
        request=request,
    )


async def add(store: MigratableStore, *devices: Device, tenant_id: str = "acme") -> list[Device]:
    """Append each device at the end of the log; the devices as stored."""
    for d in devices:
        size = await store.key_log_size(tenant_id)
        assert await append(store, size, AddDevice(d), tenant_id=tenant_id) == size + 1
    return [stored for d in devices if (stored := await store.find_device_key(tenant_id, d.device_id)) is not None]


async def whole_log(store: MigratableStore, tenant_id: str = "acme") -> list[Leaf]:
    """The tenant's whole log, after checking that it has no gap and that each leaf hash is its entry's."""
    size = await store.key_log_size(tenant_id)
    leaves = await store.key_log_leaves(tenant_id, 0, size + 10, size + 10)
    assert [leaf.index for leaf in leaves] == list(range(size))
    assert all(leaf.leaf_hash == leaf_hash(leaf.data) for leaf in leaves)
    assert await store.key_log_hashes(tenant_id, size) == [leaf.leaf_hash for leaf in leaves]
    return leaves


async def test_an_append_at_the_logs_size_stores_the_entry_and_its_leaf_hash(seeded: MigratableStore) -> None:
    first, second = AddDevice(device("alice")), AddDevice(device("bob"))

    assert await append(seeded, 0, first, entry="entry zero\x00é".encode()) == 1
    assert await append(seeded, 1, second, entry=b"entry one") == 2

    assert await seeded.key_log_size("acme") == 2
    assert await whole_log(seeded) == [
        # bytes, as given (any UTF-8 text: every entry is canonical JSON)
        Leaf(0, "entry zero\x00é".encode(), hashlib.sha256(b"\x00" + "entry zero\x00é".encode()).digest()),
        Leaf(1, b"entry one", hashlib.sha256(b"\x00entry one").digest()),
    ]


async def test_an_append_at_another_size_changes_nothing(seeded: MigratableStore) -> None:
    (held,) = await add(seeded, device("alice"))
    leaves, head = await whole_log(seeded), await seeded.audit_head("acme")
    late = device("bob")

    assert await append(seeded, 0, AddDevice(late)) is None  # the log moved on since size 0
    assert await append(seeded, 2, AddDevice(late)) is None  # a size the log never had
    assert await append(seeded, 0, RevokeDevices("alice", (held.device_id,), NOW)) is None
    assert await append(seeded, 1, AddDevice(device("carol", "globex")), tenant_id="globex") is None  # empty: 0

    assert await whole_log(seeded) == leaves
    assert await seeded.find_device_key("acme", late.device_id) is None
    assert await seeded.devices("acme") == [held]  # still live
    assert await seeded.audit_head("acme") == head
    assert await seeded.key_log_size("globex") == 0
    assert await seeded.key_log_tenants() == ["acme"]


async def test_concurrent_appends_at_one_size_make_one_entry(seeded: MigratableStore) -> None:
    changes = [AddDevice(device(p)) for p in ("alice", "bob", "dave", "alice", "bob", "dave")]
    entries = [entry_of(c) for c in changes]

    outcomes = await asyncio.gather(*(append(seeded, 0, c, entry=e) for c, e in zip(changes, entries, strict=True)))

    assert sorted(outcomes, key=str) == [1] + [None] * (len(changes) - 1)
    winner = outcomes.index(1)
    assert [leaf.data for leaf in await whole_log(seeded)] == [entries[winner]]
    assert [d.device_id for d in await seeded.devices("acme")] == [changes[winner].device.device_id]


async def appending_until_it_lands(store: MigratableStore, change: AddDevice, entry: bytes) -> int:
    """What a use case does: read the size, append at it, and read again when it moved; the index it landed at."""
    for _ in range(1_000):
        size = await store.key_log_size("acme")
        if await append(store, size, change, entry=entry) == size + 1:
            return size
    pytest.fail("an append never landed")


async def test_concurrent_use_cases_leave_no_gap_and_no_fork(seeded: MigratableStore) -> None:
    changes = [AddDevice(device(p)) for p in ("alice", "bob", "dave") for _ in range(5)]
    entries = [entry_of(c) for c in changes]

    indexes = await asyncio.gather(
        *(appending_until_it_lands(seeded, c, e) for c, e in zip(changes, entries, strict=True))
    )

    leaves = await whole_log(seeded)
    assert sorted(indexes) == list(range(len(changes)))  # one index each
    assert [leaves[i].data for i in indexes] == entries  # each entry where its append said
    stored = {d.device_id: d.log_index for d in await seeded.devices("acme")}
    assert stored == {c.device.device_id: i for c, i in zip(changes, indexes, strict=True)}


@pytest.fixture
async def other(request: pytest.FixtureRequest, seeded: MigratableStore) -> AsyncIterator[MigratableStore]:
    """Another store on the same database: another worker, host or an operator's command."""
    match request.node.callspec.params["store"]:
        case "memory":
            pytest.skip("a memory store is one process's own")
        case "sqlite":
            url = f"sqlite:///{getattr(seeded, '_path')}"  # noqa: B009 # the contract's stores have no URL of their own
        case _:
            url = request.getfixturevalue("postgres_url")
    async with closing(open_store(url)) as opened:
        yield opened


async def test_appends_from_two_stores_on_one_database_never_fork(
    seeded: MigratableStore, other: MigratableStore
) -> None:
    stores = (seeded, other) * 3
    changes = [AddDevice(device(p)) for p in ("alice", "bob", "dave", "alice", "bob", "dave")]

    outcomes = await asyncio.gather(*(append(s, 0, c) for s, c in zip(stores, changes, strict=True)))

    assert sorted(outcomes, key=str) == [1] + [None] * (len(changes) - 1)
    more = [AddDevice(device(p)) for p in ("alice", "bob", "dave") for _ in range(4)]
    entries = [entry_of(c) for c in more]
    indexes = await asyncio.gather(
        *(
            appending_until_it_lands(s, c, e)
            for s, c, e in zip(itertools.cycle((seeded, other)), more, entries, strict=False)
        )
    )
    leaves = await whole_log(seeded)
    assert sorted(indexes) == list(range(1, len(more) + 1))
    assert [leaves[i].data for i in indexes] == entries
    assert await whole_log(other) == leaves
    assert await other.devices("acme") == await seeded.devices("acme")


async def test_an_added_device_is_found_by_either_key_id(seeded: MigratableStore) -> None:
    added = device("alice")

    await append(seeded, 0, AddDevice(added))

    stored = await seeded.find_device_key("acme", added.device_id)
    assert stored is not None
    assert stored == replace(added, log_index=0)
    assert stored.live
    assert await seeded.find_device_key("acme", added.agreement_key_id) == stored
    assert await seeded.find_device_key("acme", "dev-unknown") is None
    assert await seeded.find_device_key("globex", added.device_id) is None
    assert await seeded.devices("acme") == [stored]
    assert await seeded.devices("acme", "alice") == [stored]
    assert await seeded.devices("acme", "bob") == []


async def test_devices_are_listed_by_principal_then_log_index(seeded: MigratableStore) -> None:
    a0, b1, a2, d3, b4 = await add(
        seeded, device("alice"), device("bob"), device("alice"), device("dave"), device("bob")
    )

    assert await seeded.devices("acme") == [a0, a2, b1, b4, d3]
    assert await seeded.devices("acme", "bob") == [b1, b4]
    assert [d.log_index for d in (a0, b1, a2, d3, b4)] == [0, 1, 2, 3, 4]


async def test_live_devices_are_paged_and_read_at_a_size(seeded: MigratableStore) -> None:
    a0, b1, a2, d3, b4 = await add(
        seeded, device("alice"), device("bob"), device("alice"), device("dave"), device("bob")
    )
    assert await append(seeded, 5, RevokeDevices("alice", (a0.device_id,), NOW + 99)) == 6  # entry 5
    principals = ["bob", "alice", "carol", "nobody", "alice", "dave"]

    assert await seeded.live_devices("acme", principals, 6, None, 10) == [a2, b1, b4, d3]
    first = await seeded.live_devices("acme", principals, 6, None, 2)
    second = await seeded.live_devices("acme", principals, 6, (first[-1].principal_id, first[-1].log_index), 2)
    last = await seeded.live_devices("acme", principals, 6, (second[-1].principal_id, second[-1].log_index), 2)
    assert (first, second, last) == ([a2, b1], [b4, d3], [])
    # At size 5 the revocation (entry 5) is not in the log yet; at size 3 neither are d3 and b4.
    # Each device is answered as it is now: a0 with its revocation.
    revoked = await seeded.find_device_key("acme", a0.device_id)
    assert revoked is not None
    assert (revoked.revoked_index, revoked.revoked_at) == (5, NOW + 99)
    assert await seeded.live_devices("acme", principals, 5, None, 10) == [revoked, a2, b1, b4, d3]
    assert await seeded.live_devices("acme", principals, 3, None, 10) == [revoked, a2, b1]
    assert await seeded.live_devices("acme", principals, 0, None, 10) == []
    assert await seeded.live_devices("acme", ["alice"], 6, ("alice", 2), 10) == []
    assert await seeded.live_devices("acme", [], 6, None, 10) == []
    assert await seeded.live_devices("globex", principals, 6, None, 10) == []


async def test_a_revocation_changes_only_the_principals_live_devices(seeded: MigratableStore) -> None:
    a0, a1, b2, a3 = await add(seeded, device("alice"), device("alice"), device("bob"), device("alice"))
    assert await append(seeded, 4, RevokeDevices("alice", (a1.device_id,), NOW + 10)) == 5

    # A reset of alice's devices also names bob's device and a revoked one: neither changes.
    everything = (a0.device_id, a1.device_id, b2.device_id, a3.device_id, "dev-unknown")
    assert await append(seeded, 5, RevokeDevices("alice", everything, NOW + 20), actor=OPERATOR) == 6

    assert await seeded.devices("acme", "alice") == [
        replace(a0, revoked_at=NOW + 20, revoked_index=5),
        replace(a1, revoked_at=NOW + 10, revoked_index=4),
        replace(a3, revoked_at=NOW + 20, revoked_index=5),
    ]
    assert await seeded.devices("acme", "bob") == [b2]
    assert not any(d.live for d in await seeded.devices("acme", "alice"))


async def test_a_taken_key_id_is_refused_and_nothing_is_appended(seeded: MigratableStore) -> None:
    (held,) = await add(seeded, device("alice"))
    leaves, head = await whole_log(seeded), await seeded.audit_head("acme")

    for taken in (
        device("bob", device_id=held.device_id),
        device("bob", agreement_key_id=held.agreement_key_id),
        device("alice", device_id=held.agreement_key_id),  # one key id names one device, whichever kind
    ):
        with pytest.raises(AlreadyExists, match="already"):
            await append(seeded, 1, AddDevice(taken))

    assert await whole_log(seeded) == leaves
    assert await seeded.audit_head("acme") == head
    assert await seeded.devices("acme") == [held]
    # Another tenant is another directory: the same keys are free there.
    assert await append(seeded, 0, AddDevice(device("carol", "globex", device_id=held.device_id)), tenant_id="globex")


async def test_a_device_of_a_principal_of_another_tenant_is_refused(seeded: MigratableStore) -> None:
    for principal_id in ("carol", "nobody"):
        with pytest.raises(UnknownReference):
            await append(seeded, 0, AddDevice(device(principal_id)))

    assert await seeded.key_log_size("acme") == 0
    assert await seeded.devices("acme") == []


async def test_an_append_is_audited_with_its_event(seeded: MigratableStore) -> None:
    before = len(await seeded.audit_records("acme", 0, 10_000))
    added = device("bob")

    assert await append(seeded, 1, AddDevice(added)) is None
    assert len(await seeded.audit_records("acme", 0, 10_000)) == before  # no append, no event
    await seeded.append_key_log(
        "acme",
        0,
        b"entry",
        change=AddDevice(added),
        event=(Action.DEVICE_PUBLISHED, {"principal": "bob", "device": added.device_id}),
        actor=ALICE,
    )

    records = await seeded.audit_records("acme", 0, 10_000)
    assert len(records) == before + 1
    last = records[-1].exported()
    assert (last["action"], last["target"], last["actor"]["principal"]) == (
        Action.DEVICE_PUBLISHED.value,
        {"device": added.device_id, "principal": "bob"},
        "alice",
    )


# Request ids (AIP-155)

FIRST, SECOND = "9b2f61d4-3c1e-4b8a-a7d0-5e6f1c2b3a49", "0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"


def request(value: str, entry: bytes) -> RequestId:
    """The request id of a call that appends that entry (its fingerprint stands for what the call asked)."""
    return RequestId(value, hashlib.sha256(entry).digest())


async def test_a_request_id_names_one_append(seeded: MigratableStore) -> None:
    await add(seeded, device("bob"), device("bob"))
    change, other = AddDevice(device("alice")), AddDevice(device("alice"))
    entry, other_entry = entry_of(change), entry_of(other)
    assert await append(seeded, 2, change, entry=entry, request=request(FIRST, entry)) == 3
    leaves, head = await whole_log(seeded), await seeded.audit_head("acme")

    again = await append(seeded, 3, change, entry=entry, request=request(FIRST, entry))
    at_old_size = await append(seeded, 2, change, entry=entry, request=request(FIRST, entry))
    reused = await append(seeded, 3, other, entry=other_entry, request=request(FIRST, other_entry))

    assert again == at_old_size == Repeated(("2",))  # the entry's index
    assert reused == Reused()
    assert await whole_log(seeded) == leaves
    assert await seeded.audit_head("acme") == head
    assert await seeded.find_device_key("acme", other.device.device_id) is None


async def test_a_failed_append_records_no_request_id(seeded: MigratableStore) -> None:
    (held,) = await add(seeded, device("alice"))
    moved, taken = AddDevice(device("alice")), AddDevice(device("bob", device_id=held.device_id))
    moved_entry, taken_entry = entry_of(moved), entry_of(taken)

    assert await append(seeded, 0, moved, entry=moved_entry, request=request(FIRST, moved_entry)) is None
    with pytest.raises(AlreadyExists):
        await append(seeded, 1, taken, entry=taken_entry, request=request(SECOND, taken_entry))

    # Each id runs again as new: the first appends; the second, with another request, is no reuse.
    assert await append(seeded, 1, moved, entry=moved_entry, request=request(FIRST, moved_entry)) == 2
    revocation = RevokeDevices("alice", (held.device_id,), NOW)
    revocation_entry = entry_of(revocation)
    assert (
        await append(
            seeded,
            2,
            revocation,
            entry=revocation_entry,
            request=request(SECOND, revocation_entry),
            actor=ALICE,
        )
        == 3
    )


async def test_request_ids_are_per_principal(seeded: MigratableStore) -> None:
    bob = Actor(ActorKind.PRINCIPAL, NOW, "bob", "tok_bob")
    alices, bobs = AddDevice(device("alice")), AddDevice(device("bob"))
    alices_entry, bobs_entry = entry_of(alices), entry_of(bobs)

    assert await append(seeded, 0, alices, entry=alices_entry, request=request(FIRST, alices_entry)) == 1
    assert await append(seeded, 1, bobs, entry=bobs_entry, request=request(FIRST, bobs_entry), actor=bob) == 2


async def test_concurrent_appends_with_one_request_id_apply_once(seeded: MigratableStore) -> None:
    change = AddDevice(device("alice"))
    entry = entry_of(change)

    outcomes = await asyncio.gather(
        *(append(seeded, 0, change, entry=entry, request=request(FIRST, entry)) for _ in range(6))
    )

    assert sorted(outcomes, key=str) == [1] + [Repeated(("0",))] * 5
    assert [leaf.data for leaf in await whole_log(seeded)] == [entry]


# Reading the log


async def test_leaves_and_hashes_are_read_within_their_bounds(seeded: MigratableStore) -> None:
    await add(seeded, *(device("alice") for _ in range(5)))
    whole = await whole_log(seeded)

    assert await seeded.key_log_leaves("acme", 1, 2, 5) == whole[1:3]
    assert await seeded.key_log_leaves("acme", 2, 10, 4) == whole[2:4]  # below the size
    assert await seeded.key_log_leaves("acme", 0, 10, 100) == whole
    assert await seeded.key_log_leaves("acme", 5, 10, 5) == []
    assert await seeded.key_log_leaves("acme", 3, 10, 2) == []
    assert await seeded.key_log_leaves("acme", 0, 10, 0) == []
    assert await seeded.key_log_leaves("globex", 0, 10, 5) == []
    assert await seeded.key_log_hashes("acme", 3) == [leaf.leaf_hash for leaf in whole[:3]]
    assert await seeded.key_log_hashes("acme", 100) == [leaf.leaf_hash for leaf in whole]
    assert await seeded.key_log_hashes("acme", 0) == []
    assert await seeded.key_log_hashes("globex", 3) == []


async def test_key_log_tenants_are_those_with_an_entry(seeded: MigratableStore) -> None:
    assert await seeded.key_log_tenants() == []

    await add(seeded, device("carol", "globex"), tenant_id="globex")
    await add(seeded, device("alice"))
    assert await append(seeded, 3, AddDevice(device("bob"))) is None

    assert await seeded.key_log_tenants() == ["acme", "globex"]


async def test_tenants_logs_are_their_own(seeded: MigratableStore) -> None:
    (alices,) = await add(seeded, device("alice"))
    (carols,) = await add(seeded, device("carol", "globex"), tenant_id="globex")

    assert (await seeded.key_log_size("acme"), await seeded.key_log_size("globex")) == (1, 1)
    assert alices.log_index == carols.log_index == 0
    assert await seeded.devices("globex") == [carols]
    assert await seeded.find_device_key("globex", alices.agreement_key_id) is None
    assert await seeded.live_devices("globex", ["alice", "carol"], 1, None, 10) == [carols]
    assert (await whole_log(seeded, "acme"))[0] != (await whole_log(seeded, "globex"))[0]


# Cosignatures


def cosignature(size: int, witness: str, at: int = NOW, tenant_id: str = "acme") -> Cosignature:
    return Cosignature(tenant_id, size, witness, at, f"— {witness} {witness}{size}at{at}\n")


async def test_the_served_checkpoint_is_the_newest_a_quorum_cosigned(seeded: MigratableStore) -> None:
    await add(seeded, *(device("alice") for _ in range(6)))
    for c in (cosignature(3, "A"), cosignature(5, "A"), cosignature(3, "B"), cosignature(5, "C"), cosignature(6, "C")):
        await seeded.save_cosignature(c)

    assert await seeded.served_checkpoint("acme", ["A", "B"], 2) == (3, [cosignature(3, "A"), cosignature(3, "B")])
    assert await seeded.served_checkpoint("acme", ["A", "B"], 1) == (5, [cosignature(5, "A")])
    # Only the named witnesses count: C's cosignatures of 5 and 6 make no quorum of A and B.
    assert await seeded.served_checkpoint("acme", ["B", "A", "B"], 2) == (3, [cosignature(3, "A"), cosignature(3, "B")])
    assert await seeded.served_checkpoint("acme", ["A", "B", "C"], 2) == (5, [cosignature(5, "A"), cosignature(5, "C")])
    assert await seeded.served_checkpoint("acme", ["A", "B", "C"], 3) == (0, [])
    assert await seeded.served_checkpoint("acme", ["A", "B"], 3) == (0, [])
    assert await seeded.served_checkpoint("acme", [], 1) == (0, [])
    assert await seeded.served_checkpoint("globex", ["A", "B"], 1) == (0, [])
    assert await seeded.witness_sizes("acme") == {"A": 5, "B": 3, "C": 6}
    assert await seeded.witness_sizes("globex") == {}


async def test_a_quorum_of_zero_serves_the_current_size(seeded: MigratableStore) -> None:
    assert await seeded.served_checkpoint("acme", ["A"], 0) == (0, [])
    await add(seeded, *(device("alice") for _ in range(4)))
    for c in (cosignature(3, "A"), cosignature(4, "B"), cosignature(4, "C")):
        await seeded.save_cosignature(c)

    assert await seeded.served_checkpoint("acme", ["A", "B"], 0) == (4, [cosignature(4, "B")])
    assert await seeded.served_checkpoint("acme", ["A"], 0) == (4, [])
    assert await seeded.served_checkpoint("acme", [], 0) == (4, [])
    assert await seeded.served_checkpoint("globex", ["B"], 0) == (0, [])


async def test_a_newer_cosignature_replaces_an_older_one(seeded: MigratableStore) -> None:
    await add(seeded, *(device("alice") for _ in range(2)))
    await seeded.save_cosignature(cosignature(2, "A", NOW))

    await seeded.save_cosignature(cosignature(2, "A", NOW + 300))
    await seeded.save_cosignature(cosignature(2, "A", NOW + 100))  # older than the one held: changes nothing
    await seeded.save_cosignature(cosignature(2, "A", NOW + 300, "globex"))

    assert await seeded.served_checkpoint("acme", ["A"], 1) == (2, [cosignature(2, "A", NOW + 300)])
    assert await seeded.served_checkpoint("globex", ["A"], 1) == (2, [cosignature(2, "A", NOW + 300, "globex")])


async def test_an_older_checkpoint_keeps_its_quorum_as_newer_ones_are_cosigned(seeded: MigratableStore) -> None:
    await add(seeded, *(device("alice") for _ in range(7)))
    # B is slow: its cosignature of 3 lands after A's of 5 and 7, and C's of 7.
    for c in (cosignature(3, "A"), cosignature(5, "A"), cosignature(7, "A"), cosignature(7, "C"), cosignature(3, "B")):
        await seeded.save_cosignature(c)

    assert await seeded.served_checkpoint("acme", ["A", "B"], 2) == (3, [cosignature(3, "A"), cosignature(3, "B")])
    assert await seeded.served_checkpoint("acme", ["A", "B", "C"], 2) == (7, [cosignature(7, "A"), cosignature(7, "C")])
    assert await seeded.served_checkpoint("acme", ["A", "B"], 2) == (3, [cosignature(3, "A"), cosignature(3, "B")])
    assert await seeded.witness_sizes("acme") == {"A": 7, "B": 3, "C": 7}
