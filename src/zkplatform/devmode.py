"""Development mode: demo data in the memory store, tokens and demo keys in a credentials file.

The development data set of docs/api.md: two tenants; the first has an owner and two members
and two vaults, the members sharing one with the owner, who has the other alone (so that
sharing with more than one other member needs no admin command); the second has one
principal and one vault. Each principal has a demo device (an Ed25519 signing key
and its X25519 agreement key), published at start as its first device in its tenant's key
log, and every vault holds six live items sealed for the agreement keys of its members, as the
client packages seal them (docs/sealing.md), so that a demo opens them. The key logs are
signed by the development log key and cosigned by the development witness, which runs in
process (quorum 1), so that every answer of the directory carries a cosigned checkpoint.
The keys and the sealed items are read from dev_data.json (scripts/make_dev_data.py made
it with the Python client package): the server itself seals nothing. Each principal gets
a one-hour token with every scope its role allows. The tokens and the demo private keys
go to the credentials file only, never to the server's output.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from zkplatform.domain.audit import Action, Actor
from zkplatform.domain.checkpoints import LogKeys
from zkplatform.domain.clock import Clock, system_clock
from zkplatform.domain.issuing import TokenIssuer
from zkplatform.domain.key_log import AddDevice, Device
from zkplatform.domain.models import EncryptedPayload, Item, Principal, Role, Tenant, Vault, WrappedKey
from zkplatform.domain.ports.store import Store
from zkplatform.domain.witnessing import Witness
from zkplatform.witness.core import WitnessCore
from zkplatform.witness.endpoints import InProcessWitness
from zkplatform.witness.state import MemoryState
from zkplatform_tlog.note import Cosigner, NoteSigner
from zkplatform_tlog.statements import (
    DeviceKeys,
    Entry,
    EntrySignature,
    b64url_decode,
    canonical_public_jwk,
    ed25519_jwk,
    sign_statement,
)

DEV_TOKEN_TTL_SECONDS = 3600

# tenant -> principals (id, role); vaults (id, members)
_DATA: list[tuple[str, list[tuple[str, Role]], list[tuple[str, list[str]]]]] = [
    (
        "acme",
        [("alice", Role.OWNER), ("bob", Role.MEMBER), ("dave", Role.MEMBER)],
        [("acme-private", ["alice"]), ("acme-shared", ["alice", "bob", "dave"])],
    ),
    ("globex", [("carol", Role.OWNER)], [("globex-main", ["carol"])]),
]


@dataclass
class DevTenant:
    tenant_id: str
    principals: list[dict[str, str]] = field(default_factory=list)
    vaults: list[dict[str, Any]] = field(default_factory=list)


@cache
def _data() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(resources.files(__package__).joinpath("dev_data.json").read_text())
    return document


def _demo_items(tenant_id: str, vault_id: str, now: int) -> list[Item]:
    return [
        Item(
            item_id=item["itemId"],
            tenant_id=tenant_id,
            vault_id=vault_id,
            version=1,
            kind=item["kind"],
            title_hash=item["titleHash"],
            updated_at=now,
            payload=EncryptedPayload(**item["encryptedPayload"]),
            wrapped_keys=tuple(
                WrappedKey(key["recipientId"], key["wrapAlg"], key["wrappedKey"]) for key in item["wrappedKeys"]
            ),
        )
        for item in _data()["vaults"][vault_id]
    ]


def log_keys() -> LogKeys:
    """The development log key (a demo key: committed in dev_data.json)."""
    return LogKeys((NoteSigner.from_skey(_data()["logKey"]),))


def witness_cosigner() -> Cosigner:
    """The development witness's cosignature key (a demo key: committed in dev_data.json)."""
    return Cosigner.from_skey(_data()["witnessKey"])


def witness(keys: LogKeys, clock: Clock = system_clock) -> Witness:
    """The development witness: in this process, holding what it cosigned in memory, trusting
    the log keys `keys`."""
    core = WitnessCore(witness_cosigner(), keys.verifiers(), MemoryState(), clock)
    return Witness(InProcessWitness(core, "the development witness (in process)"), core.verifier)


def _demo_device(tenant_id: str, principal_id: str, now: int) -> tuple[DeviceKeys, bytes]:
    """The principal's demo device's statement as a first device, made at `now`, and its signature."""
    demo = _data()["principals"][principal_id]
    signing = json.loads(demo["signingKeyJwk"])
    private = Ed25519PrivateKey.from_private_bytes(b64url_decode(signing["d"], 32))
    agreement = canonical_public_jwk(json.loads(demo["publicKeyJwk"]), signing=False)
    statement = DeviceKeys(tenant_id, principal_id, ed25519_jwk(private.public_key()), agreement, now, "")
    return statement, sign_statement(private, statement)


async def _publish(store: Store, statement: DeviceKeys, signature: bytes, actor: Actor) -> None:
    """Append the device's entry as its principal's first device (the data set is made alone, at
    start: nothing else appends meanwhile)."""
    size = await store.key_log_size(statement.tenant_id)
    device = Device(
        statement.tenant_id,
        statement.principal_id,
        statement.device_id,
        statement.signing_jwk,
        statement.agreement_key_id,
        statement.agreement_jwk,
        "",
        statement.created,
        size,
    )
    entry = Entry(statement, (EntrySignature(statement.device_id, signature),)).canonical()
    details = {"principal": statement.principal_id, "device": statement.device_id}
    appended = await store.append_key_log(
        statement.tenant_id,
        size,
        entry,
        change=AddDevice(device),
        event=(Action.DEVICE_PUBLISHED, details),
        actor=actor,
    )
    if appended is None:
        msg = f"the key log of {statement.tenant_id} changed while the development data set was made"
        raise RuntimeError(msg)


async def seed(store: Store, issuer: TokenIssuer, clock: Clock, *, keys: bool = True) -> list[DevTenant]:
    """Create the development data set and a token per principal; with `keys`, publish each
    principal's demo device (the sealed items are sealed for them all the same)."""
    now = clock()
    operator = Actor.operator(now)  # the development data set is the operator's doing
    result = []
    for tenant_id, principals, vaults in _DATA:
        tenant = DevTenant(tenant_id)
        await store.add_tenant(Tenant(tenant_id), operator)
        for principal_id, role in principals:
            principal = Principal(principal_id, tenant_id, role, role.default_scopes)
            await store.add_principal(principal, operator)
            issued = await issuer.issue(principal, DEV_TOKEN_TTL_SECONDS)
            statement, signature = _demo_device(tenant_id, principal_id, now)
            if keys:
                await _publish(store, statement, signature, operator)
            demo = _data()["principals"][principal_id]
            tenant.principals.append(
                {
                    "principalId": principal_id,
                    "role": role.value,
                    "token": issued.secret,
                    "deviceId": statement.device_id,
                    "keyId": statement.agreement_key_id,
                    "signingKeyJwk": demo["signingKeyJwk"],
                    "privateKeyJwk": demo["privateKeyJwk"],
                }
            )
        for vault_id, members in vaults:
            await store.add_vault(Vault(vault_id, tenant_id, frozenset(members)), operator)
            items = _demo_items(tenant_id, vault_id, now)
            await store.add_items(items, operator)
            listed = [{"itemId": item.item_id, "version": item.version} for item in items]
            tenant.vaults.append({"vaultId": vault_id, "members": members, "items": listed})
        result.append(tenant)
    return result


def write_credentials(  # noqa: PLR0913 # the file, the server, the data set and the trust a client is given
    path: Path,
    base_url: str,
    tenants: list[DevTenant],
    *,
    log_vkeys: Sequence[str] = (),
    witness_vkeys: Sequence[str] = (),
    witness_quorum: int = 0,
) -> Path:
    """Write the credentials file atomically (write, then rename), readable only by its owner:
    the tokens and demo keys, and what a client pins (the log keys, the witnesses, the quorum)."""
    document = {
        "baseUrl": base_url,
        "logKeys": list(log_vkeys),
        "witnesses": list(witness_vkeys),
        "witnessQuorum": witness_quorum,
        "tenants": [{"tenantId": t.tenant_id, "principals": t.principals, "vaults": t.vaults} for t in tenants],
    }
    path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        json.dump(document, file, indent=2)
        file.write("\n")
        file.flush()
        os.fsync(file.fileno())
    draft.replace(path)
    return path
