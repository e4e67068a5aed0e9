"""BrokerUseCases (minting API tokens) on the memory store, with a clock the tests move."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import pytest
from joserfc import jwk

from tests.actors import OPERATOR
from tests.dpop import new_key
from tests.proofs import build_proof
from tests.world import BASE_URL, PEPPER, FakeClock, World
from zkplatform.domain import tokens
from zkplatform.domain.auth import Caller
from zkplatform.domain.broker import BrokerUseCases, MintAttempt, MintPolicy, MintRequest
from zkplatform.domain.dpop import ProofRequest
from zkplatform.domain.errors import (
    InvalidArgument,
    LimitReached,
    ParentExpiresSoon,
    PermissionDenied,
    ScopesNotHeld,
    Unauthenticated,
)
from zkplatform.domain.issuing import IssuedToken
from zkplatform.domain.models import Scope
from zkplatform.store.memory import MemoryStore
from zkplatform.wiring import Platform

READ, WRITE, DELETE, MINT = (
    Scope.VAULT_ITEMS_READ,
    Scope.VAULT_ITEMS_WRITE,
    Scope.VAULT_ITEMS_DELETE,
    Scope.BROKER_TOKENS_MINT,
)
MINT_URL = BASE_URL + "/platform.v1.BrokerService/MintUserApiToken"


async def seeded(clock: FakeClock, policy: MintPolicy | None = None) -> Platform:
    """The platform on a memory store holding the development data set's principals."""
    platform = Platform.build(MemoryStore(), PEPPER, clock, policy)
    await World.seed(platform)
    return platform


@pytest.fixture
async def platform(clock: FakeClock) -> Platform:
    return await seeded(clock)


@pytest.fixture
def broker(platform: Platform) -> BrokerUseCases:
    return platform.broker


async def caller_of(
    platform: Platform, principal_id: str = "alice", *, ttl: int = 3600, scopes: Iterable[Scope] | None = None
) -> Caller:
    """An authenticated call with a new operator-issued token of the principal."""
    principal = await platform.store.get_principal(principal_id)
    assert principal is not None
    return await caller_with(await platform.issuer.issue(principal, ttl, scopes), platform)


async def caller_with(issued: IssuedToken, platform: Platform) -> Caller:
    """An authenticated call with that token."""
    principal = await platform.store.get_principal(issued.record.principal_id)
    assert principal is not None
    return Caller(token=issued.record, principal=principal, secret=issued.secret)


def request(
    tenant_id: str = "acme",
    scopes: Iterable[Scope] = (READ,),
    ttl: int = 0,
    pop_key_id: str = "",
    proof: str | None = None,
) -> MintRequest:
    return MintRequest(tenant_id, tuple(scopes), ttl, pop_key_id, ProofRequest(proof, "POST", MINT_URL))


def bound_request(
    key: jwk.Key,
    caller: Caller,
    clock: FakeClock,
    *,
    tenant_id: str = "acme",
    scopes: Iterable[Scope] = (READ,),
    ttl: int = 0,
) -> MintRequest:
    """A request binding the new token to `key`, with a fresh proof of it made with the caller's token."""
    proof = build_proof(key, MINT_URL, caller.secret, clock.now)
    return request(tenant_id, scopes, ttl, key.thumbprint(), proof)


async def mint(broker: BrokerUseCases, caller: Caller, mint_request: MintRequest) -> IssuedToken:
    """One attempt, counted first as the RPC handler does."""
    return await broker.mint(caller, mint_request, await broker.count_attempt(caller))


async def over_the_rate(broker: BrokerUseCases, caller: Caller, policy: MintPolicy) -> MintAttempt:
    """Attempts until one is over the rate (a minute holds `mints_per_minute` at most): that one."""
    for _ in range(policy.mints_per_minute + 1):
        attempt = await broker.count_attempt(caller)
        if attempt.retry_after is not None:
            return attempt
    pytest.fail("no attempt went over the rate")


# the token


async def test_mint_issues_a_token_with_the_requested_scopes_and_lifetime(
    platform: Platform, broker: BrokerUseCases, clock: FakeClock
) -> None:
    alice = await caller_of(platform)

    issued = await mint(broker, alice, request(scopes=(DELETE, READ), ttl=600))

    record = issued.record
    assert (record.tenant_id, record.principal_id) == ("acme", "alice")
    assert record.scopes == {DELETE, READ}
    assert (record.issued_at, record.expires_at) == (clock.now, clock.now + 600)
    assert record.minted
    assert record.pop_key_id == ""
    assert tokens.is_well_formed(issued.secret)
    assert await platform.store.find_token(tokens.TokenHasher(PEPPER)(issued.secret)) == record


async def test_duplicate_scopes_are_folded(platform: Platform, broker: BrokerUseCases) -> None:
    alice = await caller_of(platform)
    narrow = await caller_of(platform, scopes=(MINT, READ))

    issued = await mint(broker, alice, request(scopes=(DELETE, READ, DELETE, DELETE)))
    with pytest.raises(ScopesNotHeld) as raised:
        await mint(broker, narrow, request(scopes=(WRITE, DELETE, WRITE, READ, DELETE)))

    assert issued.record.scopes == {DELETE, READ}
    assert raised.value.refused == ("vault.items.delete", "vault.items.write")


# lifetimes: the fields


async def test_no_lifetime_asks_for_the_default(clock: FakeClock) -> None:
    policy = MintPolicy(default_ttl_seconds=123, min_ttl_seconds=100, max_ttl_seconds=200)
    platform = await seeded(clock, policy)

    issued = await mint(platform.broker, await caller_of(platform), request(ttl=0))

    assert issued.record.expires_at == clock.now + 123


@pytest.mark.parametrize("ttl", [100, 150, 200])
async def test_lifetimes_within_the_bounds_are_granted_exactly(clock: FakeClock, ttl: int) -> None:
    platform = await seeded(clock, MintPolicy(default_ttl_seconds=123, min_ttl_seconds=100, max_ttl_seconds=200))

    issued = await mint(platform.broker, await caller_of(platform), request(ttl=ttl))

    assert issued.record.expires_at == clock.now + ttl


@pytest.mark.parametrize("ttl", [-1, 1, 99, 201, 3600])
async def test_lifetimes_outside_the_bounds_are_refused_with_the_bounds(clock: FakeClock, ttl: int) -> None:
    platform = await seeded(clock, MintPolicy(default_ttl_seconds=123, min_ttl_seconds=100, max_ttl_seconds=200))

    with pytest.raises(InvalidArgument) as raised:
        await mint(platform.broker, await caller_of(platform), request(ttl=ttl))

    (violation,) = raised.value.violations
    assert violation.field == "requestedTtlSeconds"
    assert "between 100 and 200 seconds" in violation.description
    assert "default of 123" in violation.description


# scope and tenant


async def test_the_caller_needs_the_mint_scope(platform: Platform, broker: BrokerUseCases) -> None:
    for caller in (await caller_of(platform, "bob"), await caller_of(platform, scopes=(READ, DELETE))):
        with pytest.raises(PermissionDenied, match=r"lacks the scope broker\.tokens\.mint"):
            await mint(broker, caller, request())


async def test_the_mint_scope_must_still_be_allowed_for_the_principal(
    platform: Platform, broker: BrokerUseCases
) -> None:
    alice = await caller_of(platform)
    demoted = dataclasses.replace(alice.principal, allowed_scopes=frozenset({READ, DELETE}))

    with pytest.raises(PermissionDenied, match=r"lacks the scope broker\.tokens\.mint"):
        await mint(broker, dataclasses.replace(alice, principal=demoted), request())


async def test_a_token_for_another_tenant_is_denied(platform: Platform, broker: BrokerUseCases) -> None:
    alice = await caller_of(platform)

    with pytest.raises(PermissionDenied, match="another tenant"):
        await mint(broker, alice, request(tenant_id="globex"))
    assert (await mint(broker, await caller_of(platform, "carol"), request(tenant_id="globex"))).record.tenant_id == (
        "globex"
    )


# scopes held


async def test_scopes_not_held_by_the_calling_token_are_refused_by_name(
    platform: Platform, broker: BrokerUseCases
) -> None:
    parent = await caller_of(platform, scopes=(MINT, READ))

    with pytest.raises(ScopesNotHeld) as raised:
        await mint(broker, parent, request(scopes=(READ, WRITE, DELETE)))

    assert raised.value.refused == ("vault.items.delete", "vault.items.write")
    assert isinstance(raised.value, PermissionDenied)


async def test_scopes_the_principal_lost_are_refused_even_if_the_token_has_them(
    platform: Platform, broker: BrokerUseCases
) -> None:
    # A token that expires too soon as well: the scopes are what is refused, before the
    # parent's expiry is looked at (not by the issuer's own check, after it).
    alice = await caller_of(platform, ttl=59)
    demoted = dataclasses.replace(alice.principal, allowed_scopes=frozenset({MINT, READ}))

    with pytest.raises(ScopesNotHeld) as raised:
        await mint(broker, dataclasses.replace(alice, principal=demoted), request(scopes=(READ, DELETE)))

    assert raised.value.refused == ("vault.items.delete",)


async def test_a_child_may_ask_for_all_its_parent_holds(platform: Platform, broker: BrokerUseCases) -> None:
    parent = await caller_with(await mint(broker, await caller_of(platform), request(scopes=(MINT, DELETE))), platform)

    child = await mint(broker, parent, request(scopes=(MINT, DELETE)))

    assert child.record.scopes == {MINT, DELETE}


# the parent's expiry


async def test_a_child_never_outlives_its_parent(platform: Platform, broker: BrokerUseCases, clock: FakeClock) -> None:
    parent = await caller_of(platform, ttl=1000)
    clock.advance(500)

    capped = await mint(broker, parent, request(ttl=900))
    shorter = await mint(broker, parent, request(ttl=400))

    assert capped.record.expires_at == parent.token.expires_at
    assert shorter.record.expires_at == clock.now + 400


async def test_the_minimum_lifetime_left_is_enough(
    platform: Platform, broker: BrokerUseCases, clock: FakeClock
) -> None:
    parent = await caller_of(platform, ttl=1000)
    clock.advance(1000 - 60)

    issued = await mint(broker, parent, request(ttl=900))

    assert issued.record.expires_at == parent.token.expires_at == clock.now + 60


async def test_a_parent_with_less_than_the_minimum_left_is_refused(
    platform: Platform, broker: BrokerUseCases, clock: FakeClock
) -> None:
    parent = await caller_of(platform, ttl=1000)
    clock.advance(1000 - 59)

    with pytest.raises(
        ParentExpiresSoon, match=r"expires in 59 s, sooner than the shortest lifetime of a token \(60 s\)"
    ):
        await mint(broker, parent, request(ttl=60))


# limits


async def test_over_the_rate_the_mint_is_refused_with_when_to_retry(clock: FakeClock) -> None:
    policy = MintPolicy(mints_per_minute=3)
    platform = await seeded(clock, policy)
    alice = await caller_of(platform)
    for _ in range(3):
        await mint(platform.broker, alice, request())
        clock.advance(10)

    with pytest.raises(LimitReached, match="at most 3 mint attempts a minute") as raised:
        await mint(platform.broker, alice, request())

    # The refused attempt counts too: one more fits once the first two (at 0 and 10 s) have left the window.
    assert raised.value.retry_after_seconds == 40
    clock.advance(40)
    await mint(platform.broker, alice, request())


async def test_every_attempt_counts_refused_or_not(clock: FakeClock) -> None:
    policy = MintPolicy(mints_per_minute=4)
    platform = await seeded(clock, policy)
    broker = platform.broker
    alice = await caller_of(platform)
    refusals = [request(ttl=5), request(tenant_id="globex"), request(scopes=(READ, WRITE, DELETE, MINT, READ))]
    with pytest.raises(InvalidArgument):
        await mint(broker, alice, refusals[0])
    with pytest.raises(PermissionDenied):
        await mint(broker, alice, refusals[1])
    await mint(broker, alice, refusals[2])
    await broker.count_attempt(alice)  # counted, never used

    with pytest.raises(LimitReached) as raised:
        await mint(broker, alice, request())

    assert raised.value.retry_after_seconds == 60


async def test_the_rate_is_per_principal(clock: FakeClock) -> None:
    policy = MintPolicy(mints_per_minute=2)
    platform = await seeded(clock, policy)
    alice, carol = await caller_of(platform), await caller_of(platform, "carol")
    other_alice = await caller_of(platform)
    await over_the_rate(platform.broker, alice, policy)

    with pytest.raises(LimitReached):  # another token of the same principal shares its rate
        await mint(platform.broker, other_alice, request())
    assert (await mint(platform.broker, carol, request(tenant_id="globex"))).record.principal_id == "carol"


async def test_the_number_of_live_minted_tokens_is_capped(clock: FakeClock) -> None:
    platform = await seeded(clock, MintPolicy(active_minted_cap=3, mints_per_minute=100))
    broker = platform.broker
    alice = await caller_of(platform)
    first = await mint(broker, alice, request(ttl=120))
    second = await mint(broker, alice, request(ttl=600))
    await mint(broker, alice, request(ttl=600))
    await caller_of(platform)  # operator-issued tokens do not count

    with pytest.raises(LimitReached, match="already has 3 active minted tokens") as capped:
        await mint(broker, alice, request())
    clock.advance(120)  # the first expires
    await mint(broker, alice, request())
    with pytest.raises(LimitReached):
        await mint(broker, alice, request())
    assert await platform.store.revoke_token_tree(second.record.token_id, OPERATOR)  # so does a revoked one
    await mint(broker, alice, request())

    assert capped.value.retry_after_seconds == 120
    assert not first.record.is_live(clock.now)


async def test_the_cap_is_per_principal(clock: FakeClock) -> None:
    platform = await seeded(clock, MintPolicy(active_minted_cap=1))
    alice = await caller_of(platform)
    await mint(platform.broker, alice, request())

    with pytest.raises(LimitReached):
        await mint(platform.broker, alice, request())
    await mint(platform.broker, await caller_of(platform, "carol"), request(tenant_id="globex"))


# the order of the checks


async def test_checks_run_in_the_contracts_order(clock: FakeClock) -> None:
    """A request wrong in every way is refused for the first check of the contract; putting
    that right, for the next one: key proof, fields, scope, tenant, scopes held, parent
    expiry, rate, active cap."""
    policy = MintPolicy(mints_per_minute=3, active_minted_cap=1)
    platform = await seeded(clock, policy)
    broker = platform.broker
    key = new_key("ec")
    alice = await caller_of(platform, scopes=(MINT, READ))
    within_rate = await broker.count_attempt(alice)
    await broker.mint(alice, request(ttl=60), within_rate)  # fills the cap until now + 60
    over_rate = await over_the_rate(broker, alice, policy)
    without_mint_scope = await caller_of(platform, scopes=(READ,))
    expiring = await caller_of(platform, ttl=59, scopes=(MINT, READ))
    tenant_id, ttl = "globex", 5  # another tenant, too short
    scopes: tuple[Scope, ...] = (READ, DELETE)  # more than held

    def wrong(caller: Caller) -> MintRequest:
        return bound_request(key, caller, clock, tenant_id=tenant_id, scopes=scopes, ttl=ttl)

    unproven = request(tenant_id, scopes, ttl, pop_key_id=key.thumbprint(), proof=None)
    with pytest.raises(Unauthenticated, match="DPoP proof: missing DPoP header"):
        await broker.mint(without_mint_scope, unproven, over_rate)
    with pytest.raises(InvalidArgument, match="requestedTtlSeconds"):
        await broker.mint(without_mint_scope, wrong(without_mint_scope), over_rate)
    ttl = 0
    with pytest.raises(PermissionDenied, match=r"lacks the scope broker\.tokens\.mint"):
        await broker.mint(without_mint_scope, wrong(without_mint_scope), over_rate)
    with pytest.raises(PermissionDenied, match="another tenant"):
        await broker.mint(expiring, wrong(expiring), over_rate)
    tenant_id = "acme"
    with pytest.raises(ScopesNotHeld, match=r"vault\.items\.delete"):
        await broker.mint(expiring, wrong(expiring), over_rate)
    scopes = (READ,)
    with pytest.raises(ParentExpiresSoon):
        await broker.mint(expiring, wrong(expiring), over_rate)
    with pytest.raises(LimitReached, match="mint attempts a minute") as rate:
        await broker.mint(alice, wrong(alice), over_rate)
    with pytest.raises(LimitReached, match="active minted tokens"):
        await broker.mint(alice, wrong(alice), within_rate)
    clock.advance(60)  # the minted token expires
    issued = await broker.mint(alice, wrong(alice), within_rate)

    assert rate.value.retry_after_seconds == over_rate.retry_after
    assert issued.record.pop_key_id == key.thumbprint()
    assert issued.record.scopes == {READ}


# key binding


async def test_binding_a_new_token_needs_a_valid_proof_of_the_key(
    platform: Platform, broker: BrokerUseCases, clock: FakeClock
) -> None:
    alice = await caller_of(platform)
    key, other_key = new_key("ec"), new_key("ed25519")
    thumbprint = key.thumbprint()
    other_token = await caller_of(platform)

    with pytest.raises(Unauthenticated, match="missing DPoP header"):
        await mint(broker, alice, request(pop_key_id=thumbprint))
    with pytest.raises(Unauthenticated, match="jwk is not the key the token is bound to"):
        await mint(
            broker,
            alice,
            request(pop_key_id=thumbprint, proof=build_proof(other_key, MINT_URL, alice.secret, clock.now)),
        )
    with pytest.raises(Unauthenticated, match="ath does not match the access token"):
        await mint(broker, alice, bound_request(key, other_token, clock))
    with pytest.raises(Unauthenticated, match="iat"):
        await mint(
            broker,
            alice,
            request(pop_key_id=thumbprint, proof=build_proof(key, MINT_URL, alice.secret, clock.now - 61)),
        )
    proof = build_proof(key, MINT_URL, alice.secret, clock.now)
    issued = await mint(broker, alice, request(pop_key_id=thumbprint, proof=proof))
    with pytest.raises(Unauthenticated, match="jti was already used"):
        await mint(broker, alice, request(pop_key_id=thumbprint, proof=proof))

    assert issued.record.pop_key_id == thumbprint
    assert (await platform.store.find_token(issued.record.secret_hash)) == issued.record


async def test_an_unbound_caller_needs_no_proof_for_an_unbound_token(
    platform: Platform, broker: BrokerUseCases
) -> None:
    issued = await mint(broker, await caller_of(platform), request(proof=None))

    assert issued.record.pop_key_id == ""


async def test_a_bound_tokens_children_keep_its_key(
    platform: Platform, broker: BrokerUseCases, clock: FakeClock
) -> None:
    key = new_key("ed25519")
    alice = await caller_of(platform)
    parent = await caller_with(
        await mint(broker, alice, bound_request(key, alice, clock, scopes=(MINT, READ))), platform
    )

    # The parent's proof was checked when it authenticated: minting asks for none.
    inherited = await mint(broker, parent, request(pop_key_id=""))
    repeated = await mint(broker, parent, request(pop_key_id=key.thumbprint()))

    assert parent.token.pop_key_id == key.thumbprint()
    assert inherited.record.pop_key_id == key.thumbprint()
    assert repeated.record.pop_key_id == key.thumbprint()


async def test_a_bound_tokens_child_cannot_be_bound_to_another_key(
    platform: Platform, broker: BrokerUseCases, clock: FakeClock
) -> None:
    key, other_key = new_key("ec"), new_key("ec")
    alice = await caller_of(platform)
    parent = await caller_with(
        await mint(broker, alice, bound_request(key, alice, clock, scopes=(MINT, READ))), platform
    )

    with pytest.raises(InvalidArgument) as raised:  # even with a valid proof of the other key
        await mint(broker, parent, bound_request(other_key, parent, clock, ttl=5))

    (violation,) = raised.value.violations
    assert violation.field == "popKeyId"
    assert "same key" in violation.description
