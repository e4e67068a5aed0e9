"""An operator's change of a principal's scopes (change_principal_scopes): set, add and remove,
audited with the scopes before and after, refused whole, and seen at once by the principal's
existing tokens; alike on every store."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from tests.actors import OPERATOR
from tests.contract.test_audit_contract import brief, trail
from tests.contract.test_store_contract import token
from zkplatform.domain.auth import Caller
from zkplatform.domain.models import Principal, Role, Scope, ScopeChange, ScopeEdit, ScopesBeyondRole, Tenant
from zkplatform.domain.ports.refusals import UnknownReference
from zkplatform.store import MigratableStore

READ, WRITE, DELETE = Scope.VAULT_ITEMS_READ, Scope.VAULT_ITEMS_WRITE, Scope.VAULT_ITEMS_DELETE
DIRECTORY = frozenset({Scope.DIRECTORY_KEYS_READ, Scope.DIRECTORY_KEYS_PUBLISH})
# A member granted what members were given before the key directory existed.
BEFORE_DIRECTORY = frozenset({READ, WRITE, DELETE, Scope.BROKER_TOKENS_MANAGE})


def edit(how: ScopeEdit, *scopes: Scope) -> ScopeChange:
    return ScopeChange(how, frozenset(scopes))


@pytest.fixture
async def seeded(store: MigratableStore) -> MigratableStore:
    await store.add_tenant(Tenant("t1"), OPERATOR)
    await store.add_tenant(Tenant("t2"), OPERATOR)
    await store.add_principal(Principal("p1", "t1", Role.MEMBER, BEFORE_DIRECTORY), OPERATOR)
    await store.add_principal(Principal("q1", "t2", Role.SERVICE, frozenset()), OPERATOR)
    return store


async def test_set_add_and_remove_change_the_grant_each_with_its_event(seeded: MigratableStore) -> None:
    before, after = await seeded.change_principal_scopes("t1", "p1", edit(ScopeEdit.ADD, *DIRECTORY), OPERATOR)
    assert (before.allowed_scopes, after.allowed_scopes) == (BEFORE_DIRECTORY, BEFORE_DIRECTORY | DIRECTORY)
    assert await seeded.get_principal("p1") == after

    _, after = await seeded.change_principal_scopes("t1", "p1", edit(ScopeEdit.REMOVE, WRITE, DELETE), OPERATOR)
    assert after.allowed_scopes == {READ, Scope.BROKER_TOKENS_MANAGE} | DIRECTORY

    _, after = await seeded.change_principal_scopes("t1", "p1", edit(ScopeEdit.SET, READ), OPERATOR)
    assert after == Principal("p1", "t1", Role.MEMBER, frozenset({READ}))
    assert await seeded.get_principal("p1") == after
    assert await seeded.list_principals("t1") == [after]

    _, after = await seeded.change_principal_scopes("t1", "p1", edit(ScopeEdit.SET), OPERATOR)
    assert after.allowed_scopes == frozenset()

    before_text = "broker.tokens.manage,vault.items.delete,vault.items.read,vault.items.write"
    with_directory = "broker.tokens.manage,directory.keys.publish,directory.keys.read,"
    assert brief(await trail(seeded, "t1"))[-4:] == [
        (
            "principal.scopes_changed",
            {
                "principal": "p1",
                "scopesBefore": before_text,
                "scopesAfter": with_directory + "vault.items.delete,vault.items.read,vault.items.write",
            },
        ),
        (
            "principal.scopes_changed",
            {
                "principal": "p1",
                "scopesBefore": with_directory + "vault.items.delete,vault.items.read,vault.items.write",
                "scopesAfter": with_directory + "vault.items.read",
            },
        ),
        (
            "principal.scopes_changed",
            {"principal": "p1", "scopesBefore": with_directory + "vault.items.read", "scopesAfter": "vault.items.read"},
        ),
        ("principal.scopes_changed", {"principal": "p1", "scopesBefore": "vault.items.read", "scopesAfter": ""}),
    ]


@pytest.mark.parametrize(
    "change",
    [edit(ScopeEdit.ADD, READ, WRITE), edit(ScopeEdit.REMOVE, *DIRECTORY), edit(ScopeEdit.SET, *BEFORE_DIRECTORY)],
    ids=["add held", "remove not held", "set the same"],
)
async def test_a_change_that_leaves_the_grant_as_it_was_writes_nothing(
    seeded: MigratableStore, change: ScopeChange
) -> None:
    head = await seeded.audit_head("t1")

    before, after = await seeded.change_principal_scopes("t1", "p1", change, OPERATOR)

    assert before == after == await seeded.get_principal("p1")
    assert after.allowed_scopes == BEFORE_DIRECTORY
    assert await seeded.audit_head("t1") == head


@pytest.mark.parametrize(
    "change",
    [edit(ScopeEdit.ADD, Scope.BROKER_TOKENS_MINT), edit(ScopeEdit.SET, READ, Scope.BROKER_TOKENS_MINT)],
    ids=["add", "set"],
)
async def test_a_scope_beyond_the_role_is_refused_and_nothing_changes(
    seeded: MigratableStore, change: ScopeChange
) -> None:
    head = await seeded.audit_head("t1")

    with pytest.raises(ScopesBeyondRole, match=r"the role member may not hold broker\.tokens\.mint"):
        await seeded.change_principal_scopes("t1", "p1", change, OPERATOR)

    principal = await seeded.get_principal("p1")
    assert principal is not None
    assert principal.allowed_scopes == BEFORE_DIRECTORY
    assert await seeded.audit_head("t1") == head


@pytest.mark.parametrize(
    ("tenant_id", "principal_id", "says"),
    [
        ("nope", "p1", "no tenant nope"),
        ("t1", "nobody", "no principal nobody in tenant t1"),
        ("t2", "p1", "no principal p1 in tenant t2"),  # another tenant's principal
    ],
)
async def test_an_unknown_tenant_or_principal_is_refused(
    seeded: MigratableStore, tenant_id: str, principal_id: str, says: str
) -> None:
    heads = [await seeded.audit_head(t) for t in ("t1", "t2")]

    with pytest.raises(UnknownReference, match=f"^{says}$"):
        await seeded.change_principal_scopes(tenant_id, principal_id, edit(ScopeEdit.REMOVE, READ), OPERATOR)

    assert [await seeded.audit_head(t) for t in ("t1", "t2")] == heads
    principal = await seeded.get_principal("p1")
    assert principal is not None
    assert principal.allowed_scopes == BEFORE_DIRECTORY


async def test_a_narrowing_holds_for_a_token_issued_before_it(seeded: MigratableStore) -> None:
    issued = replace(token("tok_1"), scopes=BEFORE_DIRECTORY)  # made with every scope p1 then had
    await seeded.add_token(issued, OPERATOR)

    await seeded.change_principal_scopes("t1", "p1", edit(ScopeEdit.REMOVE, DELETE), OPERATOR)
    await seeded.change_principal_scopes("t1", "p1", edit(ScopeEdit.ADD, *DIRECTORY), OPERATOR)

    # What authentication reads, and what an open watch reads again: the token as it was
    # made, with the principal as it is now.
    found = await seeded.find_token_with_principal(issued.secret_hash)
    assert await seeded.get_tokens_with_principals(["tok_1", "tok_nothing"]) == {"tok_1": found}
    assert found is not None
    record, principal = found
    assert record.scopes == BEFORE_DIRECTORY
    caller = Caller(record, principal, secret="")
    assert caller.scopes == {READ, WRITE, Scope.BROKER_TOKENS_MANAGE}  # delete gone; the directory not given


async def test_changes_at_once_each_apply_to_what_the_others_left(seeded: MigratableStore) -> None:
    granted = [READ, WRITE, DELETE, Scope.BROKER_TOKENS_MINT, *DIRECTORY]

    await asyncio.gather(
        *(seeded.change_principal_scopes("t2", "q1", edit(ScopeEdit.ADD, scope), OPERATOR) for scope in granted)
    )

    principal = await seeded.get_principal("q1")
    assert principal is not None
    assert principal.allowed_scopes == set(granted)
    events = brief(await trail(seeded, "t2"))[-len(granted) :]
    assert [len(e[1]["scopesAfter"].split(",")) for e in events] == list(range(1, len(granted) + 1))
