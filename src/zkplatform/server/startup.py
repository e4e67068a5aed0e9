"""What `zkplatform serve` checks and prepares before it binds its port: the store, the key
log's signing keys and witnesses."""

from __future__ import annotations

import logging

from zkplatform.config import Settings
from zkplatform.log_keys import VERIFIER_KEY_SUFFIX, local_key_path, local_log_key, log_keys_for, read_witnesses
from zkplatform.log_keys import witness_quorum as check_witness_quorum
from zkplatform.store import display_url, open_store

log = logging.getLogger("zkplatform")


async def prepare_store(url: str, *, migrate: bool) -> None:
    """Open the store once: a bad URL, an unreachable server or another schema version stops here."""
    if migrate:
        store = await open_store(url, check_schema=False)
        try:
            applied = await store.migrate()
        finally:
            await store.close()
        if applied:
            log.info("migrated %s: applied version(s) %s", display_url(url), ", ".join(map(str, applied)))
    store = await open_store(url)
    await store.close()


def check_transparency(settings: Settings) -> None:
    """The log keys and witnesses usable, before anything starts (a SQLite store's own log key
    aside: `local_log_key_made` makes it once the database is there)."""
    if settings.dev:
        return
    if settings.log_key_files or local_key_path(settings.store_url) is None:
        log_keys_for(settings)
    witnesses = read_witnesses(settings.witnesses_file) if settings.witnesses_file is not None else []
    check_witness_quorum(settings, witnesses)


def local_log_key_made(settings: Settings) -> None:
    """A SQLite store's own log key, made now when there is none (once, so that the workers only
    read it), and where its verifier key is."""
    local = None if settings.dev or settings.log_key_files else local_key_path(settings.store_url)
    if local is None:
        return
    keys, created = local_log_key(local, settings.log_name)
    verifier = local.with_name(local.name + VERIFIER_KEY_SUFFIX)
    made = "made" if created else "kept"
    log.info("log key %s %s in %s; its verifier key, which clients pin, is in %s", keys.name, made, local, verifier)
