"""End-to-end encryption with a verified key directory, on `zkplatform serve --dev`: bob's phone
(his demo device) endorses his new laptop, whose keys are kept in a key file under a passphrase;
alice seals a note for every live device of alice and bob that the key log she verified holds,
signed by her device, and creates the item; bob's laptop, its keys read back from their file,
opens it and is told who sealed it, checked against the key log bob verified. Then alice shares
it with dave too (an update of its wrapped keys and signature alone, named by a FieldMask), and
dave's demo device opens it.

python sealing.py CREDENTIALS_FILE ITEM_ID STATE_DIR
"""

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from google.protobuf.field_mask_pb2 import FieldMask

from zkplatform_api.platform.v1.vault_pb2 import CreateItemRequest, GetItemRequest, UpdateItemRequest
from zkplatform_client import (
    DeviceKeyPair,
    FileKeyLogStore,
    KeyDirectory,
    Me,
    MemoryKeyLogStore,
    SealContext,
    TrustPolicy,
    clients,
    open_item,
    seal,
    share,
)


async def main(credentials: dict[str, Any], item_id: str, state_dir: Path) -> None:
    principals = {p["principalId"]: p for t in credentials["tenants"] for p in t["principals"]}
    alice, bob, dave = principals["alice"], principals["bob"], principals["dave"]
    # The log key and witnesses every client trusts, from the operator, out of band.
    policy = TrustPolicy(credentials["logKeys"], credentials["witnesses"], credentials["witnessQuorum"])
    # Each device makes its keys once and keeps to_jwks() (its private keys: secrets); the
    # demo devices' are in the credentials file.
    phone = DeviceKeyPair.from_jwks(bob["signingKeyJwk"], bob["privateKeyJwk"])
    laptop = DeviceKeyPair.generate("P-256")
    # A new device keeps its private keys in a key file, encrypted under its user's passphrase
    # (PBES2: a wrong one is SealingError WRONG_PASSPHRASE). A real app asks the user for it.
    passphrase = os.environ.get("DEMO_PASSPHRASE", "a demo passphrase, never a real one")
    key_file = state_dir / "bob-laptop.jwe"
    key_file.write_text(laptop.to_key_file(passphrase, tenant_id="acme", principal_id="bob"))

    async with clients(credentials["baseUrl"], token=bob["token"]) as platform:
        # The laptop shows its statement to the phone (a QR code, say), which endorses it.
        shown = laptop.device_statement("acme", "bob", endorser=phone.device_id)
        phone_state = FileKeyLogStore(state_dir / "bob-phone.json")
        bobs_phone = KeyDirectory(platform.directory, "acme", policy, phone_state, me=Me("bob"), device=phone)
        await bobs_phone.add_device(shown, phone)
        # Verified, the phone's own endorsement raises no alert; what another device did to bob
        # would (bobs_phone.alerts(), and on_alert=... when it is made).
        await bobs_phone.verify()

    async with clients(credentials["baseUrl"], token=alice["token"]) as platform:
        # What alice's client verified is kept in a file: every later verification checks that
        # the log still extends it (KeyLogError when it was rewritten, forked or rolled back).
        alices_device = DeviceKeyPair.from_jwks(alice["signingKeyJwk"], alice["privateKeyJwk"])
        directory = KeyDirectory(
            platform.directory,
            "acme",
            policy,
            FileKeyLogStore(state_dir / "alice.json"),
            me=Me("alice"),
            device=alices_device,
        )
        found = await directory.recipient_keys(["alice", "bob"])

        context = SealContext(tenant_id="acme", vault_id="acme-shared", item_id=item_id, kind="note")
        recipients = [key for keys in found.values() for key in keys]
        # Signed by alice's device for version 1, the version CreateItem makes.
        sealed = seal(b"the wifi password is hunter2", recipients, context, alices_device)
        await platform.vault.create_item(
            CreateItemRequest(
                vault_id=context.vault_id,
                item_id=context.item_id,
                kind=context.kind,
                encrypted_payload=sealed.encrypted_payload,
                wrapped_keys=sealed.wrapped_keys,
            )
        )

    async with clients(credentials["baseUrl"], token=bob["token"]) as platform:
        item = (await platform.vault.get_item(GetItemRequest(vault_id="acme-shared", item_id=item_id))).item
        bobs_laptop = DeviceKeyPair.from_key_file(key_file.read_text(), passphrase)
        laptop_state = FileKeyLogStore(state_dir / "bob-laptop.json")
        laptops_log = KeyDirectory(platform.directory, "acme", policy, laptop_state, me=Me("bob"), device=bobs_laptop)
        # SealingError if not for this key, tampered with, or not signed by a device of the verified log.
        opened = open_item(item, bobs_laptop.recipient_key(), await laptops_log.verify())

    async with clients(credentials["baseUrl"], token=alice["token"]) as platform:
        # Sharing opens the item with alice's key, wraps its content key for dave's devices too and
        # signs again for the next version; only the wrapped keys and the signed payload change.
        item = (await platform.vault.get_item(GetItemRequest(vault_id="acme-shared", item_id=item_id))).item
        # The same file: this verification checks that the log still extends what was verified then.
        alices_store = FileKeyLogStore(state_dir / "alice.json")
        directory = KeyDirectory(platform.directory, "acme", policy, alices_store, me=Me("alice"), device=alices_device)
        daves_keys = (await directory.recipient_keys(["dave"]))["dave"]
        shared = share(item, alices_device.recipient_key(), daves_keys, alices_device, await directory.verify())
        await platform.vault.update_item(
            UpdateItemRequest(
                vault_id=context.vault_id,
                item_id=context.item_id,
                base_version=item.version,
                encrypted_payload=shared.encrypted_payload,
                wrapped_keys=shared.wrapped_keys,
                update_mask=FieldMask(paths=["encrypted_payload", "wrapped_keys"]),
            )
        )

    async with clients(credentials["baseUrl"], token=dave["token"]) as platform:
        item = (await platform.vault.get_item(GetItemRequest(vault_id="acme-shared", item_id=item_id))).item
        daves_device = DeviceKeyPair.from_jwks(dave["signingKeyJwk"], dave["privateKeyJwk"])
        # In memory, for brevity here: an application keeps its FileKeyLogStore, as alice's does.
        daves_log = KeyDirectory(platform.directory, "acme", policy, MemoryKeyLogStore(), me=Me("dave"))
        opened_by_dave = open_item(item, daves_device.recipient_key(), await daves_log.verify())

    print(
        json.dumps(
            {
                "devices": {principal: len(keys) for principal, keys in found.items()},
                "opened": opened.plaintext.decode(),
                "sealedBy": None if opened.sealed_by is None else opened.sealed_by.principal_id,
                "sharedWithDave": {"version": item.version, "opened": opened_by_dave.plaintext.decode()},
            }
        )
    )


asyncio.run(main(json.loads(Path(sys.argv[1]).read_text()), sys.argv[2], Path(sys.argv[3])))
