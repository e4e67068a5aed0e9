"""Open an item of the development data set (`zkplatform serve --dev`) as one of its principals:
read it with the principal's token, check the tenant's key log, name the principals it is
sealed for, and open it with the principal's demo private key (from the credentials file).

python open_dev_item.py CREDENTIALS_FILE PRINCIPAL VAULT_ID ITEM_ID
"""

import asyncio
import base64
import json
import os
import sys
from pathlib import Path
from typing import Any

from zkplatform_api.platform.v1.vault_pb2 import GetItemRequest
from zkplatform_client import KeyDirectory, RecipientPrivateKey, clients, open_item


async def main(credentials: dict[str, Any], principal_id: str, vault_id: str, item_id: str) -> None:
    (principal,) = [p for t in credentials["tenants"] for p in t["principals"] if p["principalId"] == principal_id]
    private_key = RecipientPrivateKey.from_jwk(principal["privateKeyJwk"])

    async with clients(credentials["baseUrl"], token=principal["token"]) as platform:
        item = (await platform.vault.get_item(GetItemRequest(vault_id=vault_id, item_id=item_id))).item
        directory = KeyDirectory(platform.directory)
        await directory.verify()  # the whole key log, its chain recomputed
        logged = (await directory.state()).keys

    # A wrapped key names its recipient key by the key's thumbprint in hex; the verified log
    # says whose key that is.
    def owner(recipient_id: str) -> str:
        key_id = base64.urlsafe_b64encode(bytes.fromhex(recipient_id)).rstrip(b"=").decode()
        return logged[key_id].principal_id if key_id in logged else "(a key the log does not have)"

    print(
        json.dumps(
            {
                "item": f"{vault_id}/{item_id}",
                "kind": item.kind,
                "sealedFor": sorted(owner(k.recipient_id) for k in item.wrapped_keys),
                "content": json.loads(open_item(item, private_key)),
            }
        )
    )


asyncio.run(main(json.loads(Path(sys.argv[1]).read_text()), *sys.argv[2:]))
# pyqwest 0.12 (connectrpc's HTTP client) can abort while Python 3.11 to 3.13 shut down, after
# everything ran; a script whose exit code matters leaves without that shutdown.
sys.stdout.flush()
os._exit(0)
