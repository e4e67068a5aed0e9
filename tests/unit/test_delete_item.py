"""The DeleteItem use case on the memory store."""

from __future__ import annotations

import asyncio

import pytest

from tests.world import FakeClock, World
from zkplatform.domain.auth import Caller, Presented
from zkplatform.domain.dpop import ProofRequest
from zkplatform.domain.errors import NotFound, PermissionDenied, VersionMismatch
from zkplatform.domain.models import Scope

NO_PROOF = ProofRequest(proof=None, htm="POST", htu="http://testserver/platform.v1.VaultService/DeleteItem")


async def caller(world: World, principal_id: str) -> Caller:
    return await world.platform.authenticator.authenticate(
        Presented(world.token(principal_id), dpop_scheme=False), NO_PROOF
    )


async def test_delete_makes_a_crypto_shredded_tombstone(world: World, clock: FakeClock) -> None:
    before = await world.item("acme-shared", "item-2")
    sequence_before = await world.platform.store.vault_sequence("acme-shared")
    clock.advance(42)

    tombstone = await world.platform.vault.delete_item(await caller(world, "bob"), "acme-shared", "item-2", 1)

    assert tombstone.item.deleted
    assert tombstone.item.version == before.version + 1
    assert tombstone.item.updated_at == clock.now
    assert tombstone.item.payload is None
    assert tombstone.item.wrapped_keys == ()
    assert tombstone.item.title_hash == ""
    assert (tombstone.item.item_id, tombstone.item.kind, tombstone.item.tenant_id) == (
        before.item_id,
        before.kind,
        before.tenant_id,
    )
    assert tombstone.sequence == sequence_before + 1
    assert await world.platform.store.vault_sequence("acme-shared") == sequence_before + 1
    assert await world.item("acme-shared", "item-2") == tombstone.item


async def test_repeat_delete_returns_the_same_tombstone_whatever_the_version(world: World, clock: FakeClock) -> None:
    alice = await caller(world, "alice")
    first = await world.platform.vault.delete_item(alice, "acme-private", "item-1", 1)
    clock.advance(5)

    repeats = [await world.platform.vault.delete_item(alice, "acme-private", "item-1", v) for v in (1, 2, 99)]

    assert all(repeat == first for repeat in repeats)
    assert await world.platform.store.vault_sequence("acme-private") == first.sequence


async def test_stale_version_is_refused_with_the_current_version(world: World) -> None:
    with pytest.raises(VersionMismatch) as raised:
        await world.platform.vault.delete_item(await caller(world, "alice"), "acme-private", "item-1", 2)

    assert raised.value.current_version == 1
    assert not (await world.item("acme-private", "item-1")).deleted


async def test_unknown_item_is_not_found(world: World) -> None:
    with pytest.raises(NotFound):
        await world.platform.vault.delete_item(await caller(world, "alice"), "acme-private", "no-such-item", 1)


async def test_membership_is_checked_before_existence(world: World) -> None:
    bob = await caller(world, "bob")
    for vault_id in ("acme-private", "no-such-vault", "globex-main"):
        with pytest.raises(PermissionDenied, match="not a member"):
            await world.platform.vault.delete_item(bob, vault_id, "item-1", 1)
    assert not (await world.item("acme-private", "item-1")).deleted


async def test_delete_needs_the_delete_scope(world: World) -> None:
    alice = await world.platform.store.get_principal("alice")
    assert alice is not None
    issued = await world.platform.issuer.issue(alice, 600, [Scope.VAULT_ITEMS_READ, Scope.VAULT_ITEMS_WRITE])
    reader = await world.platform.authenticator.authenticate(Presented(issued.secret, dpop_scheme=False), NO_PROOF)

    with pytest.raises(PermissionDenied, match=r"vault\.items\.delete"):
        await world.platform.vault.delete_item(reader, "acme-private", "item-1", 1)


async def test_fifty_concurrent_deletes_make_one_change(world: World) -> None:
    alice = await caller(world, "alice")
    sequence_before = await world.platform.store.vault_sequence("acme-shared")

    results = await asyncio.gather(
        *(world.platform.vault.delete_item(alice, "acme-shared", "item-3", 1) for _ in range(50))
    )

    assert len(set(results)) == 1
    assert results[0].sequence == sequence_before + 1
    assert await world.platform.store.vault_sequence("acme-shared") == sequence_before + 1
