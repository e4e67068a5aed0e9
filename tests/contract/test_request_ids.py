"""The repository contract of request ids (AIP-155): every store records a successful write's
answer under its principal's request id in the write's own transaction, answers a repeat
from it within 24 hours however the state moved on, refuses the id for another request, and
applies concurrent calls with one id once."""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import replace

import pytest

from tests.actors import OPERATOR
from tests.store.stores import closing
from zkplatform.domain.audit import Actor, ActorKind
from zkplatform.domain.models import (
    EncryptedPayload,
    Item,
    ItemChange,
    ItemContent,
    ItemPatch,
    Principal,
    Role,
    Scope,
    Tenant,
    TokenRecord,
    Vault,
    WrappedKey,
)
from zkplatform.domain.ports.items import Conflict, Created, Existing, Missing, Stale
from zkplatform.domain.request_ids import RETENTION_SECONDS, Repeated, RequestId, Reused
from zkplatform.store import MigratableStore, open_store

NOW = 1_800_000_000
ID_A = "0b5c3a52-8d0e-4f3a-9c1b-6d7e8f9a0b1c"
ID_B = "7f3e2d1c-0b9a-4876-a543-21fedcba9876"


def asked(request_id: str, what: str) -> RequestId:
    """A request id for a request the test names: one name, one fingerprint."""
    return RequestId(request_id, hashlib.sha256(what.encode()).digest())


def by(principal_id: str, at: int = NOW) -> Actor:
    return Actor(ActorKind.PRINCIPAL, at, principal_id, f"tok-{principal_id}")


def content(tag: str) -> ItemContent:
    return ItemContent(
        kind="note",
        title_hash=f"th-{tag}",
        payload=EncryptedPayload("A256GCM", f"bm9uY2U{tag}", "YWFk", f"Y2lwaGVy{tag}", 2),
        wrapped_keys=(WrappedKey("p1", "ECDH-ES+A256KW", f"a2V5{tag}"),),
    )


def patch(tag: str) -> ItemPatch:
    """An update of the whole content, as one without a field mask writes."""
    return ItemPatch.replacing(content(tag))


def new(item_id: str, tag: str = "a", now: int = NOW) -> Item:
    return content(tag).new_item(item_id, "t1", "v1", now)


def minted(token_id: str) -> TokenRecord:
    return TokenRecord(
        token_id=token_id,
        secret_hash=token_id.encode().ljust(32, b"\0"),
        tenant_id="t1",
        principal_id="p1",
        scopes=frozenset({Scope.VAULT_ITEMS_READ}),
        issued_at=NOW,
        expires_at=NOW + 600,
        minted=True,
        parent_token_id="root",
    )


@pytest.fixture
async def seeded(store: MigratableStore) -> MigratableStore:
    await store.add_tenant(Tenant("t1"), OPERATOR)
    await store.add_principal(Principal("p1", "t1", Role.OWNER, Role.OWNER.default_scopes), OPERATOR)
    await store.add_principal(Principal("p2", "t1", Role.OWNER, Role.OWNER.default_scopes), OPERATOR)
    await store.add_vault(Vault("v1", "t1", frozenset({"p1", "p2"})), OPERATOR)
    await store.add_items([new("i1", now=NOW - 100)], OPERATOR)
    root = replace(minted("root"), minted=False, parent_token_id="", expires_at=NOW + 3600)
    await store.add_token(root, OPERATOR)
    return store


# items


async def test_an_update_repeated_after_a_later_update_answers_as_it_first_did(seeded: MigratableStore) -> None:
    first = await seeded.update_item("v1", "i1", 1, patch("b"), by("p1"), request=asked(ID_A, "update b"))
    assert isinstance(first, ItemChange)
    await seeded.update_item("v1", "i1", 2, patch("c"), by("p1", NOW + 5), request=asked(ID_B, "update c"))

    repeat = await seeded.update_item("v1", "i1", 1, patch("b"), by("p1", NOW + 10), request=asked(ID_A, "update b"))

    assert repeat == Repeated(first)
    assert await seeded.vault_sequence("v1") == 3
    assert await seeded.get_item("v1", "i1") == replace(new("i1", tag="c", now=NOW + 5), version=3)


async def test_a_create_repeated_after_an_update_answers_as_it_first_did(seeded: MigratableStore) -> None:
    first = await seeded.create_item(new("n1"), by("p1"), request=asked(ID_A, "create n1"))
    assert first == Created(ItemChange(new("n1"), 2))
    await seeded.update_item("v1", "n1", 1, patch("b"), by("p1", NOW + 5))

    repeat = await seeded.create_item(new("n1", now=NOW + 10), by("p1", NOW + 10), request=asked(ID_A, "create n1"))

    assert repeat == Repeated(first.change)
    assert await seeded.vault_sequence("v1") == 3


async def test_a_delete_repeated_answers_its_tombstone_and_changes_nothing(seeded: MigratableStore) -> None:
    first = await seeded.delete_item("v1", "i1", 1, by("p1"), request=asked(ID_A, "delete i1"))
    assert isinstance(first, ItemChange)

    repeat = await seeded.delete_item("v1", "i1", 1, by("p1", NOW + 10), request=asked(ID_A, "delete i1"))

    assert repeat == Repeated(first)
    assert await seeded.vault_sequence("v1") == 2


async def test_the_same_id_for_another_request_is_refused_and_changes_nothing(seeded: MigratableStore) -> None:
    await seeded.update_item("v1", "i1", 1, patch("b"), by("p1"), request=asked(ID_A, "update b"))

    other_content = await seeded.update_item("v1", "i1", 2, patch("c"), by("p1"), request=asked(ID_A, "update c"))
    other_method = await seeded.create_item(new("n1"), by("p1"), request=asked(ID_A, "create n1"))
    other_kind = await seeded.add_minted_token(minted("m1"), 50, by("p1"), request=asked(ID_A, "mint"))

    assert other_content == other_method == other_kind == Reused()
    assert await seeded.vault_sequence("v1") == 2
    assert await seeded.get_item("v1", "n1") is None
    assert await seeded.get_token("m1") is None


async def test_another_principals_id_is_its_own(seeded: MigratableStore) -> None:
    await seeded.update_item("v1", "i1", 1, patch("b"), by("p1"), request=asked(ID_A, "update b"))

    # The same id and request from p2: not a repeat of p1's call, so it runs (and conflicts).
    theirs = await seeded.update_item("v1", "i1", 1, patch("b"), by("p2"), request=asked(ID_A, "update b"))
    created = await seeded.create_item(new("n1"), by("p2"), request=asked(ID_A, "create n1"))

    assert isinstance(theirs, Conflict)
    assert created == Created(ItemChange(new("n1"), 3))


async def test_a_failed_call_records_nothing(seeded: MigratableStore) -> None:
    request = asked(ID_A, "update n1")
    assert await seeded.update_item("v1", "n1", 1, patch("b"), by("p1"), request=request) == Missing()
    assert isinstance(await seeded.delete_item("v1", "i1", 7, by("p1"), request=asked(ID_B, "del")), Stale)
    await seeded.create_item(new("n1"), OPERATOR)

    again = await seeded.update_item("v1", "n1", 1, patch("b"), by("p1", NOW + 1), request=request)

    assert again == ItemChange(replace(new("n1", tag="b", now=NOW + 1), version=2), 3)


async def test_a_record_answers_for_24_hours_only(seeded: MigratableStore) -> None:
    request = asked(ID_A, "update b")
    first = await seeded.update_item("v1", "i1", 1, patch("b"), by("p1"), request=request)
    assert isinstance(first, ItemChange)
    last_second = NOW + RETENTION_SECONDS - 1

    assert await seeded.update_item("v1", "i1", 1, patch("b"), by("p1", last_second), request=request) == Repeated(
        first
    )
    late = await seeded.update_item("v1", "i1", 1, patch("b"), by("p1", NOW + RETENTION_SECONDS), request=request)
    assert isinstance(late, Conflict)  # runs again: base 1 is long gone
    reused_late = await seeded.create_item(
        new("n1"), by("p1", NOW + RETENTION_SECONDS), request=asked(ID_A, "create n1")
    )
    assert isinstance(reused_late, Created)


async def test_the_purge_forgets_records_past_24_hours(seeded: MigratableStore) -> None:
    request = asked(ID_A, "update b")
    await seeded.update_item("v1", "i1", 1, patch("b"), by("p1"), request=request)
    kept = asked(ID_B, "update c")
    await seeded.update_item("v1", "i1", 2, patch("c"), by("p1", NOW + 100), request=kept)

    await seeded.purge_tombstones(0, by("p1", NOW + RETENTION_SECONDS + 50))

    # Asked as of the records' own time, so that only the purge can have made one go.
    assert isinstance(await seeded.update_item("v1", "i1", 1, patch("b"), by("p1", NOW + 1), request=request), Conflict)
    assert isinstance(await seeded.update_item("v1", "i1", 2, patch("c"), by("p1", NOW + 101), request=kept), Repeated)


async def test_a_delete_erases_the_items_content_from_its_recorded_answers(seeded: MigratableStore) -> None:
    create = asked(ID_A, "create n1")
    await seeded.create_item(new("n1"), by("p1"), request=create)
    update = asked(ID_B, "update n1")
    await seeded.update_item("v1", "n1", 1, patch("b"), by("p1"), request=update)
    deleted = await seeded.delete_item("v1", "n1", 2, by("p2"))
    assert isinstance(deleted, ItemChange)

    # Nothing to answer from: the repeats run again, and meet the tombstone.
    assert await seeded.create_item(new("n1"), by("p1"), request=create) == Existing(deleted)
    assert await seeded.update_item("v1", "n1", 1, patch("b"), by("p1"), request=update) == Conflict(deleted)


async def test_an_answer_recognised_by_its_content_is_recorded_while_the_item_lives(seeded: MigratableStore) -> None:
    change = await seeded.update_item("v1", "i1", 1, patch("b"), by("p1"))
    assert isinstance(change, ItemChange)
    request = asked(ID_A, "update b")

    assert await seeded.record_answer(by("p1"), request, change) is None
    assert await seeded.record_answer(by("p1"), asked(ID_A, "other"), change) == Reused()
    await seeded.update_item("v1", "i1", 2, patch("c"), by("p1"))
    assert await seeded.update_item("v1", "i1", 1, patch("b"), by("p1"), request=request) == Repeated(change)

    await seeded.delete_item("v1", "i1", 3, by("p1"))
    late = asked(ID_B, "update c")
    assert await seeded.record_answer(by("p1"), late, change) is None
    assert isinstance(await seeded.update_item("v1", "i1", 1, patch("b"), by("p1"), request=late), Conflict)


# tokens


async def test_a_repeated_mint_names_the_first_token_and_adds_none(seeded: MigratableStore) -> None:
    request = asked(ID_A, "mint")
    assert await seeded.add_minted_token(minted("m1"), 50, by("p1"), request=request) is None

    repeat = await seeded.add_minted_token(minted("m2"), 50, by("p1"), request=request)
    at_the_cap = await seeded.add_minted_token(minted("m3"), 1, by("p1"), request=request)

    assert repeat == at_the_cap == Repeated(("m1",))
    assert await seeded.get_token("m2") is None
    assert await seeded.get_token("m3") is None
    assert await seeded.add_minted_token(minted("m4"), 1, by("p1"), request=asked(ID_B, "mint")) is not None


async def test_a_repeated_revocation_answers_what_it_revoked(seeded: MigratableStore) -> None:
    await seeded.add_minted_token(minted("m1"), 50, by("p1"))
    await seeded.add_minted_token(replace(minted("m2"), parent_token_id="m1"), 50, by("p1"))
    request = asked(ID_A, "revoke m1")

    first = await seeded.revoke_token_tree_once("m1", by("p1"), request)
    repeat = await seeded.revoke_token_tree_once("m1", by("p1"), request)
    without = await seeded.revoke_token_tree_once("m1", by("p1"), None)

    assert first == ["m1", "m2"]
    assert repeat == Repeated(("m1", "m2"))
    assert without == []
    assert await seeded.revoke_token_tree_once("nope", by("p1"), asked(ID_B, "revoke nope")) is None
    assert await seeded.revoke_token_tree_once("m1", by("p1"), asked(ID_B, "revoke nope")) == []


async def test_a_repeat_writes_no_audit_event(seeded: MigratableStore) -> None:
    request = asked(ID_A, "update b")
    await seeded.update_item("v1", "i1", 1, patch("b"), by("p1"), request=request)
    events = len(await seeded.audit_records("t1", 0, 1000))

    await seeded.update_item("v1", "i1", 1, patch("b"), by("p1"), request=request)
    await seeded.update_item("v1", "i1", 1, patch("c"), by("p1"), request=request)

    assert len(await seeded.audit_records("t1", 0, 1000)) == events


# concurrency


async def test_concurrent_updates_with_one_id_apply_once_and_answer_alike(seeded: MigratableStore) -> None:
    request = asked(ID_A, "update b")

    outcomes = await asyncio.gather(
        *(seeded.update_item("v1", "i1", 1, patch("b"), by("p1"), request=request) for _ in range(12))
    )

    applied = [o for o in outcomes if isinstance(o, ItemChange)]
    assert len(applied) == 1
    assert all(o == Repeated(applied[0]) for o in outcomes if o is not applied[0])
    assert await seeded.vault_sequence("v1") == 2


async def test_concurrent_creates_with_one_id_for_other_items_create_one(seeded: MigratableStore) -> None:
    outcomes = await asyncio.gather(
        *(seeded.create_item(new(f"n{n}"), by("p1"), request=asked(ID_A, f"create n{n}")) for n in range(12))
    )

    created = [o for o in outcomes if isinstance(o, Created)]
    assert len(created) == 1
    assert all(o == Reused() for o in outcomes if o is not created[0])
    assert await seeded.vault_sequence("v1") == 2
    assert [await seeded.get_item("v1", f"n{n}") is not None for n in range(12)].count(True) == 1


async def test_concurrent_mints_with_one_id_mint_one(seeded: MigratableStore) -> None:
    request = asked(ID_A, "mint")

    outcomes = await asyncio.gather(
        *(seeded.add_minted_token(minted(f"m{n}"), 50, by("p1"), request=request) for n in range(12))
    )

    assert outcomes.count(None) == 1
    winner = f"m{outcomes.index(None)}"
    assert all(o == Repeated((winner,)) for o in outcomes if o is not None)
    found = [await seeded.get_token(f"m{n}") for n in range(12)]
    assert [t.token_id for t in found if t is not None] == [winner]


async def test_concurrent_deletes_with_one_id_answer_one_tombstone(seeded: MigratableStore) -> None:
    request = asked(ID_A, "delete i1")

    outcomes = await asyncio.gather(*(seeded.delete_item("v1", "i1", 1, by("p1"), request=request) for _ in range(12)))

    applied = [o for o in outcomes if isinstance(o, ItemChange)]
    assert len(applied) == 1
    assert all(o == Repeated(applied[0]) for o in outcomes if o is not applied[0])
    assert await seeded.vault_sequence("v1") == 2


async def test_concurrent_calls_with_one_id_through_two_stores_apply_once(
    seeded: MigratableStore, request: pytest.FixtureRequest
) -> None:
    """Another store on the same database stands for another worker or host: its calls with the
    id wait for the first to commit, and answer from its record."""
    kind = request.node.callspec.params["store"]
    if kind == "memory":
        pytest.skip("a memory store is one process's own")
    path = getattr(seeded, "_path", None)
    url = f"sqlite:///{path}" if kind == "sqlite" else request.getfixturevalue("postgres_url")
    update = asked(ID_A, "update b")
    async with closing(open_store(url)) as other:
        outcomes = await asyncio.gather(
            *(
                store.update_item("v1", "i1", 1, patch("b"), by("p1"), request=update)
                for _ in range(6)
                for store in (seeded, other)
            ),
            *(
                store.create_item(new(f"n{n}"), by("p1"), request=asked(ID_B, f"create n{n}"))
                for n in range(6)
                for store in (seeded, other)
            ),
        )

    updated = [o for o in outcomes[:12] if isinstance(o, ItemChange)]
    assert len(updated) == 1
    assert all(o == Repeated(updated[0]) for o in outcomes[:12] if o is not updated[0])
    created = [o for o in outcomes[12:] if isinstance(o, Created)]
    assert len(created) == 1
    # The winner's twin through the other store asks the same: a repeat; every other item, another request.
    others = [o for o in outcomes[12:] if o is not created[0]]
    assert sorted(map(type, others), key=str) == [Repeated] + [Reused] * 10
    assert Repeated(created[0].change) in others
    assert await seeded.vault_sequence("v1") == 3
