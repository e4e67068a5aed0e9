"""Keep a vault's replica in a file: resume from it (no listing) after a restart of either side,
list again only when the server says the cursor expired. Prints each event as a JSON line.

python sync.py BASE_URL TOKEN VAULT_ID STATE_FILE [TOKEN_TTL_SECONDS]
"""

import asyncio
import json
import sys

from zkplatform_api.platform.v1.broker_pb2 import MintUserApiTokenRequest
from zkplatform_client import (
    Changes,
    FileSyncStore,
    Reconnecting,
    Restarting,
    Resumed,
    Synced,
    SyncEvent,
    VaultSync,
    clients,
)


async def main(base_url: str, token: str, vault_id: str, state_file: str, ttl: str = "3600") -> None:
    async with clients(base_url, token=token) as platform:
        # The sync's calls carry short-lived read-only tokens, minted again whenever one expires
        # (during a watch too: the sync reconnects from its cursor with the new one).
        async def read_only_token() -> str:
            request = MintUserApiTokenRequest(
                tenant_id="acme", requested_scopes=["vault.items.read"], requested_ttl_seconds=int(ttl)
            )
            return (await platform.broker.mint_user_api_token(request)).token.access_token

        async with clients(base_url, token=read_only_token) as reader:

            def show(event: SyncEvent) -> None:
                line: dict[str, object] = {"event": type(event).__name__.lower(), "cursor": str(event.cursor)}
                if isinstance(event, Synced | Resumed | Changes):
                    line["items"] = {i: str(item.version) for i, item in sorted(sync.live_items().items())}
                if isinstance(event, Reconnecting | Restarting):
                    line["reason"] = event.reason
                print(json.dumps(line), flush=True)

            # Loads STATE_FILE when it exists (else lists the vault), saves it after every change.
            sync = VaultSync(reader.vault, vault_id, store=FileSyncStore(state_file), on_event=show)
            await sync.run()  # until cancelled; SyncStoppedError on a refusal retrying cannot change


asyncio.run(main(*sys.argv[1:]))
