"""The token tree in the domain, on the memory store with a fake clock: leaks, page tokens, disabled principals."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.actors import OPERATOR
from tests.world import FakeClock, World
from zkplatform.domain.auth import Presented
from zkplatform.domain.dpop import ProofRequest
from zkplatform.domain.errors import InvalidArgument, PrincipalIsDisabled, Unauthenticated
from zkplatform.domain.models import Scope, TokenRecord
from zkplatform.domain.paging import PageTokens, Position
from zkplatform.wiring import Platform

PROOF = ProofRequest(proof=None, htm="POST", htu="http://testserver/x")


async def mint_from(platform: Platform, secret: str) -> str:
    caller = await platform.authenticator.authenticate(Presented(secret, dpop_scheme=False), PROOF)
    issued = await platform.issuer.mint(
        caller.principal,
        {Scope.VAULT_ITEMS_READ, Scope.BROKER_TOKENS_MINT},
        caller.token.expires_at,
        "",
        50,
        by=caller.actor(platform.clock()),
    )
    return issued.secret


async def refused(platform: Platform, secret: str) -> bool:
    try:
        await platform.authenticator.authenticate(Presented(secret, dpop_scheme=False), PROOF)
    except Unauthenticated:
        return True
    return False


async def test_a_token_leaked_in_a_url_takes_its_tree_with_it(platform: Platform, world: World) -> None:
    alice = world.token("alice")
    child = await mint_from(platform, alice)
    grandchild = await mint_from(platform, child)
    great = await mint_from(platform, grandchild)

    await platform.authenticator.revoke_leaked([child])

    assert [await refused(platform, t) for t in (alice, child, grandchild, great)] == [False, True, True, True]


async def test_a_mint_from_a_parent_revoked_meanwhile_is_unauthenticated(platform: Platform, world: World) -> None:
    alice = world.token("alice")
    caller = await platform.authenticator.authenticate(Presented(alice, dpop_scheme=False), PROOF)
    await platform.store.revoke_token_tree(caller.token.token_id, OPERATOR)  # after authentication, before the mint

    with pytest.raises(Unauthenticated, match="token revoked"):
        await platform.issuer.mint(
            caller.principal,
            {Scope.VAULT_ITEMS_READ},
            caller.token.expires_at,
            "",
            50,
            by=caller.actor(platform.clock()),
        )


async def test_a_disabled_principal_is_issued_nothing(platform: Platform, world: World) -> None:
    await platform.store.set_principal_disabled("bob", OPERATOR, disabled=True)

    assert await refused(platform, world.token("bob"))
    with pytest.raises(PrincipalIsDisabled, match="principal bob is disabled"):
        await platform.issuer.issue_for("bob", 600)


async def test_last_use_is_asked_of_the_store_once_a_minute(platform: Platform, world: World, clock: FakeClock) -> None:
    alice = world.token("alice")
    start = clock.now
    for _ in range(3):
        await platform.authenticator.authenticate(Presented(alice, dpop_scheme=False), PROOF)
        clock.advance(30)

    caller = await platform.authenticator.authenticate(Presented(alice, dpop_scheme=False), PROOF)

    assert caller.token.last_used_at == start + 60  # read as stored before this call: written at 0 and at 60 s


KEY = b"k" * 32


def test_page_tokens_round_trip_and_are_bound_to_tenant_and_filter() -> None:
    pages = PageTokens(KEY)
    issued = pages.issue(Position(1_800_000_000, "tok_" + "a" * 24), "acme", "-")

    assert pages.read(issued, "acme", "-") == Position(1_800_000_000, "tok_" + "a" * 24)
    for tenant_id, listed in (("globex", "-"), ("acme", "alice"), ("acm", "e-")):
        with pytest.raises(InvalidArgument) as refused_page:
            pages.read(issued, tenant_id, listed)
        assert [v.field for v in refused_page.value.violations] == ["pageToken"]
    for garbage in (
        "",
        "not a token",
        issued + "A",
        issued[:-1],
        "é" * 10,
        PageTokens(b"x" * 32).issue(Position(1, "tok_x"), "acme", "-"),
    ):
        with pytest.raises(InvalidArgument):
            pages.read(garbage, "acme", "-")


def test_a_revoked_token_keeps_every_other_field() -> None:
    # as_revoked builds the record field by field: a field added later must not be dropped.
    values: dict[str, Any] = {
        field.name: value
        for field, value in zip(
            dataclasses.fields(TokenRecord),
            ["tok_a", b"h", "t1", "p1", frozenset({Scope.VAULT_ITEMS_READ}), 10, 20, "jkt", True, False, "tok_p", 15],
            strict=True,
        )
    }
    record = TokenRecord(**values)

    assert record.as_revoked() == dataclasses.replace(record, revoked=True)
