"""Sync a vault and print what happens as JSON lines (the tests read them).

{"event": "state", ...} after the listing and after every batch of changes,
{"event": "reconnecting" | "restarting", ...} on the way, {"event": "stopped", ...}
(exit 1) when the server refuses for good. SIGTERM or SIGINT ends it (exit 0). The Python twin
of clients/ts/tools/sync-example.ts; not part of the package (the tests run it with the wheel too).

    python clients/python/tools/sync_example.py BASE_URL TOKEN VAULT_ID [watch|poll]
"""

# ruff: noqa: INP001 - a script beside the package, not a module of any

from __future__ import annotations

import asyncio
import json
import signal
import sys
from typing import Any, Literal

from zkplatform_api.platform.v1.vault_connect import VaultServiceClient
from zkplatform_client.sync import (
    Backoff,
    Changes,
    Reconnecting,
    Restarting,
    Synced,
    SyncEvent,
    SyncStoppedError,
    VaultSync,
)

USAGE = "usage: python sync_example.py BASE_URL TOKEN VAULT_ID [watch|poll]"


def emit(line: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


async def sync(base_url: str, token: str, vault_id: str, mode: Literal["watch", "poll"]) -> int:
    async with VaultServiceClient(base_url) as vault:
        state: VaultSync

        def on_event(event: SyncEvent) -> None:
            if isinstance(event, Synced | Changes):
                items = {item_id: str(item.version) for item_id, item in sorted(state.live_items().items())}
                after = "synced" if isinstance(event, Synced) else "changes"
                cursor = {"cursor": str(event.cursor), "epoch": state.epoch}
                emit({"event": "state", "after": after, **cursor, "items": items})
            elif isinstance(event, Reconnecting):
                emit(
                    {"event": "reconnecting", "code": event.code, "attempt": event.attempt, "cursor": str(event.cursor)}
                )
            elif isinstance(event, Restarting):
                emit({"event": "restarting", "reason": event.reason, "cursor": str(event.cursor)})

        state = VaultSync(
            vault,
            vault_id,
            headers={"Authorization": f"Bearer {token}"},
            mode=mode,
            poll_interval=0.2,
            backoff=Backoff(initial=0.05, maximum=1.0),
            on_event=on_event,
        )
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, task.cancel)
        try:
            await state.run()
        except SyncStoppedError as error:
            emit({"event": "stopped", "code": error.code.value, "reason": error.reason, "message": str(error)})
            return 1
        except asyncio.CancelledError:
            return 0
    return 0


def main(argv: list[str]) -> int:
    if len(argv) not in {3, 4} or not all(argv) or (len(argv) == 4 and argv[3] not in {"watch", "poll"}):
        sys.stderr.write(f"sync_example: bad arguments\n{USAGE}\n")
        return 2
    mode: Literal["watch", "poll"] = "poll" if len(argv) == 4 and argv[3] == "poll" else "watch"
    return asyncio.run(sync(argv[0], argv[1], argv[2], mode))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
