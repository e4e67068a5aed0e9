"""Device key files of the Python package (docs/sealing.md, "Device keys at rest"): a compact JWE
under a passphrase (PBES2-HS512+A256KW, A256GCM) that opens only with it, WRONG_PASSPHRASE for
another, refusals of what is not one; plain JSON only when asked for in so many words; and the
files each package committed opened by this one."""

from __future__ import annotations

import json
from typing import Any

import pytest
from joserfc import jwe
from joserfc.jwk import OctKey

from tests.clients.sealing_support import KEYS, SIGNERS, TESTDATA
from zkplatform_client import DeviceKeyPair, SealingError, read_key_file
from zkplatform_client.devices import AgreementCurve
from zkplatform_tlog.statements import b64url, b64url_decode

PASSPHRASE = "a passphrase for this test"


def header_of(text: str) -> dict[str, Any]:
    header: dict[str, Any] = json.loads(b64url_decode(text.split(".", maxsplit=1)[0]))
    return header


def refusal(text: str, passphrase: str | None, *, unencrypted: bool = False) -> str:
    with pytest.raises(SealingError) as raised:
        DeviceKeyPair.from_key_file(text, passphrase, unencrypted=unencrypted)
    return raised.value.reason


@pytest.mark.parametrize("curve", ["X25519", "P-256", "X-Wing"])
def test_a_key_file_opens_with_its_passphrase_only(curve: AgreementCurve) -> None:
    device = DeviceKeyPair.generate(curve)

    text = device.to_key_file(PASSPHRASE, tenant_id="acme", principal_id="alice")
    opened = read_key_file(text, PASSPHRASE)

    assert opened.keys.to_jwks() == device.to_jwks()
    assert (opened.tenant_id, opened.principal_id, opened.keys.device_id) == ("acme", "alice", device.device_id)
    header = header_of(text)
    assert (header["alg"], header["enc"], header["p2c"]) == ("PBES2-HS512+A256KW", "A256GCM", 210_000)
    assert len(b64url_decode(header["p2s"])) == 16
    jwks = device.to_jwks()
    coordinates = [jwk[name] for jwk in jwks.values() for name in ("d", "x", "y", "priv", "pub") if name in jwk]
    for secret in coordinates:
        assert secret not in text  # nothing in the clear, not even the public members
    assert refusal(text, "another passphrase") == "WRONG_PASSPHRASE"


def test_an_x_wing_key_file_whose_seed_is_not_its_public_key_s_is_malformed() -> None:
    device, other = DeviceKeyPair.generate("X-Wing"), DeviceKeyPair.generate("X-Wing")
    document = json.loads(device.to_key_file(None, tenant_id="acme", principal_id="alice", unencrypted=True))
    document["agreementKeyJwk"]["pub"] = other.to_jwks()["privateKeyJwk"]["pub"]

    assert refusal(pbes2(json.dumps(document).encode()), PASSPHRASE) == "MALFORMED"


def test_each_key_file_is_salted_anew() -> None:
    device = DeviceKeyPair.generate()

    first = device.to_key_file(PASSPHRASE, tenant_id="acme", principal_id="alice")
    second = device.to_key_file(PASSPHRASE, tenant_id="acme", principal_id="alice")

    assert header_of(first)["p2s"] != header_of(second)["p2s"]


def test_a_damaged_key_file_is_a_wrong_passphrase() -> None:
    text = DeviceKeyPair.generate().to_key_file(PASSPHRASE, tenant_id="acme", principal_id="alice")
    parts = text.split(".")
    parts[3] = ("A" if parts[3][0] != "A" else "B") + parts[3][1:]  # the ciphertext

    assert refusal(".".join(parts), PASSPHRASE) == "WRONG_PASSPHRASE"


def pbes2(plaintext: bytes, **header: Any) -> str:
    """A JWE made with joserfc alone, under PASSPHRASE, with this header."""
    protected = {"alg": "PBES2-HS512+A256KW", "enc": "A256GCM", "p2c": 210_000, **header}
    registry = jwe.JWERegistry(algorithms=[protected["alg"], protected["enc"]])
    key = OctKey.import_key(PASSPHRASE.encode())  # 26 bytes: over joserfc's 112-bit warning
    return jwe.encrypt_compact(protected, plaintext, key, registry=registry)


def with_header(text: str, **members: Any) -> str:
    """The JWE with these members changed in its protected header (which no longer authenticates)."""
    header = {**header_of(text), **members}
    return ".".join([b64url(json.dumps(header).encode()), *text.split(".")[1:]])


def test_what_is_not_a_key_file_is_refused_with_its_reason() -> None:
    device = DeviceKeyPair.generate()
    plain = device.to_key_file(None, tenant_id="acme", principal_id="alice", unencrypted=True)
    document = json.loads(plain)
    mixed = dict(document, agreementKeyJwk=DeviceKeyPair.generate().to_jwks()["privateKeyJwk"] | {"x": "AAAA"})

    assert refusal(plain, PASSPHRASE) == "MALFORMED"  # plain JSON is read only so asked
    assert refusal("not.a.jwe", PASSPHRASE) == "MALFORMED"
    assert refusal(pbes2(b"not json"), PASSPHRASE) == "MALFORMED"
    assert refusal(pbes2(json.dumps(mixed).encode()), PASSPHRASE) == "MALFORMED"
    assert refusal(pbes2(json.dumps(dict(document, deviceId="x" * 43)).encode()), PASSPHRASE) == "MALFORMED"
    assert refusal(pbes2(plain.encode(), p2c=99_999), PASSPHRASE) == "UNSUPPORTED"
    assert refusal(with_header(pbes2(plain.encode()), p2c=300_001), PASSPHRASE) == "UNSUPPORTED"  # joserfc would not
    assert refusal(pbes2(plain.encode(), alg="PBES2-HS256+A128KW", enc="A128GCM"), PASSPHRASE) == "UNSUPPORTED"
    assert read_key_file(pbes2(plain.encode(), p2c=100_000), PASSPHRASE).keys.device_id == device.device_id


def test_plain_key_files_only_in_so_many_words() -> None:
    device = DeviceKeyPair.generate("P-256")

    plain = device.to_key_file(None, tenant_id="acme", principal_id="bob", unencrypted=True)

    assert read_key_file(plain, None, unencrypted=True).keys.to_jwks() == device.to_jwks()
    with pytest.raises(ValueError, match="passphrase"):
        device.to_key_file(None, tenant_id="acme", principal_id="bob")
    with pytest.raises(ValueError, match="passphrase"):
        device.to_key_file("", tenant_id="acme", principal_id="bob")
    with pytest.raises(ValueError, match="unencrypted"):
        device.to_key_file(PASSPHRASE, tenant_id="acme", principal_id="bob", unencrypted=True)
    with pytest.raises(ValueError, match="passphrase"):
        DeviceKeyPair.from_key_file(plain, None)


def committed(name: str) -> tuple[str, dict[str, Any]]:
    """A committed key file and what key-files.json says of it (its passphrase, what it holds)."""
    about = json.loads((TESTDATA / "key-files.json").read_text())["files"]
    return (TESTDATA / name).read_text(), about[name]  # as committed, with its final newline


@pytest.mark.parametrize("name", ["key-file-python.jwe", "key-file-ts.jwe"])
def test_the_key_files_both_packages_committed_open_here(name: str) -> None:
    """key-file-ts.jwe is the TypeScript package's (seal-ts writes it): required, so that the
    direction from TypeScript is tested rather than skipped."""
    text, about = committed(name)

    opened = read_key_file(text, about["passphrase"])

    assert (opened.tenant_id, opened.principal_id, opened.keys.device_id) == (
        about["tenantId"],
        about["principalId"],
        about["deviceId"],
    )
    assert opened.keys.signing_jwk == SIGNERS[about["signer"]]["signingJwk"]
    assert opened.keys.agreement_key_id == KEYS[about["agreementKey"]].key_id
    assert refusal(text, about["passphrase"] + "!") == "WRONG_PASSPHRASE"
