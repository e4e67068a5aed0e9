"""Devices as a test's client makes them, and a client's checks of what the directory answers
(docs/key-transparency.md): statements signed with real Ed25519 keys, and checkpoints opened with
the pinned keys, every root recomputed from the entries listed."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec, mlkem
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from zkplatform_api.platform.v1 import directory_pb2
from zkplatform_tlog.checkpoint import Checkpoint
from zkplatform_tlog.merkle import leaf_hash, root_hash
from zkplatform_tlog.note import CosignatureVerifier, NoteVerifier, open_note
from zkplatform_tlog.statements import (
    DeviceKeys,
    DeviceRevocation,
    Statement,
    b64url,
    b64url_decode,
    canonical_public_jwk,
    ed25519_jwk,
    sign_statement,
)


@dataclass
class TestDevice:
    """A device's two key pairs, as a client keeps them."""

    __test__ = False  # not a test class, whatever pytest makes of its name

    signing: Ed25519PrivateKey = field(default_factory=Ed25519PrivateKey.generate)
    curve: str = "X25519"
    agreement_jwk: str = ""  # canonical; a new key of `curve` unless given

    @classmethod
    def of_demo(cls, principal: Mapping[str, Any]) -> TestDevice:
        """A principal's demo device, from its entry in the development credentials."""
        signing = json.loads(principal["signingKeyJwk"])
        agreement = json.loads(principal["privateKeyJwk"])
        return cls(
            Ed25519PrivateKey.from_private_bytes(b64url_decode(signing["d"], 32)),
            agreement_jwk=canonical_public_jwk({k: agreement[k] for k in ("crv", "kty", "x")}, signing=False),
        )

    def __post_init__(self) -> None:
        if self.agreement_jwk:
            return
        if self.curve == "X25519":
            public = X25519PrivateKey.generate().public_key().public_bytes_raw()
            members = {"crv": "X25519", "kty": "OKP", "x": b64url(public)}
        elif self.curve == "X-Wing":  # ML-KEM-768's encapsulation key, then X25519's
            mlkem_key = mlkem.MLKEM768PrivateKey.generate().public_key().public_bytes_raw()
            x25519_key = X25519PrivateKey.generate().public_key().public_bytes_raw()
            members = {"alg": "X-Wing", "kty": "AKP", "pub": b64url(mlkem_key + x25519_key)}
        else:
            numbers = ec.generate_private_key(ec.SECP256R1()).public_key().public_numbers()
            x, y = numbers.x.to_bytes(32, "big"), numbers.y.to_bytes(32, "big")
            members = {"crv": "P-256", "kty": "EC", "x": b64url(x), "y": b64url(y)}
        self.agreement_jwk = canonical_public_jwk(members, signing=False)

    @property
    def signing_jwk(self) -> str:
        return ed25519_jwk(self.signing.public_key())

    @property
    def device_id(self) -> str:
        return self.keys("t", "p", 0).device_id

    def keys(self, tenant_id: str, principal_id: str, created: int, endorser: str = "") -> DeviceKeys:
        return DeviceKeys(tenant_id, principal_id, self.signing_jwk, self.agreement_jwk, created, endorser)

    def sign(self, statement: Statement) -> str:
        return b64url(sign_statement(self.signing, statement))

    def publish(  # the statement's parts
        self,
        principal_id: str,
        created: int,
        endorser: TestDevice | None = None,
        tenant_id: str = "acme",
    ) -> directory_pb2.PublishDeviceRequest:
        """The request publishing this device, endorsed by `endorser` when given."""
        statement = self.keys(tenant_id, principal_id, created, endorser.device_id if endorser else "")
        return directory_pb2.PublishDeviceRequest(
            statement=statement.canonical().decode(),
            signature=self.sign(statement),
            endorsement=endorser.sign(statement) if endorser else "",
        )

    def revoke(
        self, device: TestDevice, principal_id: str, created: int, tenant_id: str = "acme"
    ) -> directory_pb2.RevokeDeviceRequest:
        """The request by which this device revokes `device`."""
        statement = DeviceRevocation(tenant_id, principal_id, device.device_id, self.device_id, created)
        return directory_pb2.RevokeDeviceRequest(
            statement=statement.canonical().decode(), signature=self.sign(statement)
        )


@dataclass(frozen=True)
class Trust:
    """What a client pins: the log keys, the witnesses' keys and the quorum."""

    log_keys: Sequence[NoteVerifier]
    witnesses: Sequence[CosignatureVerifier]
    quorum: int

    def open(self, note: str, tenant_id: str, entries: Sequence[bytes], quorum: int | None = None) -> Checkpoint:
        """The checkpoint of a note, checked as a client checks it: signed by a pinned log key,
        of the tenant's log, cosigned by the quorum (this one, when given), its root that of the
        first `size` of `entries` (the log as listed from its start)."""
        opened = open_note(note, [*self.log_keys, *self.witnesses])
        assert any(opened.signed_by(key.name) for key in self.log_keys), note
        cosigned = [witness for witness in self.witnesses if opened.signed_by(witness.name)]
        assert len(cosigned) >= (self.quorum if quorum is None else quorum), note
        checkpoint = Checkpoint.parse(opened.text)
        assert checkpoint.origin == f"{self.log_keys[0].name}/{tenant_id}/key-log/v1"
        assert checkpoint.size <= len(entries), (checkpoint.size, len(entries))
        assert checkpoint.root_hash == root_hash([leaf_hash(data) for data in entries[: checkpoint.size]])
        return checkpoint


def entry_document(entry: directory_pb2.KeyLogEntry) -> dict[str, object]:
    document: dict[str, object] = json.loads(entry.data)
    return document
