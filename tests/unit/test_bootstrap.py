"""The operator bootstrap: the only way to a first token outside development mode."""

from __future__ import annotations

import pytest

from tests.actors import OPERATOR
from tests.world import FakeClock
from zkplatform.domain.auth import Presented
from zkplatform.domain.dpop import ProofRequest
from zkplatform.domain.errors import NotFound, ScopesNotHeld
from zkplatform.domain.models import Principal, Role, Scope, Tenant
from zkplatform.wiring import Platform

NO_PROOF = ProofRequest(proof=None, htm="POST", htu="http://testserver/")


async def test_issues_a_root_token_for_a_principal(platform: Platform, clock: FakeClock) -> None:
    await platform.store.add_tenant(Tenant("t1"), OPERATOR)
    await platform.store.add_principal(Principal("root", "t1", Role.OWNER, Role.OWNER.default_scopes), OPERATOR)

    issued = await platform.issuer.issue_for("root", 3600)
    caller = await platform.authenticator.authenticate(Presented(issued.secret, dpop_scheme=False), NO_PROOF)

    assert caller.principal.principal_id == "root"
    assert caller.scopes == frozenset(Scope)
    assert issued.record.expires_at == clock.now + 3600
    assert not issued.record.minted


async def test_a_service_holds_only_what_was_granted(platform: Platform) -> None:
    await platform.store.add_tenant(Tenant("t1"), OPERATOR)
    await platform.store.add_principal(
        Principal("ci", "t1", Role.SERVICE, frozenset({Scope.VAULT_ITEMS_READ})), OPERATOR
    )

    issued = await platform.issuer.issue_for("ci", 600)

    assert issued.record.scopes == {Scope.VAULT_ITEMS_READ}
    with pytest.raises(ScopesNotHeld):
        await platform.issuer.issue_for("ci", 600, [Scope.BROKER_TOKENS_MINT])


async def test_unknown_principal_is_refused(platform: Platform) -> None:
    with pytest.raises(NotFound):
        await platform.issuer.issue_for("nobody", 600)
