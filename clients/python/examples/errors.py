"""What a failed call says: its reason (an ErrorReason), metadata, field violations, retry delay.

python errors.py BASE_URL TOKEN ITEM_ID
"""

import asyncio
import json
import sys
from typing import Any

from connectrpc.errors import ConnectError

from zkplatform_api.platform.v1.broker_pb2 import MintUserApiTokenRequest
from zkplatform_api.platform.v1.vault_pb2 import (
    CreateItemRequest,
    DeleteItemRequest,
    EncryptedPayload,
    GetItemRequest,
    ListItemsRequest,
    UpdateItemRequest,
    WrappedKey,
)
from zkplatform_client import ErrorReason, clients, error_details


def described(error: ConnectError) -> dict[str, Any]:
    details = error_details(error)  # never raises; reason is None without the platform's ErrorInfo
    return {
        "code": details.code.value,
        "reason": details.reason,
        "metadata": details.metadata,
        "violations": [violation.field for violation in details.violations],
        "retryAfter": details.retry_after,  # seconds, on resource_exhausted and unavailable
    }


async def main(base_url: str, token: str, item_id: str) -> None:
    seen: dict[str, Any] = {}
    payload = EncryptedPayload(alg="A256GCM", nonce="bm9uY2U", ciphertext="c2VjcmV0")
    keys = [WrappedKey(recipient_id="alice", wrap_alg="A256KW", wrapped_key="a2V5")]
    async with clients(base_url, token=token) as platform:
        vault = platform.vault
        try:
            await vault.get_item(GetItemRequest(vault_id="acme-shared", item_id=item_id))
        except ConnectError as error:
            seen["notFound"] = described(error)

        await vault.create_item(
            CreateItemRequest(
                vault_id="acme-shared", item_id=item_id, kind="note", encrypted_payload=payload, wrapped_keys=keys
            )
        )
        try:  # an update on a version this client has not seen: a conflict to resolve
            await vault.update_item(
                UpdateItemRequest(
                    vault_id="acme-shared",
                    item_id=item_id,
                    base_version=7,
                    kind="note",
                    encrypted_payload=payload,
                    wrapped_keys=keys,
                )
            )
        except ConnectError as error:
            details = error_details(error)
            if details.reason_is(ErrorReason.VERSION_MISMATCH):
                seen["conflictAt"] = int(details.metadata["currentVersion"])  # read it again, merge, retry
            seen["conflict"] = described(error)

        try:
            await vault.list_items(ListItemsRequest(vault_id="acme-shared", page_size=-1))
        except ConnectError as error:
            seen["invalid"] = described(error)  # one violation per field

        mint = MintUserApiTokenRequest(
            tenant_id="acme", requested_scopes=["vault.items.read"], requested_ttl_seconds=60
        )
        read_only = (await platform.broker.mint_user_api_token(mint)).token.access_token
    async with clients(base_url, token=read_only) as reader:
        try:
            await reader.vault.delete_item(DeleteItemRequest(vault_id="acme-shared", item_id=item_id, base_version=1))
        except ConnectError as error:
            seen["denied"] = described(error)

    print(json.dumps(seen))


asyncio.run(main(*sys.argv[1:]))
