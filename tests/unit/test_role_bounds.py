"""The role's scope bound, enforced in the domain: what a new principal may be granted, and what
an operator may issue to one."""

from __future__ import annotations

import pytest

from tests.actors import OPERATOR
from zkplatform.domain.auth import Caller
from zkplatform.domain.errors import DomainError, NotFound, ScopeMissing, ScopesNotHeld
from zkplatform.domain.issuing import ScopesNotGranted
from zkplatform.domain.models import (
    ALL_SCOPES,
    MEMBER_SCOPES,
    Principal,
    Role,
    Scope,
    ScopesBeyondRole,
    Tenant,
    TokenRecord,
)
from zkplatform.wiring import Platform

MINT, READ = Scope.BROKER_TOKENS_MINT, Scope.VAULT_ITEMS_READ


@pytest.mark.parametrize(
    ("role", "default", "bound"),
    [
        (Role.OWNER, ALL_SCOPES, ALL_SCOPES),
        (Role.ADMIN, ALL_SCOPES, ALL_SCOPES),
        (Role.MEMBER, MEMBER_SCOPES, MEMBER_SCOPES),
        (Role.SERVICE, frozenset(), ALL_SCOPES),
    ],
)
def test_a_new_principal_gets_its_roles_default_and_at_most_its_bound(
    role: Role, default: frozenset[Scope], bound: frozenset[Scope]
) -> None:
    assert Principal.new("p", "t", role).allowed_scopes == default
    assert Principal.new("p", "t", role, bound).allowed_scopes == bound
    assert Principal.new("p", "t", role, []).allowed_scopes == frozenset()


def test_a_grant_beyond_the_role_is_refused() -> None:
    with pytest.raises(ScopesBeyondRole) as refused:
        Principal.new("bob", "t", Role.MEMBER, [READ, MINT])

    assert isinstance(refused.value, DomainError)
    assert refused.value.beyond == (MINT,)
    assert str(refused.value) == (
        "the role member may not hold broker.tokens.mint"
        " (it allows broker.tokens.manage, directory.keys.publish, directory.keys.read,"
        " vault.items.delete, vault.items.read, vault.items.write)"
    )


def test_a_service_holds_only_what_the_operator_grants() -> None:
    assert Principal.new("ci", "t", Role.SERVICE, [READ, MINT]).scopes == {READ, MINT}
    assert Principal.new("ci", "t", Role.SERVICE).scopes == frozenset()


async def test_issue_for_names_the_principal_and_what_it_may_hold(platform: Platform) -> None:
    await platform.store.add_tenant(Tenant("t1"), OPERATOR)
    await platform.store.add_principal(Principal.new("ci", "t1", Role.SERVICE, [READ]), OPERATOR)

    with pytest.raises(ScopesNotGranted) as refused:
        await platform.issuer.issue_for("ci", 600, [MINT, READ])

    assert isinstance(refused.value, ScopesNotHeld)
    assert refused.value.refused == ("broker.tokens.mint",)
    assert str(refused.value) == "principal ci may not hold broker.tokens.mint (it may hold: vault.items.read)"


async def test_issue_for_gives_the_principals_role_with_the_token(platform: Platform) -> None:
    await platform.store.add_tenant(Tenant("t1"), OPERATOR)
    await platform.store.add_principal(Principal.new("bob", "t1", Role.MEMBER), OPERATOR)

    issued = await platform.issuer.issue_for("bob", 600)

    assert issued.role is Role.MEMBER
    assert issued.record.scopes == MEMBER_SCOPES
    with pytest.raises(NotFound, match="no principal nobody"):
        await platform.issuer.issue_for("nobody", 600)


@pytest.mark.parametrize(
    ("token", "grant", "role", "allowed"),
    [
        ({READ, MINT}, {READ, MINT}, Role.SERVICE, True),
        ({READ}, {READ, MINT}, Role.SERVICE, False),  # the token lacks it
        ({READ, MINT}, {READ}, Role.SERVICE, False),  # the principal's grant lacks it
        ({READ, MINT}, {READ, MINT}, Role.MEMBER, False),  # a grant stored beyond the role's bound
    ],
)
def test_a_call_may_do_what_its_token_its_grant_and_its_role_all_allow(
    token: set[Scope], grant: set[Scope], role: Role, allowed: bool
) -> None:
    principal = Principal("p", "t", role, frozenset(grant))  # as a store rebuilds it: the bound not checked
    record = TokenRecord("tok_1", b"", "t", "p", frozenset(token), issued_at=0, expires_at=60)
    caller = Caller(record, principal, secret="")

    assert (MINT in caller.scopes) is allowed
    if allowed:
        caller.require_scope(MINT)
    else:
        with pytest.raises(ScopeMissing):
            caller.require_scope(MINT)
    caller.require_scope(READ)
