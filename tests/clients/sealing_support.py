"""What the sealing tests share: the committed test keys and signers (clients/testdata), the
vectors' directory, and items made of Sealed results."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from zkplatform_api.platform.v1.vault_pb2 import Item
from zkplatform_client import DeviceKeyPair, RecipientPrivateKey, SealContext, Sealed
from zkplatform_tlog.statements import b64url_decode

TESTDATA = Path(__file__).resolve().parents[2] / "clients" / "testdata"
PRIVATE_JWKS: dict[str, dict[str, str]] = json.loads((TESTDATA / "recipients.json").read_text())["keys"]
KEYS = {name: RecipientPrivateKey.from_jwk(private) for name, private in PRIVATE_JWKS.items()}
SIGNERS: dict[str, dict[str, object]] = json.loads((TESTDATA / "signers.json").read_text())["signers"]
CONTEXT = SealContext("acme", "acme-shared", "item-1", "note")


def signer_keys(name: str) -> DeviceKeyPair:
    """A signer of signers.json as a device (its agreement key of no use here)."""
    private = SIGNERS[name]["privateJwk"]
    assert isinstance(private, dict)
    signing = Ed25519PrivateKey.from_private_bytes(b64url_decode(private["d"], 32))
    return DeviceKeyPair(signing, X25519PrivateKey.generate())


@dataclass(frozen=True)
class Device:
    principal_id: str
    signing_jwk: str
    live: bool


class Directory:
    """A directory of devices by id, as `open_item` takes one (a verified KeyLogState is the
    real one)."""

    def __init__(self, devices: dict[str, Device]) -> None:
        self.devices = devices

    def device(self, device_id: str) -> Device | None:
        return self.devices.get(device_id)

    @classmethod
    def of_vectors(cls) -> Directory:
        """signers.json's signers whose inDirectory is true, live as `live` says."""
        return cls(
            {
                str(entry["deviceId"]): Device(str(entry["principalId"]), str(entry["signingJwk"]), bool(entry["live"]))
                for entry in SIGNERS.values()
                if entry["inDirectory"]
            }
        )

    @classmethod
    def of(cls, *devices: tuple[str, DeviceKeyPair, bool]) -> Directory:
        return cls({keys.device_id: Device(principal, keys.signing_jwk, live) for principal, keys, live in devices})


def item_of(sealed: Sealed, context: SealContext = CONTEXT) -> Item:
    """The item a create (or update) of `sealed` makes: at the version it was signed for."""
    return Item(
        item_id=context.item_id,
        tenant_id=context.tenant_id,
        vault_id=context.vault_id,
        kind=context.kind,
        version=sealed.version,
        encrypted_payload=sealed.encrypted_payload,
        wrapped_keys=sealed.wrapped_keys,
    )


def copy_of(item: Item) -> Item:
    copy = Item()
    copy.CopyFrom(item)
    return copy
