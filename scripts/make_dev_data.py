"""Write src/zkplatform/dev_data.json: the development data set's keys and sealed items.

`zkplatform serve --dev` seeds the memory store from that file (src/zkplatform/devmode.py):
each principal gets a demo device (an Ed25519 signing key, and its X25519 agreement key), which
it publishes in its tenant's key log; each vault holds six items sealed in version 2 by the
Python client package (clients/python, docs/sealing.md) for the agreement keys of the vault's
members and signed by the demo device of its first member (for version 1: the server creates
them at version 1), so a demo opens them with a member's private key and sees who sealed them;
the development log key signs the key logs and the development witness cosigns them. The
private keys are in the file, and go to the development credentials file: they are demo keys,
public by being committed here, never to be used for anything else.

    PYTHONPATH=clients/python .venv/bin/python scripts/make_dev_data.py [--reseal | --new-keys]

The signing keys, the log key and the witness key are derived from fixed labels, so running it
again writes the same ones. The agreement keys and the sealed items are kept from the file as
it is, but for a principal new to TENANTS, which gets an agreement key (and every item is sealed
again); `--reseal` seals the items again (new content keys and nonces) for the same agreement
keys, `--new-keys` makes new agreement keys first (and so seals again), only to change the data
set. Commit the result; the server never seals anything.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import secrets
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from google.protobuf import json_format

from zkplatform_tlog.note import generate_cosigner_key, generate_signer_key
from zkplatform_tlog.statements import b64url, canonical_json

OUT = Path(__file__).resolve().parents[1] / "src" / "zkplatform" / "dev_data.json"
ITEMS_PER_VAULT = 6

# tenant -> principals; vault -> members (the same as devmode.py's _DATA)
TENANTS = {"acme": ["alice", "bob", "dave"], "globex": ["carol"]}
VAULTS = {
    "acme-private": ("acme", ["alice"]),
    "acme-shared": ("acme", ["alice", "bob", "dave"]),
    "globex-main": ("globex", ["carol"]),
}
SITES = ["github.com", "mail.example", "bank.example", "wiki.example", "vpn.example", "shop.example"]
# The names of the development log key (the first element of the logs' origins) and witness key.
LOG_NAME = "zkplatform.dev"
WITNESS_NAME = "witness.zkplatform.dev"


def derived_seed(label: str) -> bytes:
    """32 bytes fixed by a label: the same demo key on every run."""
    return hashlib.sha256(f"zkplatform development data set: {label}".encode()).digest()


def signing_key_jwk(principal: str) -> str:
    """A principal's demo device signing key, as a private Ed25519 JWK (canonical members)."""
    seed = derived_seed(f"device signing key of {principal}")
    public = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes_raw()
    return canonical_json({"crv": "Ed25519", "d": b64url(seed), "kty": "OKP", "x": b64url(public)}).decode()


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


def new_agreement_keys(kept: dict[str, dict[str, str]] | None = None) -> dict[str, dict[str, str]]:
    """A new X25519 agreement key for every principal's demo device, but for those `kept` has."""
    # Only here: keeping the data set as it is needs no client package.
    from zkplatform_client import RecipientPrivateKey  # noqa: PLC0415

    kept = kept or {}
    keys = {p: RecipientPrivateKey.generate("X25519") for names in TENANTS.values() for p in names if p not in kept}
    return {**kept, **{p: {"publicKeyJwk": key.public_jwk, "privateKeyJwk": key.to_jwk()} for p, key in keys.items()}}


def sealed_vaults(principals: dict[str, dict[str, str]]) -> dict[str, list[dict[str, Any]]]:
    """Every vault's items sealed in version 2 for its members' agreement keys, signed for
    version 1 by the demo device of its first member."""
    from zkplatform_client import DeviceKeyPair, SealContext, seal  # noqa: PLC0415

    devices = {
        principal: DeviceKeyPair.from_jwks(signing_key_jwk(principal), keys["privateKeyJwk"])
        for principal, keys in principals.items()
    }
    vaults: dict[str, list[dict[str, Any]]] = {}
    title_key = secrets.token_bytes(32)
    for vault_id, (tenant_id, members) in VAULTS.items():
        items = []
        for number in range(1, ITEMS_PER_VAULT + 1):
            item_id = f"item-{number}"
            kind, document = content(vault_id, number, members)
            plaintext = json.dumps(document, separators=(",", ":")).encode()
            context = SealContext(tenant_id, vault_id, item_id, kind)
            sealed = seal(plaintext, [devices[m].agreement_jwk for m in members], context, devices[members[0]])
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
    return vaults


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reseal", action="store_true", help="seal the items again, for the same keys")
    parser.add_argument("--new-keys", action="store_true", help="new agreement keys, and the items sealed again")
    args = parser.parse_args()
    kept = json.loads(OUT.read_text()) if OUT.exists() else None
    if args.new_keys or kept is None:
        principals = new_agreement_keys()
    else:
        # A principal new to the data set gets a key of its own; the others keep theirs.
        principals = new_agreement_keys(
            {
                name: {"publicKeyJwk": p["publicKeyJwk"], "privateKeyJwk": p["privateKeyJwk"]}
                for name, p in kept["principals"].items()
            }
        )
    # A new principal may be a new member: sealing again is the only way to know it holds.
    if kept is None or args.reseal or args.new_keys or set(principals) != set(kept["principals"]):
        vaults = sealed_vaults(principals)
    else:
        vaults = kept["vaults"]
    log_key, _ = generate_signer_key(LOG_NAME, seed=derived_seed("log key"))
    witness_key, _ = generate_cosigner_key(WITNESS_NAME, seed=derived_seed("witness key"))
    document = {
        "about": "The development data set (scripts/make_dev_data.py): demo keys, public by being "
        "committed, and items sealed for them. Never use these keys for anything else.",
        "logKey": log_key,
        "witnessKey": witness_key,
        "principals": {
            principal: {**keys, "signingKeyJwk": signing_key_jwk(principal)} for principal, keys in principals.items()
        },
        "vaults": vaults,
    }
    OUT.write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
