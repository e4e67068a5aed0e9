"""Open an item of the development data set (`zkplatform serve --dev`) as one of its principals:
read it with the principal's token, verify the tenant's key log against the log key and the
witness the credentials file pins, name the principals it is sealed for, open it with the
principal's demo device key (from the credentials file) against that verified log, and say who
sealed it: the device whose signature the log vouches for, and its principal. An item that does
not open is one line on stderr with its reason (DELETED for a deleted item), and exit code 1.

python open_dev_item.py CREDENTIALS_FILE PRINCIPAL VAULT_ID ITEM_ID
"""

import asyncio
import base64
import json
import sys
from pathlib import Path
from typing import Any

from zkplatform_api.platform.v1.vault_pb2 import GetItemRequest
from zkplatform_client import (
    DeviceKeyPair,
    KeyDirectory,
    Me,
    MemoryKeyLogStore,
    SealingError,
    TrustPolicy,
    clients,
    open_item,
)


async def main(credentials: dict[str, Any], principal_id: str, vault_id: str, item_id: str) -> int:
    ((tenant_id, principal),) = [
        (t["tenantId"], p) for t in credentials["tenants"] for p in t["principals"] if p["principalId"] == principal_id
    ]
    device = DeviceKeyPair.from_jwks(principal["signingKeyJwk"], principal["privateKeyJwk"])
    # What the operator gives every client out of band: the log key and the witnesses to trust.
    policy = TrustPolicy(credentials["logKeys"], credentials["witnesses"], credentials["witnessQuorum"])

    async with clients(credentials["baseUrl"], token=principal["token"]) as platform:
        item = (await platform.vault.get_item(GetItemRequest(vault_id=vault_id, item_id=item_id))).item
        # In memory here, on purpose: a development server's log starts over each time it starts.
        # An application keeps FileKeyLogStore(path), so that a log rewritten behind its back is refused.
        directory = KeyDirectory(
            platform.directory, tenant_id, policy, MemoryKeyLogStore(), me=Me(principal_id), device=device
        )
        state = await directory.verify()  # every entry replayed, every signature checked

    # A wrapped key names its recipient by the agreement key's thumbprint in hex; the verified
    # log says whose device holds that key.
    owners = {logged.agreement_key_id: logged.principal_id for logged in state.devices.values()}

    # Checked against the verified log: SealingError if the signer is not a device of it, or if
    # the item was changed behind its sealer's back (moved, its recipients or version changed);
    # DELETED for a tombstone, which keeps no content.
    try:
        opened = open_item(item, device.recipient_key(), state)
    except SealingError as error:  # its reason, then why: never a key or content
        sys.stderr.write(f"{vault_id}/{item_id} does not open: {error}\n")
        return 1
    signer = opened.sealed_by  # None only for a version 1 item, which nobody signed
    sealed_by = None if signer is None else {"principal": signer.principal_id, "device": signer.device_id}

    def owner(recipient_id: str) -> str:
        key_id = base64.urlsafe_b64encode(bytes.fromhex(recipient_id)).rstrip(b"=").decode()
        return owners.get(key_id, "(a key the log does not have)")

    print(
        json.dumps(
            {
                "item": f"{vault_id}/{item_id}",
                "kind": item.kind,
                "sealedFor": sorted(owner(k.recipient_id) for k in item.wrapped_keys),
                "sealedBy": sealed_by,
                "content": json.loads(opened.plaintext),
            }
        )
    )
    return 0


sys.exit(asyncio.run(main(json.loads(Path(sys.argv[1]).read_text()), *sys.argv[2:])))
