"""The token tree, token listing, last use and the operator's directory ports: alike on every store."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace

import pytest

from tests.actors import OPERATOR, at
from tests.contract.test_store_contract import NOW, token
from zkplatform.domain.models import Principal, Role, Scope, Tenant, TokenRecord, Vault
from zkplatform.domain.ports.refusals import ParentRevoked, PrincipalDisabled, UnknownReference
from zkplatform.store import MigratableStore


def child(token_id: str, parent: str, principal_id: str = "p1", *, issued_at: int = NOW) -> TokenRecord:
    return replace(token(token_id, principal_id), parent_token_id=parent, issued_at=issued_at)


@pytest.fixture
async def seeded(store: MigratableStore) -> MigratableStore:
    await store.add_tenant(Tenant("t1"), OPERATOR)
    await store.add_tenant(Tenant("t2"), OPERATOR)
    await store.add_principal(Principal("p1", "t1", Role.OWNER, Role.OWNER.default_scopes), OPERATOR)
    await store.add_principal(Principal("p2", "t1", Role.MEMBER, frozenset({Scope.VAULT_ITEMS_READ})), OPERATOR)
    await store.add_principal(Principal("q1", "t2", Role.SERVICE, frozenset()), OPERATOR)
    await store.add_vault(Vault("v1", "t1", frozenset({"p1"})), OPERATOR)
    return store


async def tree(store: MigratableStore) -> None:
    """root -> a -> a1 -> a11, root -> b; and an unrelated token of the same principal."""
    await store.add_token(token("tok_root", minted=False), OPERATOR)
    for token_id, parent in (("tok_a", "tok_root"), ("tok_b", "tok_root"), ("tok_a1", "tok_a"), ("tok_a11", "tok_a1")):
        assert await store.add_minted_token(child(token_id, parent), 50, at(NOW)) is None
    await store.add_token(token("tok_other", minted=False), OPERATOR)


async def revoked(store: MigratableStore, *token_ids: str) -> list[bool]:
    found = [await store.get_token(t) for t in token_ids]
    return [record is not None and record.revoked for record in found]


async def test_revoking_a_token_revokes_its_whole_subtree_and_nothing_else(seeded: MigratableStore) -> None:
    await tree(seeded)

    assert await seeded.revoke_token_tree("tok_a", OPERATOR) == ["tok_a", "tok_a1", "tok_a11"]

    assert await revoked(seeded, "tok_a", "tok_a1", "tok_a11") == [True, True, True]
    assert await revoked(seeded, "tok_root", "tok_b", "tok_other") == [False, False, False]
    assert await seeded.revoke_token_tree("tok_a", OPERATOR) == []  # already revoked: nothing new
    assert await seeded.revoke_token_tree("tok_root", OPERATOR) == ["tok_b", "tok_root"]
    assert await seeded.revoke_token_tree("tok_nope", OPERATOR) is None


async def test_many_tokens_are_read_at_once_with_their_principals(seeded: MigratableStore) -> None:
    """What the watches woken together check again: live or revoked, each with its principal."""
    await tree(seeded)
    await seeded.revoke_token_tree("tok_a1", OPERATOR)
    wanted = ["tok_a", "tok_a1", "tok_nope", "tok_other", "tok_a"]

    found = await seeded.get_tokens_with_principals(wanted)

    assert sorted(found) == ["tok_a", "tok_a1", "tok_other"]
    assert [found[t][0] for t in sorted(found)] == [await seeded.get_token(t) for t in sorted(found)]
    assert found["tok_a1"][0].revoked
    assert {(principal.principal_id, principal.role) for _, principal in found.values()} == {("p1", Role.OWNER)}
    assert await seeded.get_tokens_with_principals([]) == {}


async def test_a_revocation_cascades_down_the_tree_only(seeded: MigratableStore) -> None:
    await tree(seeded)

    assert await seeded.revoke_token_tree("tok_root", OPERATOR)

    assert await revoked(seeded, "tok_root", "tok_a", "tok_b", "tok_a1", "tok_a11") == [True] * 5
    assert await revoked(seeded, "tok_other") == [False]


async def test_a_token_remembers_its_parent(seeded: MigratableStore) -> None:
    await tree(seeded)

    found = await seeded.get_token("tok_a1")
    assert found == child("tok_a1", "tok_a")
    assert await seeded.get_token("tok_nope") is None
    root = await seeded.find_token(token("tok_root").secret_hash)
    assert root is not None
    assert root.parent_token_id == ""


async def test_no_child_is_minted_from_a_revoked_parent(seeded: MigratableStore) -> None:
    await tree(seeded)
    await seeded.revoke_token_tree("tok_a", OPERATOR)

    with pytest.raises(ParentRevoked):
        await seeded.add_minted_token(child("tok_late", "tok_a1"), 50, at(NOW))

    assert await seeded.get_token("tok_late") is None


async def test_concurrent_mints_and_a_revocation_leave_no_live_child(seeded: MigratableStore) -> None:
    await seeded.add_token(token("tok_root", minted=False), OPERATOR)

    async def mint(n: int) -> None:
        with contextlib.suppress(ParentRevoked):
            await seeded.add_minted_token(child(f"tok_c{n}", "tok_root"), 50, at(NOW))

    await asyncio.gather(
        *(mint(n) for n in range(10)), seeded.revoke_token_tree("tok_root", OPERATOR), *(mint(n) for n in range(10, 20))
    )

    children = [await seeded.get_token(f"tok_c{n}") for n in range(20)]
    assert all(c is None or c.revoked for c in children)


async def test_disabling_a_principal_revokes_its_tokens_and_refuses_new_ones(seeded: MigratableStore) -> None:
    await tree(seeded)
    await seeded.add_token(token("tok_p2", "p2", minted=False), OPERATOR)

    assert await seeded.set_principal_disabled("p1", OPERATOR, disabled=True) == sorted(
        ["tok_root", "tok_a", "tok_b", "tok_a1", "tok_a11", "tok_other"]
    )

    assert await revoked(seeded, "tok_p2") == [False]
    disabled = await seeded.get_principal("p1")
    assert disabled is not None
    assert disabled.disabled
    with pytest.raises(PrincipalDisabled):
        await seeded.add_token(token("tok_new", minted=False), OPERATOR)
    with pytest.raises(PrincipalDisabled):
        await seeded.add_minted_token(token("tok_new"), 50, at(NOW))
    assert await seeded.set_principal_disabled("p1", OPERATOR, disabled=True) == []

    assert await seeded.set_principal_disabled("p1", OPERATOR, disabled=False) == []
    await seeded.add_token(token("tok_new", minted=False), OPERATOR)
    assert await revoked(seeded, "tok_root", "tok_new") == [True, False]  # enabling revives nothing
    assert await seeded.set_principal_disabled("nobody", OPERATOR, disabled=True) is None


async def test_tokens_are_listed_newest_first_in_keyset_pages(seeded: MigratableStore) -> None:
    for n in (3, 0, 4, 1, 2):  # added out of order: listed by when they were issued, ties broken by id
        await seeded.add_token(replace(token(f"tok_{n}"), issued_at=NOW + n // 2), OPERATOR)
    await seeded.add_token(replace(token("tok_p2", "p2"), issued_at=NOW + 9), OPERATOR)
    await seeded.add_principal(Principal("q2", "t2", Role.OWNER, frozenset()), OPERATOR)
    await seeded.add_token(replace(token("tok_t2", "q2"), tenant_id="t2", issued_at=NOW + 9), OPERATOR)

    def ids(found: list[tuple[TokenRecord, Principal]]) -> list[str]:
        return [record.token_id for record, _ in found]

    first = await seeded.list_tokens("t1", "p1", live_at=NOW, after=None, limit=2)
    assert ids(first) == ["tok_4", "tok_3"]
    assert first[0][1] == await seeded.get_principal("p1")
    after = (first[-1][0].issued_at, first[-1][0].token_id)
    assert ids(await seeded.list_tokens("t1", "p1", live_at=NOW, after=after, limit=10)) == ["tok_2", "tok_1", "tok_0"]
    every = await seeded.list_tokens("t1", None, live_at=NOW, after=None, limit=10)
    assert ids(every) == ["tok_p2", "tok_4", "tok_3", "tok_2", "tok_1", "tok_0"]


async def test_only_live_tokens_are_listed_unless_asked(seeded: MigratableStore) -> None:
    await seeded.add_token(token("tok_live"), OPERATOR)
    await seeded.add_token(token("tok_expired", expires_at=NOW), OPERATOR)
    await seeded.add_token(token("tok_revoked"), OPERATOR)
    await seeded.revoke_token_tree("tok_revoked", OPERATOR)

    live = await seeded.list_tokens("t1", "p1", live_at=NOW, after=None, limit=10)
    every = await seeded.list_tokens("t1", "p1", live_at=None, after=None, limit=10)

    assert [r.token_id for r, _ in live] == ["tok_live"]
    assert sorted(r.token_id for r, _ in every) == ["tok_expired", "tok_live", "tok_revoked"]


async def last_use(store: MigratableStore, token_id: str, expected: int | None) -> int | None:
    """The recorded last use, once it is `expected`: the SQL stores write it after answering
    touch_token, so it is observed (within a bounded number of looks), not assumed."""
    found = None
    for _ in range(500):
        record = await store.get_token(token_id)
        assert record is not None
        if (found := record.last_used_at) == expected:
            break
        await asyncio.sleep(0.01)
    return found


async def test_last_use_is_written_only_when_the_stored_one_is_stale(seeded: MigratableStore) -> None:
    await seeded.add_token(token("tok_a"), OPERATOR)
    assert (await seeded.get_token("tok_a")) == token("tok_a")  # never used: None

    await seeded.touch_token("tok_a", NOW, NOW - 59)
    assert await last_use(seeded, "tok_a", NOW) == NOW
    await seeded.touch_token("tok_a", NOW + 30, NOW - 29)  # the stored one is fresh enough: kept
    await seeded.touch_token("tok_a", NOW + 61, NOW + 2)  # stale: written
    assert await last_use(seeded, "tok_a", NOW + 61) == NOW + 61
    await seeded.touch_token("tok_nope", NOW, NOW)  # nothing to touch: no error


async def test_directory_listings(seeded: MigratableStore) -> None:
    await seeded.add_vault(Vault("v0", "t1", frozenset({"p1", "p2"})), OPERATOR)

    assert await seeded.list_tenants() == [Tenant("t1"), Tenant("t2")]
    assert [p.principal_id for p in await seeded.list_principals("t1")] == ["p1", "p2"]
    assert await seeded.list_principals("t9") == []
    assert await seeded.list_vaults("t1") == [
        Vault("v0", "t1", frozenset({"p1", "p2"})),
        Vault("v1", "t1", frozenset({"p1"})),
    ]
    assert await seeded.list_vaults("t2") == []


async def test_a_principals_vaults_come_by_id_a_page_at_a_time_with_all_their_members(
    seeded: MigratableStore,
) -> None:
    """ListVaults' read: only the vaults the principal is a member of, in id order after a given id."""
    for vault_id, members in (("v0", {"p1", "p2"}), ("v2", {"p2"}), ("v3", {"p1"}), ("v10", {"p1", "p2"})):
        await seeded.add_vault(Vault(vault_id, "t1", frozenset(members)), OPERATOR)

    p1 = [
        Vault("v0", "t1", frozenset({"p1", "p2"})),
        Vault("v1", "t1", frozenset({"p1"})),
        Vault("v10", "t1", frozenset({"p1", "p2"})),
        Vault("v3", "t1", frozenset({"p1"})),
    ]
    assert await seeded.list_member_vaults("p1", "", 10) == p1
    assert await seeded.list_member_vaults("p1", "", 2) == p1[:2]
    assert await seeded.list_member_vaults("p1", "v1", 2) == p1[2:]  # after v1, excluded
    assert await seeded.list_member_vaults("p1", "v3", 2) == []
    assert [v.vault_id for v in await seeded.list_member_vaults("p2", "", 10)] == ["v0", "v10", "v2"]
    assert await seeded.list_member_vaults("q1", "", 10) == []  # another tenant's, of no vault
    assert await seeded.list_member_vaults("nobody", "", 10) == []

    assert await seeded.remove_vault_member("v0", "p1", OPERATOR)
    assert await seeded.add_vault_member("v2", "p1", OPERATOR)
    assert [v.vault_id for v in await seeded.list_member_vaults("p1", "", 10)] == ["v1", "v10", "v2", "v3"]
    assert (await seeded.list_member_vaults("p2", "", 1)) == [Vault("v0", "t1", frozenset({"p2"}))]


async def test_vault_members_are_added_and_removed(seeded: MigratableStore) -> None:
    assert await seeded.add_vault_member("v1", "p2", OPERATOR)
    assert not await seeded.add_vault_member("v1", "p2", OPERATOR)
    assert await seeded.get_vault("v1") == Vault("v1", "t1", frozenset({"p1", "p2"}))

    assert await seeded.remove_vault_member("v1", "p1", OPERATOR)
    assert not await seeded.remove_vault_member("v1", "p1", OPERATOR)
    assert await seeded.get_vault("v1") == Vault("v1", "t1", frozenset({"p2"}))

    with pytest.raises(UnknownReference, match="no principal q1 in tenant t1"):
        await seeded.add_vault_member("v1", "q1", OPERATOR)  # another tenant's principal
    with pytest.raises(UnknownReference, match="no vault v9"):
        await seeded.add_vault_member("v9", "p1", OPERATOR)
    with pytest.raises(UnknownReference, match="no vault v9"):
        await seeded.remove_vault_member("v9", "p1", OPERATOR)
