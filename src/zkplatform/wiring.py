"""The domain wired to one store: what the server and the operator's commands both run on."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from zkplatform import devmode
from zkplatform.config import ConfigError, Settings
from zkplatform.domain.auth import Authenticator
from zkplatform.domain.broker import BrokerUseCases, MintPolicy
from zkplatform.domain.checkpoints import Checkpoints, LogKeys
from zkplatform.domain.clock import Clock, system_clock
from zkplatform.domain.issuing import TokenIssuer
from zkplatform.domain.key_directory import DEFAULT_PUSH_TIMEOUT_SECONDS, KeyDirectory
from zkplatform.domain.paging import PageTokens
from zkplatform.domain.ports.store import Store
from zkplatform.domain.readiness import Readiness
from zkplatform.domain.sync import SyncUseCases, WatchPolicy, WatchTimer
from zkplatform.domain.token_management import TokenManagement
from zkplatform.domain.tokens import TokenHasher
from zkplatform.domain.vault import VaultUseCases
from zkplatform.domain.witnessing import Witness, WitnessPusher
from zkplatform.log_keys import ephemeral_log_keys, log_keys_for, read_witnesses, witness_quorum
from zkplatform.messages.sizes import EncodedSizes
from zkplatform.pepper import load_pepper
from zkplatform.store import StoreURLError, open_store
from zkplatform.witness.endpoints import HttpWitness


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
    # The witnesses, and what sends them checkpoints (None without witnesses: checkpoints are
    # served as the log keys sign them).
    witnesses: tuple[Witness, ...] = ()
    witness_pusher: WitnessPusher | None = None
    # What reaches the witnesses over HTTP, closed with the platform.
    http: httpx.AsyncClient | None = None

    @classmethod
    def build(  # noqa: PLR0913 # the store and the policies; the key log's keys and witnesses
        cls,
        store: Store,
        pepper: bytes,
        clock: Clock = system_clock,
        policy: MintPolicy | None = None,
        watch_policy: WatchPolicy | None = None,
        *,
        log_keys: LogKeys | None = None,
        witnesses: Sequence[Witness] = (),
        quorum: int | None = None,
        witness_timeout: float = DEFAULT_PUSH_TIMEOUT_SECONDS,
        http: httpx.AsyncClient | None = None,
        watch_timer: WatchTimer | None = None,
    ) -> Platform:
        """The platform on `store`. Without log keys, a new one (a log nobody can verify
        tomorrow: for tests); without witnesses, checkpoints are served as the log key signs
        them; the quorum defaults to every witness. Watches pace their heartbeats on the event
        loop's clock, or on `watch_timer` (a test's)."""
        hasher = TokenHasher(pepper)
        issuer = TokenIssuer(store, store, hasher, clock)
        sizes = EncodedSizes()  # where pages are cut: what their elements take once encoded
        keys = log_keys or ephemeral_log_keys()
        checkpoints = Checkpoints(
            store, keys, [witness.name for witness in witnesses], len(witnesses) if quorum is None else quorum
        )
        pusher = None
        if witnesses:
            pusher = WitnessPusher(store, witnesses, checkpoints.latest, clock, timeout=witness_timeout)
        # The feed's connection to the store ending (PostgreSQL's LISTEN) is a reason to probe at once:
        # watches then end as soon as the store is known down.
        readiness = Readiness(store.ping)
        feed = store.change_feed()
        feed.on_lost(readiness.suspect)
        directory = KeyDirectory(
            store,
            store,
            checkpoints,
            clock,
            PageTokens(hasher.derive_key("key log pages")),
            pusher,
            witness_timeout,
        )
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
            sync=SyncUseCases(store, store, store, feed, clock, sizes, watch_policy, watch_timer, readiness),
            directory=directory,
            readiness=readiness,
            witnesses=tuple(witnesses),
            witness_pusher=pusher,
            http=http,
        )

    async def close(self) -> None:
        """Close what the platform opened: the store, and the witnesses' HTTP client."""
        try:
            if self.http is not None:
                await self.http.aclose()
        finally:
            await self.store.close()


def page_token_key(pepper: bytes) -> bytes:
    """The key of ListItems page tokens: derived from the pepper, so that every worker and
    host that shares the store and its pepper reads the others' tokens, and distinct from
    the token hashes' key, so that a page token's MAC is never a token hash."""
    return hmac.new(pepper, b"zkplatform page tokens v1", hashlib.sha256).digest()


async def platform_from(settings: Settings) -> Platform:
    """The platform on the configured store, opened and its schema checked, with the configured
    log keys and witnesses (in development mode, the development ones)."""
    if settings.dev:
        keys = devmode.log_keys()
        configured = []
        quorum = 1
    else:
        keys = log_keys_for(settings)
        configured = read_witnesses(settings.witnesses_file) if settings.witnesses_file is not None else []
        quorum = witness_quorum(settings, configured)
    try:
        store = await open_store(settings.store_url, pool_size=settings.store_pool_size)
    except StoreURLError as error:
        raise ConfigError(str(error)) from None
    try:
        pepper = load_pepper(settings.token_pepper, settings.state_dir)
    except BaseException:
        await store.close()
        raise
    timeout = settings.witness_timeout_seconds
    http = httpx.AsyncClient(follow_redirects=False) if configured else None
    witnesses = [Witness(HttpWitness(c.url, client=http, timeout=timeout), c.verifier) for c in configured]
    if settings.dev:
        witnesses = [devmode.witness(keys)]
    return Platform.build(
        store,
        pepper,
        policy=settings.mint_policy,
        watch_policy=settings.watch_policy,
        log_keys=keys,
        witnesses=witnesses,
        quorum=quorum,
        witness_timeout=timeout,
        http=http,
    )
