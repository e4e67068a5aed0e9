"""End-to-end encryption: bob publishes his key; alice seals a note for both of them with the
keys the verified key log vouches for, and creates the item; bob reads it and opens it.

python sealing.py BASE_URL ALICE_TOKEN BOB_TOKEN ITEM_ID KEY_LOG_FILE
"""

import asyncio
import json
import os
import sys

from zkplatform_api.platform.v1.vault_pb2 import CreateItemRequest, GetItemRequest
from zkplatform_client import (
    FileKeyLogStore,
    KeyDirectory,
    RecipientPrivateKey,
    SealContext,
    clients,
    open_item,
    seal,
)


async def main(base_url: str, alice_token: str, bob_token: str, item_id: str, key_log_file: str) -> None:
    # Each device makes its key pair once, keeps key.to_jwk() (the private key: a secret) and
    # loads it again with RecipientPrivateKey.from_jwk(saved). Only the public half is published.
    alice_key = RecipientPrivateKey.generate("X25519")
    bob_key = RecipientPrivateKey.generate("P-256")
    async with clients(base_url, token=bob_token) as bob:
        await KeyDirectory(bob.directory).publish(bob_key)

    async with clients(base_url, token=alice_token) as alice:
        # The verified head of the tenant's key log is kept in a file: every later call checks
        # that the log still extends it (KeyLogError when it was rewritten or forked).
        directory = KeyDirectory(alice.directory, FileKeyLogStore(key_log_file))
        await directory.publish(alice_key)
        recipients = await directory.recipient_keys(["alice", "bob"])

        context = SealContext(tenant_id="acme", vault_id="acme-shared", item_id=item_id, kind="note")
        sealed = seal(b"the wifi password is hunter2", recipients, context)
        await alice.vault.create_item(
            CreateItemRequest(
                vault_id=context.vault_id,
                item_id=context.item_id,
                kind=context.kind,
                encrypted_payload=sealed.encrypted_payload,
                wrapped_keys=sealed.wrapped_keys,
            )
        )

    async with clients(base_url, token=bob_token) as bob:
        item = (await bob.vault.get_item(GetItemRequest(vault_id="acme-shared", item_id=item_id))).item
        opened = open_item(item, bob_key)  # SealingError when it is not for this key, or was tampered with

    print(
        json.dumps(
            {
                "recipients": sorted({key.principal_id for key in recipients}),
                "opened": opened.decode(),
            }
        )
    )


asyncio.run(main(*sys.argv[1:]))
# pyqwest 0.12 (connectrpc's HTTP client) can abort while Python 3.11 to 3.13 shut down, after
# everything ran; a script whose exit code matters leaves without that shutdown.
sys.stdout.flush()
os._exit(0)
