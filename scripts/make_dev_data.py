"""Write src/zkplatform/dev_data.json: the development data set's keys and sealed items.

`zkplatform serve --dev` seeds the memory store from that file (src/zkplatform/devmode.py):
each principal's recipient key is published in its tenant's directory, and each vault holds
six items sealed by the Python client package (clients/python, docs/sealing.md) for the
keys of the vault's members, so a demo opens them with a member's private key. The private
keys are in the file, and go to the development credentials file: they are demo keys,
public by being committed here, never to be used for anything else.

    PYTHONPATH=clients/python .venv/bin/python scripts/make_dev_data.py

Run it again only to change the data set (it makes new keys, nonces and content keys), and
commit the result; the server never seals anything.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from zkplatform_client import RecipientPrivateKey, SealContext, seal

OUT = Path(__file__).resolve().parents[1] / "src" / "zkplatform" / "dev_data.json"
ITEMS_PER_VAULT = 6

# tenant -> principals; vault -> members (the same as devmode.py's _DATA)
TENANTS = {"acme": ["alice", "bob"], "globex": ["carol"]}
VAULTS = {
    "acme-private": ("acme", ["alice"]),
    "acme-shared": ("acme", ["alice", "bob"]),
    "globex-main": ("globex", ["carol"]),
}
SITES = ["github.com", "mail.example", "bank.example", "wiki.example", "vpn.example", "shop.example"]


def content(vault_id: str, number: int, members: list[str]) -> tuple[str, dict[str, Any]]:
    """An item's kind and its content before sealing: logins and notes, in turn."""
    site = SITES[number - 1]
    if number % 2:
        return "login", {
            "title": f"{site} ({vault_id})",
            "url": f"https://{site}/",
            "username": members[0],
            "password": base64.urlsafe_b64encode(
                hashlib.sha256(f"{vault_id}/{number}".encode()).digest()[:12]
            ).decode(),
        }
    return "note", {"title": f"Note {number} of {vault_id}", "text": f"Shared with {', '.join(members)}."}


def main() -> None:
    keys = {principal: RecipientPrivateKey.generate("X25519") for names in TENANTS.values() for principal in names}
    vaults: dict[str, list[dict[str, Any]]] = {}
    title_key = secrets.token_bytes(32)
    for vault_id, (tenant_id, members) in VAULTS.items():
        items = []
        for number in range(1, ITEMS_PER_VAULT + 1):
            item_id = f"item-{number}"
            kind, document = content(vault_id, number, members)
            plaintext = json.dumps(document, separators=(",", ":")).encode()
            sealed = seal(
                plaintext, [keys[m].public_jwk for m in members], SealContext(tenant_id, vault_id, item_id, kind)
            )
            # A keyed hash, as the API asks (the server must not be able to guess titles); the demo
            # needs no search, so the key is thrown away.
            keyed = hmac.new(title_key, document["title"].encode(), hashlib.sha256).digest()
            title_hash = base64.urlsafe_b64encode(keyed).rstrip(b"=")
            items.append(
                {
                    "itemId": item_id,
                    "kind": kind,
                    "titleHash": title_hash.decode(),
                    "encryptedPayload": json_format.MessageToDict(sealed.encrypted_payload),
                    "wrappedKeys": [json_format.MessageToDict(k) for k in sealed.wrapped_keys],
                }
            )
        vaults[vault_id] = items
    document = {
        "about": "The development data set (scripts/make_dev_data.py): demo keys, public by being "
        "committed, and items sealed for them. Never use these keys for anything else.",
        "principals": {
            principal: {"publicKeyJwk": key.public_jwk, "privateKeyJwk": key.to_jwk()}
            for principal, key in keys.items()
        },
        "vaults": vaults,
    }
    OUT.write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
