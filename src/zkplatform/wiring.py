"""The domain wired to one store: what the server and the operator's commands both run on."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from zkplatform.config import ConfigError, Settings
from zkplatform.domain.auth import Authenticator
from zkplatform.domain.broker import BrokerUseCases, MintPolicy
from zkplatform.domain.clock import Clock, system_clock
from zkplatform.domain.issuing import TokenIssuer
from zkplatform.domain.key_directory import KeyDirectory
from zkplatform.domain.paging import PageTokens
from zkplatform.domain.readiness import Readiness
from zkplatform.domain.sync import SyncUseCases, WatchPolicy
from zkplatform.domain.token_management import TokenManagement
from zkplatform.domain.tokens import TokenHasher
from zkplatform.domain.vault import VaultUseCases
from zkplatform.messages.sizes import EncodedSizes
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
    sync: SyncUseCases
    directory: KeyDirectory
    readiness: Readiness

    @classmethod
    def build(
        cls,
        store: Store,
        pepper: bytes,
        clock: Clock = system_clock,
        policy: MintPolicy | None = None,
        watch_policy: WatchPolicy | None = None,
    ) -> Platform:
        hasher = TokenHasher(pepper)
        issuer = TokenIssuer(store, store, hasher, clock)
        sizes = EncodedSizes()  # where pages are cut: what their elements take once encoded
        return cls(
            store=store,
            clock=clock,
            authenticator=Authenticator(store, store, hasher, clock),
            issuer=issuer,
            vault=VaultUseCases(store, store, clock, PageTokens(page_token_key(pepper)), sizes),
            broker=BrokerUseCases(
                store,
                issuer,
                policy or MintPolicy(),
                clock,
                TokenManagement(store, PageTokens(hasher.derive_key("list tokens pages")), clock, sizes),
            ),
            # The store's change feed is this worker's: its watches share it.
            sync=SyncUseCases(store, store, store, store.change_feed(), clock, sizes, watch_policy),
            directory=KeyDirectory(store, clock, PageTokens(hasher.derive_key("key log pages"))),
            readiness=Readiness(store.ping),
        )


def page_token_key(pepper: bytes) -> bytes:
    """The key of ListItems page tokens: derived from the pepper, so that every worker and
    host that shares the store and its pepper reads the others' tokens, and distinct from
    the token hashes' key, so that a page token's MAC is never a token hash."""
    return hmac.new(pepper, b"zkplatform page tokens v1", hashlib.sha256).digest()


async def platform_from(settings: Settings) -> Platform:
    """The platform on the configured store, opened and its schema checked."""
    try:
        store = await open_store(settings.store_url, pool_size=settings.store_pool_size)
    except StoreURLError as error:
        raise ConfigError(str(error)) from None
    pepper = load_pepper(settings.token_pepper, settings.state_dir)
    return Platform.build(store, pepper, policy=settings.mint_policy, watch_policy=settings.watch_policy)
