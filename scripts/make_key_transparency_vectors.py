"""Write clients/testdata/key-transparency.json: the key directory vectors both client packages
run (tests/clients/test_key_transparency_vectors.py, and the TypeScript package's).

Every key comes from a fixed seed and every time is fixed, and Ed25519 signs deterministically,
so the file is the same on every run: run it after a change and commit the result. The logs,
checkpoints, cosignatures and proofs are made with zkplatform_tlog (merkle, note, checkpoint,
statements), as the server makes them; what a client must conclude at each step is written out
here by hand (never computed by the client code it tests), from docs/key-transparency.md.

    .venv/bin/python -m scripts.make_key_transparency_vectors
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from scripts.ed25519_cofactored import ED25519_ORDER, cofactored_only_signature, secret_scalar
from zkplatform_tlog.checkpoint import Checkpoint
from zkplatform_tlog.merkle import consistency_proof, leaf_hash, root_hash
from zkplatform_tlog.note import (
    Cosigner,
    NoteSignature,
    NoteSigner,
    generate_cosigner_key,
    generate_signer_key,
    sign_note,
)
from zkplatform_tlog.statements import (
    DeviceKeys,
    DeviceRevocation,
    Entry,
    EntrySignature,
    PrincipalReset,
    Statement,
    b64url,
    b64url_decode,
    canonical_json,
    canonical_public_jwk,
    ed25519_jwk,
    thumbprint,
)

OUT = Path(__file__).resolve().parents[1] / "clients" / "testdata" / "key-transparency.json"
TENANT = "acme"
T0 = 1_800_000_000  # the first step's time; statements are made a little before
LOG_NAME = "log.example"
ORIGIN = f"{LOG_NAME}/{TENANT}/key-log/v1"
MAX_AGE = 3600

ABOUT = (
    "Key directory vectors (scripts/make_key_transparency_vectors.py; docs/key-transparency.md). "
    "Each case starts a fresh client (no state) of tenant `tenantId` with the case's `policy` (else the "
    "file's: logKeys are note verifier keys, witnesses cosignature/v1 verifier keys, quorum, maxAgeSeconds, "
    "allowNoWitnesses) and `me` (this device: its principal, its device ids and the canonical texts of the "
    "statements it made or endorsed; null for a client that is no device), then runs its steps in order. "
    "An `update` step is verify_update(state, update, policy, tenantId, now, me), the update being what "
    "ListKeyLog answered from startIndex (the last page's checkpoint note and consistencyProof, standard "
    "base64, and every page's entries); `expect` is either ok with the new size, the alerts this update "
    'raised (index, kind, deviceId: "" for a reset), `live` (every principal the log names, with its '
    "live devices' agreement key ids in log order) and every unacknowledged reset, or the reason of the "
    "KeyLogError, after which the state is the one before the step. `acknowledgeReset` acknowledges a "
    "reset; `recipientKeys` asks the agreement key ids to seal for, per principal, from the state; `me` "
    "replaces this device's record for the steps after it (as a device records a statement it is about "
    "to send). Alerts follow docs/key-transparency.md, 'Owners are told: the alert rule': over the whole "
    "log at each verification, an entry raising one alert at most."
)


def seed(label: str) -> bytes:
    return hashlib.sha256(f"zkplatform key-transparency vectors: {label}".encode()).digest()


def std64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# The log's keys and the witnesses'. "rogue" is a key of the log's name that no client pins.
LOG = NoteSigner.from_skey(generate_signer_key(LOG_NAME, seed=seed("log key"))[0])
ROGUE = NoteSigner.from_skey(generate_signer_key(LOG_NAME, seed=seed("rogue log key"))[0])
W1 = Cosigner.from_skey(generate_cosigner_key("witness-1.example", seed=seed("witness 1"))[0])
W2 = Cosigner.from_skey(generate_cosigner_key("witness-2.example", seed=seed("witness 2"))[0])
W3 = Cosigner.from_skey(generate_cosigner_key("witness-3.example", seed=seed("witness 3"))[0])  # known to none
POLICY = {
    "logKeys": [LOG.verifier().vkey()],
    "witnesses": [W1.verifier().vkey(), W2.verifier().vkey()],
    "quorum": 2,
    "maxAgeSeconds": MAX_AGE,
}


@dataclass(frozen=True)
class Device:
    """A device of the vectors: its Ed25519 signing key and its agreement key, from seeds."""

    signing: Ed25519PrivateKey
    agreement_jwk: str

    @classmethod
    def make(cls, name: str, curve: str = "X25519") -> Device:
        signing = Ed25519PrivateKey.from_private_bytes(seed(f"{name} signing"))
        if curve == "X25519":
            public = X25519PrivateKey.from_private_bytes(seed(f"{name} agreement")).public_key()
            members = {"crv": "X25519", "kty": "OKP", "x": b64url(public.public_bytes_raw())}
        else:
            scalar = int.from_bytes(seed(f"{name} agreement"), "big") % (2**255)
            numbers = ec.derive_private_key(scalar, ec.SECP256R1()).public_key().public_numbers()
            members = {
                "crv": "P-256",
                "kty": "EC",
                "x": b64url(numbers.x.to_bytes(32, "big")),
                "y": b64url(numbers.y.to_bytes(32, "big")),
            }
        return cls(signing, canonical_public_jwk(members, signing=False))

    @property
    def signing_jwk(self) -> str:
        return ed25519_jwk(self.signing.public_key())

    @property
    def id(self) -> str:
        return thumbprint(self.signing_jwk)

    @property
    def key(self) -> str:
        """The agreement key id."""
        return thumbprint(self.agreement_jwk)

    def sign(self, statement: Statement) -> bytes:
        return self.signing.sign(statement.canonical())


A1 = Device.make("alice 1")
B1 = Device.make("bob 1")
B2 = Device.make("bob 2", "P-256")
B3 = Device.make("bob 3")
B4 = Device.make("bob 4")
M1 = Device.make("server's device 1")  # keys the server made itself, to pass them off as bob's
M2 = Device.make("server's device 2")
C1 = Device.make("carol 1")


def publish(  # noqa: PLR0913 - every way a statement is signed, by name
    device: Device,
    principal: str,
    created: int,
    endorser: Device | None = None,
    *,
    endorser_id: str | None = None,
    endorsed_by: Device | None = None,
    signed_by: Device | None = None,
    signatures: Sequence[tuple[str, Device]] | None = None,
    tenant: str = TENANT,
) -> tuple[str, str]:
    """A DeviceKeys entry and its statement text: signed by the device (or `signed_by`), then
    endorsed by `endorser` (or `endorsed_by`, naming `endorser_id`); `signatures` replaces them."""
    named = endorser_id if endorser_id is not None else (endorser.id if endorser else "")
    statement = DeviceKeys(tenant, principal, device.signing_jwk, device.agreement_jwk, created, named)
    if signatures is None:
        signatures = [(device.id, signed_by or device)]
        if named:
            signatures.append((named, endorsed_by or endorser or device))
    entry = Entry(statement, tuple(EntrySignature(key_id, by.sign(statement)) for key_id, by in signatures))
    return entry.canonical().decode(), statement.canonical().decode()


def revoke(
    revoker: Device, principal: str, device: Device, created: int, *, signed_by: Device | None = None
) -> tuple[str, str]:
    statement = DeviceRevocation(TENANT, principal, device.id, revoker.id, created)
    entry = Entry(statement, (EntrySignature(revoker.id, (signed_by or revoker).sign(statement)),))
    return entry.canonical().decode(), statement.canonical().decode()


def reset(principal: str, created: int, signer: NoteSigner = LOG) -> str:
    statement = PrincipalReset(TENANT, principal, created)
    text = statement.canonical().decode()
    return Entry(statement, (EntrySignature(signer.key_id.hex(), signer.sign(text)),)).canonical().decode()


def entry_text(document: dict[str, Any]) -> str:
    return canonical_json(document).decode()


class Log:
    """A log as a server holds it: its entries, and what ListKeyLog answers from it."""

    def __init__(self, *entries: str) -> None:
        self.entries = list(entries)

    def then(self, *entries: str) -> Log:
        return Log(*self.entries, *entries)

    def hashes(self, size: int) -> list[bytes]:
        return [leaf_hash(data.encode()) for data in self.entries[:size]]

    def note(
        self,
        size: int | None = None,
        cosigned: Sequence[tuple[Cosigner, int]] = (),
        *,
        origin: str = ORIGIN,
        signers: Sequence[NoteSigner] = (LOG,),
        body: str | None = None,
    ) -> str:
        size = len(self.entries) if size is None else size
        text = body if body is not None else Checkpoint(origin, size, root_hash(self.hashes(size))).body()
        return sign_note(text, list(signers)) + "".join(cosigner.cosign(text, at) for cosigner, at in cosigned)

    def update(  # noqa: PLR0913 - every way an answer is bent, by name
        self,
        start: int,
        at: int,
        size: int | None = None,
        *,
        note: str | None = None,
        entries: Sequence[tuple[int, str]] | None = None,
        proof: Sequence[bytes] | None = None,
    ) -> dict[str, Any]:
        """What ListKeyLog answers from `start`, cosigned by both witnesses at `at` unless `note`."""
        size = len(self.entries) if size is None else size
        if entries is None:
            entries = [(index, self.entries[index]) for index in range(start, size)]
        if proof is None:
            proof = consistency_proof(self.hashes(size), start) if start <= size else []
        return {
            "checkpoint": note if note is not None else self.note(size, [(W1, at), (W2, at)]),
            "startIndex": start,
            "entries": [{"index": index, "data": data} for index, data in entries],
            "consistencyProof": [std64(hash_) for hash_ in proof],
        }


def step(now: int, update: dict[str, Any], expect: dict[str, Any]) -> dict[str, Any]:
    return {"now": now, "update": update, "expect": expect}


def ok(
    size: int,
    live: dict[str, list[Device]],
    alerts: Sequence[tuple[int, str, Device | None]] = (),
    unacknowledged: Sequence[tuple[str, int]] = (),
) -> dict[str, Any]:
    return {
        "ok": True,
        "size": size,
        "alerts": [
            {"index": index, "kind": kind, "deviceId": device.id if device else ""} for index, kind, device in alerts
        ],
        "live": {principal: [device.key for device in devices] for principal, devices in live.items()},
        "unacknowledgedResets": [{"principalId": p, "index": i} for p, i in unacknowledged],
    }


def fail(reason: str) -> dict[str, Any]:
    return {"ok": False, "reason": reason}


def keys(principals: Sequence[str], expect: dict[str, list[Device]] | str) -> dict[str, Any]:
    if isinstance(expect, str):
        return {"recipientKeys": list(principals), "expect": fail(expect)}
    answer = {principal: [device.key for device in devices] for principal, devices in expect.items()}
    return {"recipientKeys": list(principals), "expect": {"ok": True, "keys": answer}}


def me(principal: str, devices: Sequence[Device], statements: Sequence[str]) -> dict[str, Any]:
    return {"principalId": principal, "deviceIds": [device.id for device in devices], "statements": list(statements)}


def case(name: str, who: dict[str, Any] | None, steps: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"name": name, "me": who, **extra, "steps": steps}


# The log of most cases: alice's and bob's first devices, then bob's second, endorsed by his first.
A1_FIRST, A1_STATEMENT = publish(A1, "alice", T0 - 900)
B1_FIRST, B1_STATEMENT = publish(B1, "bob", T0 - 800)
B2_ENDORSED, B2_STATEMENT = publish(B2, "bob", T0 - 700, B1)
B1_REVOKES_B2, B1_REVOKES_B2_STATEMENT = revoke(B1, "bob", B2, T0 - 600)
BASE = Log(A1_FIRST, B1_FIRST)
NOW = T0
AT = T0 - 60  # when the witnesses cosigned, a minute before the client looks


def happy_paths() -> list[dict[str, Any]]:
    log = BASE.then(B2_ENDORSED, B1_REVOKES_B2)
    bob = me("bob", [B1], [B1_STATEMENT, B2_STATEMENT, B1_REVOKES_B2_STATEMENT])
    steps = [
        step(NOW, log.update(0, AT, 2), ok(2, {"alice": [A1], "bob": [B1]})),
        keys(["alice", "bob", "carol"], {"alice": [A1], "bob": [B1], "carol": []}),
        step(NOW + 10, log.update(2, AT + 10, 3), ok(3, {"alice": [A1], "bob": [B1, B2]})),
        keys(["bob"], {"bob": [B1, B2]}),
        step(NOW + 20, log.update(3, AT + 20, 3), ok(3, {"alice": [A1], "bob": [B1, B2]})),
        step(NOW + 30, log.update(3, AT + 30), ok(4, {"alice": [A1], "bob": [B1]})),
        keys(["bob", "alice", "bob"], {"bob": [B1], "alice": [A1]}),
    ]
    whole = [step(NOW, log.update(0, AT), ok(4, {"alice": [A1], "bob": [B1]}))]
    return [
        case("happy: first devices, an endorsed second device, its revocation, over several updates", None, steps),
        case("happy: the same log in one update", None, whole),
        case("happy: bob's own first device, endorsement and revocation raise no alert on bob's device", bob, steps),
        case(
            "happy: a P-256 agreement key is sealed for like an X25519 one",
            None,
            [
                step(NOW, log.update(0, AT, 3), ok(3, {"alice": [A1], "bob": [B1, B2]})),
                keys(["bob"], {"bob": [B1, B2]}),
            ],
        ),
    ]


def owners_are_told() -> list[dict[str, Any]]:
    b3_endorsed, b3_statement = publish(B3, "bob", T0 - 650, B1)
    b1_revokes_b3, _ = revoke(B1, "bob", B3, T0 - 500)
    joined = BASE.then(B2_ENDORSED, b3_endorsed, b1_revokes_b3)
    b2 = me("bob", [B2], [B2_STATEMENT])
    # The server's device passed off as bob's first, before bob's own first device.
    m1_first, _ = publish(M1, "bob", T0 - 850)
    m1_revokes_itself, _ = revoke(M1, "bob", M1, T0 - 840)
    bob_first_after, bob_first_after_statement = publish(B1, "bob", T0 - 800)
    inserted = Log(A1_FIRST, m1_first, m1_revokes_itself, bob_first_after)
    pending_bob = me("bob", [B1], [bob_first_after_statement])
    # The server resets bob (it holds the log key) and publishes a first device of its own.
    takeover = BASE.then(reset("bob", T0 - 500), publish(M1, "bob", T0 - 400)[0])
    return [
        case(
            "owner: a device that joined by endorsement is told of what came after it, not before",
            b2,
            [
                step(
                    NOW,
                    joined.update(0, AT),
                    ok(5, {"alice": [A1], "bob": [B1, B2]}, [(3, "DEVICE_ADDED", B3), (4, "DEVICE_REVOKED", B3)]),
                ),
            ],
        ),
        case(
            "attack: a first device inserted before bob's own: bob's device, about to publish, alerts",
            pending_bob,
            [
                step(NOW, inserted.update(0, AT, 2), ok(2, {"alice": [A1], "bob": [M1]}, [(1, "DEVICE_ADDED", M1)])),
                step(
                    NOW + 10,
                    inserted.update(2, AT + 10),
                    ok(4, {"alice": [A1], "bob": [B1]}, [(2, "DEVICE_REVOKED", M1)]),
                ),
            ],
        ),
        case(
            "attack: a first device inserted before bob's own, in one update: alerts for both entries",
            pending_bob,
            [
                step(
                    NOW,
                    inserted.update(0, AT),
                    ok(4, {"alice": [A1], "bob": [B1]}, [(1, "DEVICE_ADDED", M1), (2, "DEVICE_REVOKED", M1)]),
                ),
            ],
        ),
        case(
            "owner: a first-device statement recorded after the log was verified: the next verification alerts",
            me("bob", [B1], []),
            [
                step(NOW, Log(A1_FIRST, m1_first).update(0, AT), ok(2, {"alice": [A1], "bob": [M1]})),
                {"me": pending_bob},
                step(
                    NOW + 10,
                    Log(A1_FIRST, m1_first).update(2, AT + 10),
                    ok(2, {"alice": [A1], "bob": [M1]}, [(1, "DEVICE_ADDED", M1)]),
                ),
                step(NOW + 20, Log(A1_FIRST, m1_first).update(2, AT + 20), ok(2, {"alice": [A1], "bob": [M1]})),
            ],
        ),
        case(
            "attack: bob's own first device after a live inserted one is refused",
            pending_bob,
            [step(NOW, Log(A1_FIRST, m1_first, bob_first_after).update(0, AT), fail("NOT_ENDORSED"))],
        ),
        case(
            "attack: the server resets bob and publishes a device of its own: bob's device alerts",
            me("bob", [B1], [B1_STATEMENT]),
            [
                step(
                    NOW,
                    takeover.update(0, AT),
                    ok(4, {"alice": [A1], "bob": [M1]}, [(2, "PRINCIPAL_RESET", None), (3, "DEVICE_ADDED", M1)]),
                ),
            ],
        ),
        case(
            "owner: bob's new first device after a reset is not told of the history it starts over from",
            me("bob", [B4], [publish(B4, "bob", T0 - 400)[1]]),
            [
                step(
                    NOW,
                    BASE.then(reset("bob", T0 - 500), publish(B4, "bob", T0 - 400)[0]).update(0, AT),
                    ok(4, {"alice": [A1], "bob": [B4]}),
                ),
            ],
        ),
        case(
            "owner: a device not published yet, to be endorsed, is told of nothing before it joins",
            me("bob", [B3], [b3_statement]),
            [step(NOW, BASE.then(B2_ENDORSED).update(0, AT), ok(3, {"alice": [A1], "bob": [B1, B2]}))],
        ),
    ]


def resets() -> list[dict[str, Any]]:
    b4_first, _ = publish(B4, "bob", T0 - 400)
    log = BASE.then(reset("bob", T0 - 500), b4_first)
    return [
        case(
            "reset: surfaced to alice's client, RESET_UNACKNOWLEDGED until acknowledged, then the new device is used",
            me("alice", [A1], [A1_STATEMENT]),
            [
                step(NOW, log.update(0, AT, 3), ok(3, {"alice": [A1], "bob": []}, unacknowledged=[("bob", 2)])),
                keys(["bob"], {"bob": []}),
                step(
                    NOW + 10, log.update(3, AT + 10), ok(4, {"alice": [A1], "bob": [B4]}, unacknowledged=[("bob", 2)])
                ),
                keys(["alice", "bob"], "RESET_UNACKNOWLEDGED"),
                keys(["alice"], {"alice": [A1]}),
                {"acknowledgeReset": {"principalId": "bob", "index": 2}},
                keys(["alice", "bob"], {"alice": [A1], "bob": [B4]}),
            ],
        ),
        case(
            "reset: signed by a key the client does not pin",
            None,
            [step(NOW, BASE.then(reset("bob", T0 - 500, ROGUE)).update(0, AT), fail("SIGNATURE_INVALID"))],
        ),
        case(
            "reset: a log key signature that does not verify",
            None,
            [
                step(
                    NOW,
                    BASE.then(_bad_reset_signature()).update(0, AT),
                    fail("SIGNATURE_INVALID"),
                )
            ],
        ),
    ]


def _bad_reset_signature() -> str:
    statement = PrincipalReset(TENANT, "bob", T0 - 500)
    other = PrincipalReset(TENANT, "bob", T0 - 499)  # the log key's signature of another statement
    signature = EntrySignature(LOG.key_id.hex(), LOG.sign(other.canonical().decode()))
    return Entry(statement, (signature,)).canonical().decode()


def endorsement_attacks() -> list[dict[str, Any]]:
    unendorsed, _ = publish(M1, "bob", T0 - 500)
    by_alice, _ = publish(M1, "bob", T0 - 500, A1)
    forged, _ = publish(M1, "bob", T0 - 500, B1, endorsed_by=M2)
    not_self, _ = publish(B3, "bob", T0 - 500, B1, signed_by=M1)
    endorsement_left_out, _ = publish(M1, "bob", T0 - 500, signatures=[])  # no signature at all: malformed
    only_self, _ = publish(B3, "bob", T0 - 500, B1, signatures=[(B3.id, B3)])
    swapped, _ = publish(B3, "bob", T0 - 500, B1, signatures=[(B1.id, B1), (B3.id, B3)])
    verified = [step(NOW, BASE.update(0, AT), ok(2, {"alice": [A1], "bob": [B1]}))]

    def attack(name: str, entry: str, reason: str, who: dict[str, Any] | None = None) -> dict[str, Any]:
        return case(
            name,
            who,
            [
                *verified,
                step(NOW + 10, BASE.then(entry).update(2, AT + 10), fail(reason)),
                keys(["bob"], {"bob": [B1]}),
            ],
        )

    bob = me("bob", [B1], [B1_STATEMENT])
    return [
        attack(
            "attack: a device added for bob with no endorsement, bob having a live device", unendorsed, "NOT_ENDORSED"
        ),
        attack("attack: the same, shown to bob's own device: refused there too", unendorsed, "NOT_ENDORSED", bob),
        attack("attack: a device for bob endorsed by alice's device", by_alice, "NOT_ENDORSED"),
        attack(
            "attack: a device for bob whose endorsement is not by the endorser it names", forged, "SIGNATURE_INVALID"
        ),
        attack("attack: a device statement not signed by the device's own key", not_self, "SIGNATURE_INVALID"),
        attack("attack: an endorsed device without the endorser's signature", only_self, "SIGNATURE_INVALID"),
        attack("attack: the signatures in the wrong order", swapped, "SIGNATURE_INVALID"),
        attack(
            "attack: a device for bob whose own signature holds only cofactored (R moved by the point of order 2)",
            _cofactored_only_entry(),
            "SIGNATURE_INVALID",
        ),
        attack("entry: a device entry without signatures", endorsement_left_out, "ENTRY_MALFORMED"),
        attack("attack: a device published again (its entry replayed)", B1_FIRST, "ENTRY_MALFORMED"),
        attack(
            "attack: another device with bob's agreement key",
            _with_agreement_of(B1, M1, "alice"),
            "ENTRY_MALFORMED",
        ),
    ]


def _cofactored_only_entry() -> str:
    """B3 endorsed by B1, B3's own signature one that only a cofactored check accepts."""
    statement = DeviceKeys(TENANT, "bob", B3.signing_jwk, B3.agreement_jwk, T0 - 500, B1.id)
    own = cofactored_only_signature(B3.signing, statement.canonical())
    signatures = (EntrySignature(B3.id, own), EntrySignature(B1.id, B1.sign(statement)))
    return Entry(statement, signatures).canonical().decode()


def _with_agreement_of(owner: Device, device: Device, principal: str) -> str:
    thief = Device(device.signing, owner.agreement_jwk)
    return publish(thief, principal, T0 - 500, A1)[0]


# Curve25519's field prime, and the points whose keys no statement may carry (docs/key-transparency.md,
# "Canonical JSON"): X25519's u-coordinates of small order (RFC 7748 section 6.1; cr.yp.to/ecdh.html),
# the y-coordinate of Ed25519's points of order 8 (libsodium's ge25519_has_small_order list).
P25519 = 2**255 - 19
X25519_ORDER_8 = (
    325606250916557431795983626356110631294008115727848805560023387167927233504,
    39382357235489614581723060781553021112529911719440698176882885853963445705823,
)
ED25519_ORDER_8_Y = 2707385501144840649318225287225658788936804267575313519463743609750303402022
SIGN = 1 << 255  # the sign bit of an Ed25519 encoding; bit 255 of an X25519 one, which RFC 7748 masks
P256 = 2**256 - 2**224 + 2**192 + 2**96 - 1
P256_B = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B
DEGENERATE = Ed25519PrivateKey.from_private_bytes(seed("degenerate keys' device"))


def x25519_jwk(u: int) -> str:
    """The JWK text of the X25519 key of these 32 bytes (little-endian u), canonical or not."""
    return entry_text({"crv": "X25519", "kty": "OKP", "x": b64url(u.to_bytes(32, "little"))})


def ed25519_raw_jwk(encoded: int) -> str:
    return entry_text({"crv": "Ed25519", "kty": "OKP", "x": b64url(encoded.to_bytes(32, "little"))})


def p256_jwk(x: int, y: int) -> str:
    return entry_text(
        {"crv": "P-256", "kty": "EC", "x": b64url(x.to_bytes(32, "big")), "y": b64url(y.to_bytes(32, "big"))}
    )


def p256_point_of_smallest_x() -> tuple[int, int]:
    """The point of P-256 with the smallest x: x + p still fits 32 bytes, a non-canonical coordinate."""
    for x in range(1, 100):
        rhs = (x**3 - 3 * x + P256_B) % P256
        y = pow(rhs, (P256 + 1) // 4, P256)  # p = 3 mod 4: a square root, when there is one
        if y * y % P256 == rhs:
            return x, y
    raise AssertionError


def universal_signature() -> bytes:
    """A "signature" that the identity, as an Ed25519 key A, verifies for every message: s*B = R + k*A
    holds with R = s*B whatever k. R is a public key of a seed, s that key's scalar: RFC 8032, 5.1.5."""
    secret = seed("the identity's signatures")
    s = secret_scalar(secret) % ED25519_ORDER
    return Ed25519PrivateKey.from_private_bytes(secret).public_key().public_bytes_raw() + s.to_bytes(32, "little")


def with_keys(signing_jwk: str, agreement_jwk: str, principal: str, endorser: Device | None) -> str:
    """A DeviceKeys entry of these key texts, as they are (canonical or not): signed by the
    degenerate keys' device (whose signature it is only when `signing_jwk` is its key; the
    identity's universal signature when it is the identity), endorsed by `endorser`."""
    named = endorser.id if endorser else ""
    statement = DeviceKeys(TENANT, principal, signing_jwk, agreement_jwk, T0 - 500, named)
    device_id = thumbprint(signing_jwk)
    identity = ed25519_raw_jwk(1)
    possession = universal_signature() if signing_jwk == identity else DEGENERATE.sign(statement.canonical())
    signatures = [EntrySignature(device_id, possession)]
    if endorser:
        signatures.append(EntrySignature(endorser.id, endorser.sign(statement)))
    return Entry(statement, tuple(signatures)).canonical().decode()


def degenerate_keys() -> list[dict[str, Any]]:
    """Entries carrying a key no device may publish: each refused as malformed, the log as it was."""
    own = ed25519_jwk(DEGENERATE.public_key())
    alices = int.from_bytes(b64url_decode(json.loads(A1.agreement_jwk)["x"], 32), "little")
    agreement = [
        ("X25519 u = 0", 0),
        ("X25519 u = 1", 1),
        ("X25519 u of order 8 (the first)", X25519_ORDER_8[0]),
        ("X25519 u of order 8 (the second)", X25519_ORDER_8[1]),
        ("X25519 u = p - 1 (order 4, on the twist)", P25519 - 1),
        ("X25519 u = p (0, not reduced)", P25519),
        ("X25519 u = p + 1 (1, not reduced)", P25519 + 1),
        ("X25519 u = 2^255 - 1 (18, not reduced)", 2**255 - 1),
        ("X25519 u = 0 with bit 255 set", SIGN),
    ]
    cases = [(f"key: an agreement key of {name}", with_keys(own, x25519_jwk(u), "bob", B1)) for name, u in agreement]
    cases.append(
        (
            "attack: alice's agreement key with bit 255 set, another key id for one key, published for bob",
            with_keys(own, x25519_jwk(alices | SIGN), "bob", B1),
        )
    )
    x, y = p256_point_of_smallest_x()
    cases += [
        (
            "key: a P-256 agreement key of x = y = 0 (where infinity would be)",
            with_keys(own, p256_jwk(0, 0), "bob", B1),
        ),
        ("key: a P-256 agreement key off the curve", with_keys(own, p256_jwk(x, y + 1), "bob", B1)),
        ("key: a P-256 agreement key with x + p for x", with_keys(own, p256_jwk(x + P256, y), "bob", B1)),
    ]
    signing = [
        ("the identity, whose signature of any statement anyone makes", 1),
        ("the identity with the sign bit set (x = 0 cannot be negative)", 1 | SIGN),
        ("order 2", P25519 - 1),
        ("order 4", 0),
        ("order 4, the other", SIGN),
        ("order 8", ED25519_ORDER_8_Y),
        ("order 8, negated", ED25519_ORDER_8_Y | SIGN),
        ("order 8, another", P25519 - ED25519_ORDER_8_Y),
        ("order 8, another negated", (P25519 - ED25519_ORDER_8_Y) | SIGN),
        ("y = p (0, not reduced)", P25519),
        ("y = p + 1 (the identity, not reduced)", P25519 + 1),
        ("y = p + 3 (a point of the curve, not reduced)", P25519 + 3),
    ]
    cases += [
        (
            f"key: a signing key of {name}, carol's first device",
            with_keys(ed25519_raw_jwk(y), C1.agreement_jwk, "carol", None),
        )
        for name, y in signing
    ]
    verified = [step(NOW, BASE.update(0, AT), ok(2, {"alice": [A1], "bob": [B1]}))]
    return [
        case(
            name,
            None,
            [
                *verified,
                step(NOW + 10, BASE.then(entry).update(2, AT + 10), fail("ENTRY_MALFORMED")),
                keys(["bob", "carol"], {"bob": [B1], "carol": []}),
            ],
        )
        for name, entry in cases
    ]


def revocation_attacks() -> list[dict[str, Any]]:
    log = BASE.then(B2_ENDORSED, B1_REVOKES_B2)
    verified = [step(NOW, log.update(0, AT), ok(4, {"alice": [A1], "bob": [B1]}))]

    def attack(name: str, entry: str, reason: str) -> dict[str, Any]:
        return case(
            name,
            None,
            [*verified, step(NOW + 10, log.then(entry).update(4, AT + 10), fail(reason)), keys(["bob"], {"bob": [B1]})],
        )

    return [
        attack("attack: a revocation by a revoked device", revoke(B2, "bob", B1, T0 - 100)[0], "NOT_ENDORSED"),
        attack("attack: a revocation of bob's device by alice's", revoke(A1, "bob", B1, T0 - 100)[0], "NOT_ENDORSED"),
        attack(
            "attack: a revocation whose signature is not the revoker's",
            revoke(B1, "bob", B1, T0 - 100, signed_by=M1)[0],
            "SIGNATURE_INVALID",
        ),
        attack(
            "entry: a revocation of a device already revoked", revoke(B1, "bob", B2, T0 - 100)[0], "ENTRY_MALFORMED"
        ),
        attack(
            "entry: a revocation of a device the log does not have",
            revoke(B1, "bob", M1, T0 - 100)[0],
            "ENTRY_MALFORMED",
        ),
    ]


def witness_cases() -> list[dict[str, Any]]:
    fork = Log(A1_FIRST, publish(M1, "bob", T0 - 800)[0])  # bob's first device is the server's here
    one = {**POLICY, "quorum": 1}

    def shown(cosigned: Sequence[tuple[Cosigner, int]]) -> dict[str, Any]:
        return fork.update(0, AT, note=fork.note(None, cosigned))

    return [
        case(
            "attack: a forked log shown to a fresh client, cosigned by one witness of a quorum of two",
            None,
            [step(NOW, shown([(W2, AT)]), fail("BELOW_QUORUM"))],
        ),
        case(
            "attack: a forked log cosigned by no witness, and by a witness the client does not know",
            None,
            [step(NOW, shown([]), fail("BELOW_QUORUM")), step(NOW, shown([(W2, AT), (W3, AT)]), fail("BELOW_QUORUM"))],
        ),
        case(
            "attack: a cosignature of another checkpoint does not count",
            None,
            [step(NOW, fork.update(0, AT, note=_grafted_cosignature(fork)), fail("BELOW_QUORUM"))],
        ),
        case(
            "policy: a quorum of one trusts one colluding witness's cosignature of a fork, and no fewer",
            None,
            [
                step(NOW, shown([]), fail("BELOW_QUORUM")),
                step(NOW, shown([(W2, AT)]), ok(2, {"alice": [A1], "bob": [M1]})),
            ],
            policy=one,
        ),
        case(
            "policy: with no witnesses (allowNoWitnesses), the log key's signature is enough and no age applies",
            None,
            [step(NOW + 10 * MAX_AGE, fork.update(0, AT, note=fork.note()), ok(2, {"alice": [A1], "bob": [M1]}))],
            policy={**POLICY, "witnesses": [], "quorum": 0, "allowNoWitnesses": True},
        ),
        case(
            "freshness: the quorum's oldest cosignature decides, at most maxAgeSeconds old",
            None,
            [
                step(
                    NOW,
                    BASE.update(0, AT, note=BASE.note(None, [(W1, NOW - MAX_AGE - 1), (W2, NOW)])),
                    fail("CHECKPOINT_STALE"),
                ),
                step(
                    NOW,
                    BASE.update(0, AT, note=BASE.note(None, [(W1, NOW - MAX_AGE), (W2, NOW)])),
                    ok(2, {"alice": [A1], "bob": [B1]}),
                ),
            ],
        ),
        case(
            "freshness: with a quorum of one, the newest cosignature decides",
            None,
            [
                step(
                    NOW,
                    BASE.update(0, AT, note=BASE.note(None, [(W1, NOW - MAX_AGE - 1), (W2, NOW - 5)])),
                    ok(2, {"alice": [A1], "bob": [B1]}),
                ),
            ],
            policy=one,
        ),
        case(
            "attack: a revocation hidden behind an old checkpoint is caught once the maximum age has passed",
            None,
            [
                step(NOW, BASE.update(0, AT), ok(2, {"alice": [A1], "bob": [B1]})),
                step(NOW + 3000, BASE.update(2, AT), ok(2, {"alice": [A1], "bob": [B1]})),
                step(NOW + 3600, BASE.update(2, AT), fail("CHECKPOINT_STALE")),
                keys(["bob"], {"bob": [B1]}),
                step(
                    NOW + 3600,
                    BASE.then(revoke(B1, "bob", B1, NOW + 1000)[0]).update(2, NOW + 3590),
                    ok(3, {"alice": [A1], "bob": []}),
                ),
                keys(["bob"], {"bob": []}),
            ],
        ),
    ]


def _grafted_cosignature(log: Log) -> str:
    """The fork's note with W1's cosignature of the honest log's checkpoint at the same size."""
    honest = Checkpoint(ORIGIN, 2, root_hash(BASE.hashes(2))).body()
    return log.note(None, [(W2, AT)]) + W1.cosign(honest, AT)


def checkpoint_cases() -> list[dict[str, Any]]:
    body = Checkpoint(ORIGIN, 2, root_hash(BASE.hashes(2))).body()
    cosign = [(W1, AT), (W2, AT)]
    bad_line = NoteSignature(LOG.name, LOG.key_id, ROGUE.sign(body)).line()
    wrongly_signed = body + "\n" + bad_line + "".join(c.cosign(body, t) for c, t in cosign)
    other_tenant = BASE.note(None, cosign, origin=f"{LOG_NAME}/globex/key-log/v1")
    other_version = BASE.note(None, cosign, origin=f"{LOG_NAME}/{TENANT}/key-log/v2")
    other_log = BASE.note(None, cosign, origin=f"other.example/{TENANT}/key-log/v1")
    bad_size = f"{ORIGIN}\n02\n{std64(root_hash(BASE.hashes(2)))}\n"
    signed_bad_body = sign_note(bad_size, [LOG]) + "".join(
        NoteSignature(c.name, c.key_id, b"\x00" * 72).line() for c, _ in cosign
    )

    def refused(name: str, note: str, reason: str) -> dict[str, Any]:
        return case(name, None, [step(NOW, BASE.update(0, AT, note=note), fail(reason))])

    return [
        refused(
            "checkpoint: signed by a log key the client does not pin",
            BASE.note(None, cosign, signers=[ROGUE]),
            "CHECKPOINT_UNSIGNED",
        ),
        refused(
            "checkpoint: the pinned log key's line with a signature that does not verify",
            wrongly_signed,
            "CHECKPOINT_UNSIGNED",
        ),
        refused("checkpoint: another tenant's log", other_tenant, "CHECKPOINT_ORIGIN"),
        refused("checkpoint: another format version of the log", other_version, "CHECKPOINT_ORIGIN"),
        refused("checkpoint: another log's name", other_log, "CHECKPOINT_ORIGIN"),
        refused("checkpoint: not a signed note", "log.example/acme/key-log/v1\n2\n", "CHECKPOINT_MALFORMED"),
        refused("checkpoint: a signed body that is not a checkpoint", signed_bad_body, "CHECKPOINT_MALFORMED"),
    ]


def log_cases() -> list[dict[str, Any]]:
    log = BASE.then(B2_ENDORSED, B1_REVOKES_B2)
    verified = step(NOW, log.update(0, AT, 3), ok(3, {"alice": [A1], "bob": [B1, B2]}))
    # The server's log with bob's first device swapped for its own, grown by one entry.
    rewritten = Log(A1_FIRST, publish(M1, "bob", T0 - 800)[0], publish(M2, "bob", T0 - 700, M1)[0], B1_REVOKES_B2)
    proof = consistency_proof(log.hashes(4), 3)
    flipped = [bytes([proof[0][0] ^ 1]) + proof[0][1:], *proof[1:]]
    same_size_fork = rewritten.update(3, AT, 3)

    def after(name: str, update: dict[str, Any], reason: str) -> dict[str, Any]:
        return case(name, None, [verified, step(NOW + 10, update, fail(reason)), keys(["bob"], {"bob": [B1, B2]})])

    entries = [(3, B1_REVOKES_B2)]
    return [
        after("rollback: a checkpoint below the verified size", log.update(3, AT + 10, 2, proof=[]), "LOG_TRUNCATED"),
        after("fork: a consistency proof that does not connect", log.update(3, AT + 10, proof=flipped), "LOG_FORKED"),
        after("fork: an old entry rewritten, the log grown past it", rewritten.update(3, AT + 10), "LOG_FORKED"),
        after("fork: another log at the verified size", same_size_fork, "LOG_FORKED"),
        after(
            "fork: entries that do not make the checkpoint's root",
            log.update(3, AT + 10, entries=[(3, revoke(B1, "bob", B2, T0 - 599)[0])]),
            "LOG_FORKED",
        ),
        after(
            "gap: entries from before the verified size",
            log.update(2, AT + 10, proof=proof, entries=[(2, B2_ENDORSED), *entries]),
            "LOG_GAP",
        ),
        after("gap: entries that stop before the checkpoint's size", log.update(3, AT + 10, entries=[]), "LOG_GAP"),
        after("gap: an index skipped", log.update(3, AT + 10, entries=[(4, B1_REVOKES_B2)]), "LOG_GAP"),
        after(
            "gap: entries past the checkpoint's size",
            log.update(3, AT + 10, entries=[*entries, (4, B1_REVOKES_B2)]),
            "LOG_GAP",
        ),
    ]


def entry_cases() -> list[dict[str, Any]]:
    good = json.loads(B1_FIRST)
    spaced = json.dumps(good)  # not canonical: whitespace
    format_two = entry_text({**good, "format": 2})
    unknown_type = entry_text({**good, "statement": {**good["statement"], "type": "zkplatform.device-rename"}})
    statement_format_two = entry_text({**good, "statement": {**good["statement"], "format": 2}})
    globex = publish(B1, "bob", T0 - 800, tenant="globex")[0]

    def refused(name: str, data: str, reason: str) -> dict[str, Any]:
        log = Log(A1_FIRST, data)
        return case(name, None, [step(NOW, log.update(0, AT), fail(reason))])

    return [
        refused("entry: not JSON", "not json", "ENTRY_MALFORMED"),
        refused("entry: not in canonical form", spaced, "ENTRY_MALFORMED"),
        refused("entry: of another tenant", globex, "ENTRY_MALFORMED"),
        refused("entry: an escaped lone surrogate", '{"a":"\\ud800","format":2}', "ENTRY_MALFORMED"),
        refused("entry: format 2", format_two, "ENTRY_UNSUPPORTED"),
        refused("entry: a statement of format 2", statement_format_two, "ENTRY_UNSUPPORTED"),
        refused("entry: an unknown statement type", unknown_type, "ENTRY_UNSUPPORTED"),
    ]


def main() -> None:
    cases = [
        *happy_paths(),
        *owners_are_told(),
        *resets(),
        *endorsement_attacks(),
        *degenerate_keys(),
        *revocation_attacks(),
        *witness_cases(),
        *checkpoint_cases(),
        *log_cases(),
        *entry_cases(),
    ]
    names = [c["name"] for c in cases]
    assert len(set(names)) == len(names), "two cases share a name"
    document = {"about": ABOUT, "tenantId": TENANT, "policy": POLICY, "cases": cases}
    OUT.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
