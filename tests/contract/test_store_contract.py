"""The repository contract: every store behaves exactly like the others."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace

import pytest

from tests.actors import OPERATOR, at
from zkplatform.domain.models import (
    EncryptedPayload,
    Item,
    Principal,
    Role,
    Scope,
    Tenant,
    TokenRecord,
    Tombstone,
    Vault,
    WrappedKey,
)
from zkplatform.domain.ports.items import Missing, Stale
from zkplatform.domain.ports.refusals import AlreadyExists, UnknownReference
from zkplatform.store import MigratableStore
from zkplatform.store.rows import ADD_ITEMS_CHUNK

# Past the second chunk of the SQL stores: what fails there must undo two committed-looking chunks.
LATE = 2 * ADD_ITEMS_CHUNK + 7

NOW = 1_800_000_000


def item(item_id: str, vault_id: str = "v1", tenant_id: str = "t1", version: int = 1) -> Item:
    return Item(
        item_id=item_id,
        tenant_id=tenant_id,
        vault_id=vault_id,
        version=version,
        kind="note",
        title_hash="th-" + item_id,
        updated_at=NOW - 100,
        payload=EncryptedPayload("A256GCM", "bm9uY2U", "YWFk", "Y2lwaGVy", 2),
        wrapped_keys=(WrappedKey("p1", "ECDH-ES+A256KW", "a2V5MQ"), WrappedKey("p2", "A256KW", "a2V5Mg")),
    )


def token(token_id: str, principal_id: str = "p1", *, minted: bool = True, expires_at: int = NOW + 600) -> TokenRecord:
    return TokenRecord(
        token_id=token_id,
        secret_hash=token_id.encode().ljust(32, b"\0"),
        tenant_id="t1",
        principal_id=principal_id,
        scopes=frozenset({Scope.VAULT_ITEMS_READ, Scope.VAULT_ITEMS_DELETE}),
        issued_at=NOW,
        expires_at=expires_at,
        pop_key_id="",
        minted=minted,
    )


@pytest.fixture
async def seeded(store: MigratableStore) -> MigratableStore:
    await store.add_tenant(Tenant("t1"), OPERATOR)
    await store.add_tenant(Tenant("t2"), OPERATOR)
    await store.add_principal(Principal("p1", "t1", Role.OWNER, Role.OWNER.default_scopes), OPERATOR)
    await store.add_principal(Principal("p2", "t1", Role.MEMBER, frozenset({Scope.VAULT_ITEMS_READ})), OPERATOR)
    await store.add_principal(Principal("q1", "t2", Role.SERVICE, frozenset()), OPERATOR)
    await store.add_vault(Vault("v1", "t1", frozenset({"p1", "p2"})), OPERATOR)
    await store.add_vault(Vault("v2", "t1", frozenset()), OPERATOR)
    await store.add_items([item("i1"), item("i2"), item("i3")], OPERATOR)
    return store


# directory


async def test_directory_round_trips(seeded: MigratableStore) -> None:
    assert await seeded.get_principal("p2") == Principal("p2", "t1", Role.MEMBER, frozenset({Scope.VAULT_ITEMS_READ}))
    assert await seeded.get_vault("v1") == Vault("v1", "t1", frozenset({"p1", "p2"}))
    assert await seeded.get_vault("v2") == Vault("v2", "t1", frozenset())
    assert await seeded.get_principal("nobody") is None
    assert await seeded.get_vault("nowhere") is None


async def test_duplicates_are_refused(seeded: MigratableStore) -> None:
    with pytest.raises(AlreadyExists):
        await seeded.add_tenant(Tenant("t1"), OPERATOR)
    with pytest.raises(AlreadyExists):
        await seeded.add_principal(Principal("p1", "t1", Role.OWNER, frozenset()), OPERATOR)
    with pytest.raises(AlreadyExists):
        await seeded.add_vault(Vault("v1", "t1", frozenset()), OPERATOR)


async def test_references_must_exist_within_the_tenant(seeded: MigratableStore) -> None:
    with pytest.raises(UnknownReference):
        await seeded.add_principal(Principal("p9", "t9", Role.OWNER, frozenset()), OPERATOR)
    with pytest.raises(UnknownReference):
        await seeded.add_vault(Vault("v9", "t9", frozenset()), OPERATOR)
    with pytest.raises(UnknownReference):
        await seeded.add_vault(Vault("v9", "t1", frozenset({"q1"})), OPERATOR)  # q1 is in t2
    assert await seeded.get_vault("v9") is None


# items


async def test_items_round_trip_and_take_sequence_numbers(seeded: MigratableStore) -> None:
    assert await seeded.get_item("v1", "i2") == item("i2")
    assert await seeded.vault_sequence("v1") == 3
    assert await seeded.vault_sequence("v2") == 0
    assert await seeded.get_item("v2", "i2") is None


async def test_a_sealing_v2_payload_round_trips(seeded: MigratableStore) -> None:
    v2 = EncryptedPayload("A256GCM", "bm9uY2U", "YWFk", "Y2lwaGVy", 2, "C" * 43, "S" * 43, "s" * 86)
    sealed = replace(item("i9"), payload=v2)
    await seeded.add_items([sealed], OPERATOR)

    assert await seeded.get_item("v1", "i9") == sealed


async def test_reads_answer_the_last_committed_state(seeded: MigratableStore) -> None:
    tombstone = await seeded.delete_item("v1", "i1", 1, at(NOW))
    assert isinstance(tombstone, Tombstone)

    assert await seeded.get_item("v1", "i1") == tombstone.item  # a tombstone is read like an item
    assert await seeded.get_item("v1", "nope") is None
    assert await seeded.get_item("v2", "i2") is None  # an item is in one vault only
    assert await seeded.get_item("nowhere", "i2") is None
    assert await seeded.vault_sequence("v1") == 4
    assert await seeded.vault_sequence("v2") == 0  # before any change
    assert await seeded.vault_sequence("nowhere") == 0

    assert await seeded.purge_tombstones(NOW + 1, OPERATOR) == 1
    assert await seeded.get_item("v1", "i1") is None
    assert await seeded.vault_sequence("v1") == 4  # a purge is not a change


async def test_add_items_is_all_or_none(seeded: MigratableStore) -> None:
    for batch, error, names in (
        ([item("n1"), item("n2"), item("i1")], AlreadyExists, "item i1 in vault v1"),
        ([item("n1"), item("n1")], AlreadyExists, "item n1 in vault v1"),
        ([item("n1"), item("n2", vault_id="v9")], UnknownReference, "no vault v9"),
        ([item("n1"), item("n2", tenant_id="t2")], UnknownReference, "in tenant t2"),
    ):
        with pytest.raises(error, match=names):
            await seeded.add_items(batch, OPERATOR)
        assert await seeded.get_item("v1", "n1") is None
        assert await seeded.vault_sequence("v1") == 3


def generated(count: int, then: Item | None = None) -> Iterator[Item]:
    """An import's items, alternating between v1 and v2, made one at a time; then `then`."""
    for n in range(count):
        yield item(f"g{n}", vault_id=f"v{1 + n % 2}")
    if then is not None:
        yield then


async def test_add_items_consumes_a_generator_once(seeded: MigratableStore) -> None:
    await seeded.add_items(generated(LATE), OPERATOR)

    assert await seeded.vault_sequence("v1") == 3 + (LATE + 1) // 2
    assert await seeded.vault_sequence("v2") == LATE // 2
    assert await seeded.get_item("v1", "g0") == item("g0")
    assert await seeded.get_item(f"v{1 + (LATE - 1) % 2}", f"g{LATE - 1}") == item(
        f"g{LATE - 1}", vault_id=f"v{1 + (LATE - 1) % 2}"
    )
    # Each vault's items took its next numbers in the order given: the last one, the vault's latest.
    outcome = await seeded.delete_item("v2", "g1", 1, at(NOW))
    assert isinstance(outcome, Tombstone)
    assert outcome.sequence == LATE // 2 + 1


class _BrokenImport(Exception):
    """A source of items that fails part-way (a bad line in an NDJSON file)."""


def broken_import(count: int) -> Iterator[Item]:
    yield from generated(count)
    raise _BrokenImport


@pytest.mark.parametrize(
    ("last", "error", "names"),
    [
        (item("i1"), AlreadyExists, "item i1 in vault v1"),  # stored before
        (item("g0"), AlreadyExists, "item g0 in vault v1"),  # in the first chunk
        (item("g9", vault_id="v9"), UnknownReference, "no vault v9 in tenant t1"),
        (item("g9", vault_id="v2", tenant_id="t2"), UnknownReference, "no vault v2 in tenant t2"),
    ],
)
async def test_a_failure_in_a_late_chunk_stores_nothing(
    seeded: MigratableStore, last: Item, error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=names):
        await seeded.add_items(generated(LATE, then=last), OPERATOR)

    assert await seeded.get_item("v1", "g0") is None
    assert await seeded.get_item("v2", "g1") is None
    assert await seeded.vault_sequence("v1") == 3
    assert await seeded.vault_sequence("v2") == 0


async def test_a_failing_source_of_items_stores_nothing(seeded: MigratableStore) -> None:
    with pytest.raises(_BrokenImport):
        await seeded.add_items(broken_import(LATE), OPERATOR)

    assert await seeded.get_item("v1", "g0") is None
    assert await seeded.vault_sequence("v1") == 3
    assert await seeded.vault_sequence("v2") == 0
    await seeded.add_items(generated(2), OPERATOR)  # and the store goes on
    assert await seeded.vault_sequence("v1") == 4


async def test_add_items_names_the_first_item_that_cannot_be_added(seeded: MigratableStore) -> None:
    with pytest.raises(UnknownReference, match="no vault v9"):
        await seeded.add_items([item("n1"), item("n2", vault_id="v9"), item("i1")], OPERATOR)
    with pytest.raises(AlreadyExists, match="item i1 in vault v1"):
        await seeded.add_items([item("n1"), item("i1"), item("n2", vault_id="v9")], OPERATOR)
    assert await seeded.get_item("v1", "n1") is None
    assert await seeded.vault_sequence("v1") == 3


async def test_delete_makes_a_tombstone_with_the_next_sequence(seeded: MigratableStore) -> None:
    outcome = await seeded.delete_item("v1", "i2", 1, at(NOW))

    expected = replace(
        item("i2"), version=2, title_hash="", updated_at=NOW, payload=None, wrapped_keys=(), deleted=True
    )
    assert outcome == Tombstone(expected, 4)
    assert await seeded.get_item("v1", "i2") == expected
    assert await seeded.vault_sequence("v1") == 4


async def test_delete_of_a_tombstone_answers_the_first_delete(seeded: MigratableStore) -> None:
    first = await seeded.delete_item("v1", "i1", 1, at(NOW))

    assert await seeded.delete_item("v1", "i1", 1, at(NOW + 50)) == first
    assert await seeded.delete_item("v1", "i1", 7, at(NOW + 60)) == first
    assert await seeded.vault_sequence("v1") == 4


async def test_stale_and_missing(seeded: MigratableStore) -> None:
    assert await seeded.delete_item("v1", "i1", 2, at(NOW)) == Stale(1)
    assert await seeded.delete_item("v1", "nope", 1, at(NOW)) == Missing()
    assert await seeded.delete_item("v2", "i1", 1, at(NOW)) == Missing()
    assert await seeded.vault_sequence("v1") == 3
    assert await seeded.get_item("v1", "i1") == item("i1")


async def test_concurrent_deletes_make_one_change(seeded: MigratableStore) -> None:
    outcomes = await asyncio.gather(*(seeded.delete_item("v1", "i3", 1, at(NOW)) for _ in range(50)))

    assert len(set(outcomes)) == 1
    assert isinstance(outcomes[0], Tombstone)
    assert outcomes[0].sequence == 4
    assert await seeded.vault_sequence("v1") == 4


async def test_concurrent_use_cases_fail_alone(seeded: MigratableStore) -> None:
    """A failing use case among concurrent ones changes nothing, and the others all stand
    (the SQLite store commits concurrent writes together, each in its own savepoint)."""
    await seeded.add_items([item(f"c{n}") for n in range(20)], OPERATOR)
    before = await seeded.vault_sequence("v1")

    outcomes = await asyncio.gather(
        *(seeded.delete_item("v1", f"c{n}", 1, at(NOW)) for n in range(10)),
        seeded.add_items([item("fresh"), item("i1")], OPERATOR),  # i1 exists: all or none
        *(seeded.delete_item("v1", f"c{n}", 1, at(NOW)) for n in range(10, 20)),
        return_exceptions=True,
    )

    assert isinstance(outcomes[10], AlreadyExists)
    deletes = [o for o in outcomes if not isinstance(o, BaseException)]
    assert all(isinstance(o, Tombstone) for o in deletes)
    assert sorted(o.sequence for o in deletes if isinstance(o, Tombstone)) == list(range(before + 1, before + 21))
    assert await seeded.get_item("v1", "fresh") is None
    assert await seeded.vault_sequence("v1") == before + 20


async def test_purge_forgets_old_tombstones_only(seeded: MigratableStore) -> None:
    await seeded.delete_item("v1", "i1", 1, at(NOW - 1000))
    await seeded.delete_item("v1", "i2", 1, at(NOW))

    assert await seeded.purge_tombstones(NOW - 500, OPERATOR) == 1

    assert await seeded.get_item("v1", "i1") is None
    assert await seeded.delete_item("v1", "i1", 2, at(NOW)) == Missing()
    assert (await seeded.get_item("v1", "i2")) is not None
    assert await seeded.get_item("v1", "i3") == item("i3")
    assert await seeded.purge_tombstones(NOW - 500, OPERATOR) == 0


# tokens


async def test_tokens_round_trip_and_revoke(seeded: MigratableStore) -> None:
    record = replace(token("tok_a"), pop_key_id="k" * 43)
    await seeded.add_token(record, OPERATOR)

    assert await seeded.find_token(record.secret_hash) == record
    assert await seeded.find_token(b"x" * 32) is None
    assert await seeded.find_token_with_principal(record.secret_hash) == (record, await seeded.get_principal("p1"))
    assert await seeded.find_token_with_principal(b"x" * 32) is None
    assert await seeded.revoke_token_tree("tok_a", OPERATOR) == ["tok_a"]
    assert await seeded.find_token(record.secret_hash) == replace(record, revoked=True)
    assert await seeded.revoke_token_tree("tok_a", OPERATOR) == []  # already revoked
    assert await seeded.revoke_token_tree("tok_nope", OPERATOR) is None


async def test_token_for_an_unknown_principal_is_refused(seeded: MigratableStore) -> None:
    with pytest.raises(UnknownReference):
        await seeded.add_token(token("tok_x", principal_id="nobody"), OPERATOR)
    await seeded.add_token(token("tok_y"), OPERATOR)
    with pytest.raises(AlreadyExists):
        await seeded.add_token(token("tok_y"), OPERATOR)


async def test_minted_token_cap_counts_live_minted_tokens_only(seeded: MigratableStore) -> None:
    await seeded.add_token(token("tok_op", minted=False), OPERATOR)
    await seeded.add_token(token("tok_old", expires_at=NOW - 1), OPERATOR)
    await seeded.add_token(token("tok_rev"), OPERATOR)
    await seeded.revoke_token_tree("tok_rev", OPERATOR)
    assert await seeded.add_minted_token(token("tok_1", expires_at=NOW + 100), 2, at(NOW)) is None
    assert await seeded.add_minted_token(token("tok_2", expires_at=NOW + 300), 2, at(NOW)) is None

    assert await seeded.add_minted_token(token("tok_3"), 2, at(NOW)) == NOW + 100
    assert await seeded.find_token(token("tok_3").secret_hash) is None
    assert await seeded.add_minted_token(token("tok_3"), 2, at(NOW + 100)) is None


async def test_a_revoked_minted_token_leaves_room_under_the_cap(seeded: MigratableStore) -> None:
    for name, expires_at in (("tok_1", NOW + 100), ("tok_2", NOW + 200), ("tok_3", NOW + 300)):
        assert await seeded.add_minted_token(token(name, expires_at=expires_at), 3, at(NOW)) is None
    await seeded.revoke_token_tree("tok_1", OPERATOR)

    assert await seeded.add_minted_token(token("tok_4", expires_at=NOW + 400), 3, at(NOW)) is None
    # At the cap again: the first to expire is the earliest live one, not the revoked tok_1.
    assert await seeded.add_minted_token(token("tok_5"), 3, at(NOW)) == NOW + 200
    await seeded.revoke_token_tree("tok_3", OPERATOR)
    assert await seeded.add_minted_token(token("tok_5", expires_at=NOW + 500), 3, at(NOW + 1)) is None


async def test_concurrent_mints_never_exceed_the_cap(seeded: MigratableStore) -> None:
    results = await asyncio.gather(*(seeded.add_minted_token(token(f"tok_{n}"), 5, at(NOW)) for n in range(20)))

    assert sum(result is None for result in results) == 5


# limits


async def test_mint_attempts_are_limited_per_principal_in_a_window(seeded: MigratableStore) -> None:
    assert [await seeded.record_mint_attempt("p1", NOW + n, 60, 3) for n in range(3)] == [None, None, None]
    assert await seeded.record_mint_attempt("p1", NOW + 10, 60, 3) == 51
    assert await seeded.record_mint_attempt("p2", NOW + 10, 60, 3) is None
    assert await seeded.record_mint_attempt("p1", NOW + 62, 60, 3) is None  # two attempts left the window


async def test_proofs_are_remembered_until_they_lapse(seeded: MigratableStore) -> None:
    assert await seeded.remember_proof("k1", "j1", NOW, NOW + 120)
    assert not await seeded.remember_proof("k1", "j1", NOW + 60, NOW + 180)
    assert await seeded.remember_proof("k2", "j1", NOW + 60, NOW + 180)  # per key
    assert await seeded.remember_proof("k1", "j1", NOW + 121, NOW + 241)  # lapsed
