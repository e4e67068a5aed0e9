"""The domain wired to one store: what the server and the operator's commands both run on."""

from __future__ import annotations

from dataclasses import dataclass

from zkplatform.config import ConfigError, Settings
from zkplatform.domain.auth import Authenticator
from zkplatform.domain.broker import BrokerUseCases, MintPolicy
from zkplatform.domain.clock import Clock, system_clock
from zkplatform.domain.issuing import TokenIssuer
from zkplatform.domain.tokens import TokenHasher
from zkplatform.domain.vault import VaultUseCases
from zkplatform.pepper import load_pepper
from zkplatform.repository import Store
from zkplatform.store import StoreURLError, open_store


@dataclass(frozen=True, slots=True)
class Platform:
    """The domain, wired to one store."""

    store: Store
    clock: Clock
    authenticator: Authenticator
    issuer: TokenIssuer
    vault: VaultUseCases
    broker: BrokerUseCases

    @classmethod
    def build(
        cls, store: Store, pepper: bytes, clock: Clock = system_clock, policy: MintPolicy | None = None
    ) -> Platform:
        hasher = TokenHasher(pepper)
        issuer = TokenIssuer(store, store, hasher, clock)
        return cls(
            store=store,
            clock=clock,
            authenticator=Authenticator(store, store, hasher, clock),
            issuer=issuer,
            vault=VaultUseCases(store, store, clock),
            broker=BrokerUseCases(store, issuer, policy or MintPolicy(), clock),
        )


async def platform_from(settings: Settings) -> Platform:
    """The platform on the configured store, opened and its schema checked."""
    try:
        store = await open_store(settings.store_url)
    except StoreURLError as error:
        raise ConfigError(str(error)) from None
    pepper = load_pepper(settings.token_pepper, settings.state_dir)
    return Platform.build(store, pepper, policy=settings.mint_policy)
