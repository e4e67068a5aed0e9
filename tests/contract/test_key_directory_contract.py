"""The key directory and each tenant's key log, on every store alike: publications and
revocations, the log's chain and head, and concurrent changes that never fork the chain."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from joserfc import jwk

from tests.actors import OPERATOR
from tests.store.stores import closing
from zkplatform.domain.audit import GENESIS, Action, Actor, ActorKind, chain
from zkplatform.domain.key_log import EMPTY, KeyLogAction, KeyLogCheck, KeyLogEntry, KeyLogHead, KeyLogRecord
from zkplatform.domain.models import Principal, Role, Tenant
from zkplatform.domain.recipient_keys import RecipientKey, public_key
from zkplatform.domain.request_ids import RequestId, Reused
from zkplatform.repository import KeyChange, UnknownReference
from zkplatform.store import MigratableStore, open_store

NOW = 1_800_000_000
ALICE = Actor(ActorKind.PRINCIPAL, NOW, "alice", "tok_alice", "req-1")


def new_jwk(kind: str = "X25519") -> str:
    """A fresh public key's JWK text, as a client would send it."""
    key = jwk.OKPKey.generate_key("X25519") if kind == "X25519" else jwk.ECKey.generate_key("P-256")
    return json.dumps(key.as_dict(private=False))


def recipient_key(principal_id: str, tenant_id: str = "acme", at: int = NOW, text: str | None = None) -> RecipientKey:
    public = public_key(text or new_jwk())
    return RecipientKey(public.key_id, tenant_id, principal_id, public.jwk, at)


@pytest.fixture
async def seeded(store: MigratableStore) -> MigratableStore:
    """Two tenants: acme with alice (owner), bob and dave (members); globex with carol."""
    for tenant_id, principals in (("acme", ("alice", "bob", "dave")), ("globex", ("carol",))):
        await store.add_tenant(Tenant(tenant_id), OPERATOR)
        for principal_id in principals:
            role = Role.OWNER if principal_id in ("alice", "carol") else Role.MEMBER
            await store.add_principal(Principal.new(principal_id, tenant_id, role), OPERATOR)
    return store


async def publish(
    store: MigratableStore, key: RecipientKey, actor: Actor, request: RequestId | None = None
) -> KeyChange:
    """A publication that is no reuse of a request id: its KeyChange."""
    change = await store.publish_key(key, actor, request)
    assert isinstance(change, KeyChange)
    return change


async def log_of(store: MigratableStore, tenant_id: str) -> tuple[list[KeyLogRecord], KeyLogHead]:
    """The tenant's whole key log, after checking that it chains up to its head."""
    records, head = await store.key_log(tenant_id, 0, 10_000)
    check = KeyLogCheck(tenant_id)
    for record in records:
        assert check.check(record) is None
    assert check.finish(head) is None
    return records, head


async def test_a_published_key_is_stored_logged_and_audited(seeded: MigratableStore) -> None:
    key = recipient_key("alice")

    change = await publish(seeded, key, ALICE)

    entry = KeyLogEntry(KeyLogAction.PUBLISHED, "acme", "alice", key.key_id, key.jwk, NOW)
    assert change.changed
    assert change.key == key
    assert change.head == KeyLogHead(1, chain(GENESIS, entry.canonical()))
    assert await seeded.get_key("acme", key.key_id) == key
    records, head = await log_of(seeded, "acme")
    assert [(r.index, r.entry) for r in records] == [(1, entry)]
    assert head == change.head
    last = (await seeded.audit_records("acme", 0, 10_000))[-1].exported()
    assert (last["action"], last["target"], last["actor"]["principal"]) == (
        Action.KEY_PUBLISHED.value,
        {"key": key.key_id, "principal": "alice"},
        "alice",
    )


async def test_publishing_the_same_key_again_changes_nothing(seeded: MigratableStore) -> None:
    key = recipient_key("alice")
    first = await publish(seeded, key, ALICE)
    events = (await seeded.audit_head("acme"), await seeded.key_log("acme", 0, 100))

    again = await publish(seeded, RecipientKey(key.key_id, "acme", "alice", key.jwk, NOW + 60), ALICE)

    assert not again.changed
    assert again.key == key  # as first published: created_at too
    assert again.head == first.head
    assert (await seeded.audit_head("acme"), await seeded.key_log("acme", 0, 100)) == events


async def test_a_key_held_by_another_principal_is_answered_not_taken(seeded: MigratableStore) -> None:
    key = recipient_key("alice")
    await publish(seeded, key, ALICE)

    taken = await publish(seeded, RecipientKey(key.key_id, "acme", "bob", key.jwk, NOW), OPERATOR)

    assert not taken.changed
    assert taken.key.principal_id == "alice"
    assert (await log_of(seeded, "acme"))[1].size == 1


async def test_tenants_hold_keys_and_logs_of_their_own(seeded: MigratableStore) -> None:
    text = new_jwk()
    acme, globex = recipient_key("alice", text=text), recipient_key("carol", "globex", text=text)

    assert (await publish(seeded, acme, ALICE)).changed
    in_globex = await publish(seeded, globex, OPERATOR)

    assert in_globex.changed
    assert in_globex.head.size == 1
    assert await seeded.get_key("globex", acme.key_id) == globex
    assert await seeded.find_keys(acme.key_id) == [acme, globex]
    assert await seeded.get_key("acme", "x" * 43) is None


async def test_a_key_of_a_principal_of_another_tenant_is_refused(seeded: MigratableStore) -> None:
    with pytest.raises(UnknownReference):
        await publish(seeded, recipient_key("carol", "acme"), OPERATOR)
    with pytest.raises(UnknownReference):
        await publish(seeded, recipient_key("nobody"), OPERATOR)

    assert await seeded.key_log("acme", 0, 10) == ([], EMPTY)


async def test_a_revoked_key_is_logged_audited_and_no_longer_live(seeded: MigratableStore) -> None:
    kept, revoked = recipient_key("alice"), recipient_key("alice", at=NOW + 1)
    await publish(seeded, kept, ALICE)
    await publish(seeded, revoked, ALICE)

    change = await seeded.revoke_key("acme", revoked.key_id, Actor.operator(NOW + 30))

    assert change is not None
    assert change.changed
    assert change.key == revoked.revoked(NOW + 30)
    records, head = await log_of(seeded, "acme")
    assert change.head == head
    assert head.size == 3
    assert records[-1].entry == KeyLogEntry(
        KeyLogAction.REVOKED, "acme", "alice", revoked.key_id, revoked.jwk, NOW + 30
    )
    assert await seeded.live_keys("acme", ["alice"]) == ([kept], head)
    assert await seeded.list_keys("acme", "alice") == [kept, revoked.revoked(NOW + 30)]
    last = (await seeded.audit_records("acme", 0, 10_000))[-1].exported()
    assert (last["action"], last["target"], last["actor"]) == (
        Action.KEY_REVOKED.value,
        {"key": revoked.key_id, "principal": "alice"},
        {"kind": "operator"},
    )


async def test_revoking_a_revoked_key_answers_it_unchanged(seeded: MigratableStore) -> None:
    key = recipient_key("alice")
    await publish(seeded, key, ALICE)
    first = await seeded.revoke_key("acme", key.key_id, Actor.operator(NOW + 30))

    again = await seeded.revoke_key("acme", key.key_id, Actor.operator(NOW + 90))

    assert first is not None
    assert again is not None
    assert not again.changed
    assert again.key == first.key
    assert again.head == first.head
    assert (await log_of(seeded, "acme"))[1].size == 2


async def test_revoking_an_unknown_or_another_tenants_key_finds_none(seeded: MigratableStore) -> None:
    carols = recipient_key("carol", "globex")
    await publish(seeded, carols, OPERATOR)

    assert await seeded.revoke_key("acme", carols.key_id, OPERATOR) is None
    assert await seeded.revoke_key("acme", "x" * 43, OPERATOR) is None
    assert (await seeded.get_key("globex", carols.key_id)) == carols
    assert await seeded.key_log("acme", 0, 10) == ([], EMPTY)


async def test_live_keys_are_those_of_the_tenants_named_principals(seeded: MigratableStore) -> None:
    alices = [recipient_key("alice", at=NOW + n) for n in (2, 1)]
    bobs, carols = recipient_key("bob"), recipient_key("carol", "globex")
    for key in (*alices, bobs, carols):
        await publish(seeded, key, OPERATOR)

    keys, head = await seeded.live_keys("acme", ["bob", "alice", "carol", "nobody", "alice"])

    assert keys == [alices[1], alices[0], bobs]  # by principal, then oldest first
    assert head == (await log_of(seeded, "acme"))[1]
    assert await seeded.live_keys("acme", ["dave"]) == ([], head)
    assert await seeded.live_keys("nowhere", ["alice"]) == ([], EMPTY)
    assert await seeded.list_keys("acme", None) == [alices[1], alices[0], bobs]


async def test_the_log_is_read_in_pages_after_an_index(seeded: MigratableStore) -> None:
    keys = [recipient_key("alice", at=NOW + n) for n in range(5)]
    for key in keys:
        await publish(seeded, key, ALICE)
    await seeded.revoke_key("acme", keys[0].key_id, Actor.operator(NOW + 10))
    whole, head = await log_of(seeded, "acme")

    page, page_head = await seeded.key_log("acme", 2, 3)

    assert [r.index for r in page] == [3, 4, 5]
    assert page == whole[2:5]
    assert page_head == head == whole[-1].head
    assert [r.entry.action for r in whole] == [KeyLogAction.PUBLISHED] * 5 + [KeyLogAction.REVOKED]
    assert await seeded.key_log("acme", 6, 10) == ([], head)
    assert await seeded.key_log("acme", 60, 10) == ([], head)


async def test_concurrent_publications_of_one_tenant_make_one_unforked_log(seeded: MigratableStore) -> None:
    keys = [recipient_key(p, at=NOW + n) for n in range(8) for p in ("alice", "bob", "dave")]

    changes = await asyncio.gather(*(publish(seeded, key, OPERATOR) for key in keys))

    records, head = await log_of(seeded, "acme")
    assert head.size == len(keys)
    assert sorted(c.head.size for c in changes) == list(range(1, len(keys) + 1))  # one index each
    assert {r.entry.key_id for r in records} == {k.key_id for k in keys}
    assert {(r.index, r.hash) for r in records} == {(c.head.size, c.head.hash) for c in changes}


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


async def test_concurrent_changes_from_two_stores_on_one_database_never_fork(
    seeded: MigratableStore, other: MigratableStore
) -> None:
    first = [recipient_key("alice", at=NOW + n) for n in range(10)]
    second = [recipient_key("bob", at=NOW + n) for n in range(10)]
    shared = recipient_key("dave")

    changes = await asyncio.gather(
        *(publish(seeded, key, OPERATOR) for key in first),
        *(publish(other, key, OPERATOR) for key in second),
        *(publish(store, shared, OPERATOR) for store in (seeded, other, seeded, other)),
    )

    assert sum(change.changed for change in changes) == len(first) + len(second) + 1  # the shared key once
    records, head = await log_of(seeded, "acme")
    assert head.size == len(first) + len(second) + 1
    assert await other.key_log("acme", 0, 10_000) == (records, head)
    revocations = await asyncio.gather(
        *(store.revoke_key("acme", shared.key_id, OPERATOR) for store in (seeded, other, seeded))
    )
    assert sum(r is not None and r.changed for r in revocations) == 1
    assert (await log_of(other, "acme"))[1].size == head.size + 1


# Request ids (AIP-155)

FIRST, SECOND = "9b2f61d4-3c1e-4b8a-a7d0-5e6f1c2b3a49", "0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"


def request(value: str, key: RecipientKey) -> RequestId:
    """The request id of a PublishKey call of that key (its fingerprint stands for what the call asked)."""
    return RequestId(value, key.jwk.encode())


async def test_a_request_id_names_one_publication(seeded: MigratableStore) -> None:
    key, other_key = recipient_key("alice"), recipient_key("alice")
    first = await publish(seeded, key, ALICE, request(FIRST, key))
    log = await seeded.key_log("acme", 0, 100)

    again = await publish(seeded, key, ALICE, request(FIRST, key))
    reused = await seeded.publish_key(other_key, ALICE, request(FIRST, other_key))

    assert first.changed
    assert not first.repeated
    assert (again.key, again.head, again.changed, again.repeated) == (key, first.head, False, True)
    assert reused == Reused()
    assert await seeded.get_key("acme", other_key.key_id) is None
    assert await seeded.key_log("acme", 0, 100) == log


async def test_request_ids_are_per_principal_and_failures_record_nothing(seeded: MigratableStore) -> None:
    alices, bobs = recipient_key("alice"), recipient_key("bob")
    bob = Actor(ActorKind.PRINCIPAL, NOW, "bob", "tok_bob")
    await publish(seeded, alices, ALICE, request(FIRST, alices))
    taken = RecipientKey(alices.key_id, "acme", "bob", alices.jwk, NOW)

    refused = await publish(seeded, taken, bob, request(SECOND, taken))  # alice's key: the directory refuses it
    own = await publish(seeded, bobs, bob, request(FIRST, bobs))  # alice's id, bob's own
    after_refusal = await publish(seeded, bobs, bob, request(SECOND, bobs))

    assert (refused.changed, refused.key.principal_id) == (False, "alice")
    assert own.changed
    assert (after_refusal.changed, after_refusal.repeated) == (False, False)  # SECOND was not recorded


async def test_a_request_id_is_forgotten_after_24_hours(seeded: MigratableStore) -> None:
    key, later_key = recipient_key("alice"), recipient_key("alice", at=NOW + 86_400)
    await publish(seeded, key, ALICE, request(FIRST, key))
    later = Actor(ActorKind.PRINCIPAL, NOW + 86_400, "alice", "tok_alice")

    assert (await publish(seeded, later_key, later, request(FIRST, later_key))).changed


async def test_concurrent_publications_with_one_request_id_apply_once(seeded: MigratableStore) -> None:
    keys = [recipient_key("alice") for _ in range(6)]

    outcomes = await asyncio.gather(*(seeded.publish_key(key, ALICE, request(FIRST, key)) for key in keys))

    published = [o for o in outcomes if isinstance(o, KeyChange)]
    assert len(published) == 1
    assert published[0].changed
    assert outcomes.count(Reused()) == len(keys) - 1
    assert (await log_of(seeded, "acme"))[1].size == 1
