"""verify_proof (RFC 9449 DPoP) alone: every refusal, each made by getting one thing wrong."""

from __future__ import annotations

import re
from collections.abc import Mapping

import pytest
from joserfc import jwk

from tests.dpop import KeyKind, new_key
from tests.proofs import OMIT, build_proof
from tests.world import START
from zkplatform.domain.dpop import (
    MAX_AGE_SECONDS,
    MAX_JTI_LENGTH,
    MAX_PROOF_BYTES,
    ProofRequest,
    access_token_hash,
    normalize_htu,
    verify_proof,
)
from zkplatform.domain.errors import Unauthenticated
from zkplatform.store.memory import MemoryStore

URL = "https://api.example/platform.v1.VaultService/DeleteItem"
TOKEN = "zkp_the-access-token-the-proof-is-for"


@pytest.fixture(params=["ec", "ed25519"])
def key(request: pytest.FixtureRequest) -> jwk.Key:
    kind: KeyKind = request.param
    return new_key(kind)


@pytest.fixture
def ec_key() -> jwk.Key:
    return new_key("ec")


def proof_of(
    key: jwk.Key,
    *,
    method: str = "POST",
    header: Mapping[str, object] | None = None,
    claims: Mapping[str, object] | None = None,
    payload: bytes | None = None,
    signer: jwk.Key | None = None,
    signature: bytes | None = None,
) -> str:
    """A valid proof for a `method` request to URL with TOKEN at START, but for the changes (see build_proof)."""
    return build_proof(
        key,
        URL,
        TOKEN,
        START,
        method=method,
        header=header,
        claims=claims,
        payload=payload,
        signer=signer,
        signature=signature,
    )


async def verify(
    proof: str | None,
    key: jwk.Key,
    *,
    now: int = START,
    replay: MemoryStore | None = None,
    htm: str = "POST",
    htu: str = URL,
) -> None:
    await verify_proof(
        ProofRequest(proof, htm, htu),
        key_thumbprint=key.thumbprint(),
        access_token=TOKEN,
        now=now,
        replay=MemoryStore() if replay is None else replay,
    )


def refused(reason: str) -> pytest.RaisesExc[Unauthenticated]:
    return pytest.raises(Unauthenticated, match=f"^DPoP proof: {re.escape(reason)}$")


# accepted


async def test_a_proof_of_the_bound_key_for_this_request_is_accepted(key: jwk.Key) -> None:
    await verify(proof_of(key), key)


async def test_ed25519_may_go_by_its_rfc_9864_name() -> None:
    key = new_key("ed25519")

    await verify(proof_of(key, header={"alg": "Ed25519"}), key)


# the proof as a whole


@pytest.mark.parametrize("proof", [None, ""])
async def test_a_missing_proof_is_refused(ec_key: jwk.Key, proof: str | None) -> None:
    with refused("missing DPoP header"):
        await verify(proof, ec_key)


async def test_an_oversized_proof_is_refused_before_it_is_parsed(ec_key: jwk.Key) -> None:
    valid = proof_of(ec_key)
    padded_claims = proof_of(ec_key, claims={"pad": "x" * MAX_PROOF_BYTES})

    with refused("too large"):
        await verify(padded_claims, ec_key)
    with refused("too large"):
        await verify("x" * (MAX_PROOF_BYTES + 1), ec_key)
    with refused("not a compact JWS"):  # at the bound, the size is not what is refused
        await verify("x" * MAX_PROOF_BYTES, ec_key)
    assert len(valid) < MAX_PROOF_BYTES


@pytest.mark.parametrize("proof", ["not-a-jws", "a.b", "a.b.c.d", "!!.!!.!!"])
async def test_something_else_than_a_compact_jws_is_refused(ec_key: jwk.Key, proof: str) -> None:
    with refused("not a compact JWS"):
        await verify(proof, ec_key)


async def test_a_proof_cut_short_is_refused(ec_key: jwk.Key) -> None:
    header, payload, _ = proof_of(ec_key).split(".")

    with refused("not a compact JWS"):
        await verify(f"{header}.{payload}", ec_key)


async def test_a_proof_without_alg_is_not_a_jws(ec_key: jwk.Key) -> None:
    with refused("not a compact JWS"):
        await verify(proof_of(ec_key, header={"alg": OMIT}), ec_key)


# the header


@pytest.mark.parametrize("typ", ["jwt", "JWT", "dpop+JWT", "at+jwt", OMIT])
async def test_typ_other_than_dpop_jwt_is_refused(ec_key: jwk.Key, typ: object) -> None:
    with refused("typ must be dpop+jwt"):
        await verify(proof_of(ec_key, header={"typ": typ}), ec_key)


@pytest.mark.parametrize("alg", ["none", "HS256", "RS256", "ES384", "es256", "", None])
async def test_alg_outside_the_allowed_ones_is_refused(ec_key: jwk.Key, alg: object) -> None:
    proof = proof_of(ec_key, header={"alg": alg}, signature=b"")

    with refused("alg must be one of ES256, EdDSA, Ed25519"):
        await verify(proof, ec_key)


@pytest.mark.parametrize("public", [OMIT, "a-key-id", ["EC"], None])
async def test_a_header_without_a_jwk_object_is_refused(ec_key: jwk.Key, public: object) -> None:
    with refused("the header must carry the public jwk"):
        await verify(proof_of(ec_key, header={"jwk": public}), ec_key)


async def test_a_header_carrying_the_private_key_is_refused(key: jwk.Key) -> None:
    proof = proof_of(key, header={"jwk": key.as_dict(private=True)})

    with refused("the header must carry the public jwk"):
        await verify(proof, key)


@pytest.mark.parametrize(
    "public",
    [
        {},
        {"kty": "EC"},
        {"kty": "EC", "crv": "P-256", "x": "AAAA", "y": "AAAA"},
        {"kty": "OKP", "crv": "Ed25519"},
        {"kty": "no-such-type"},
    ],
)
async def test_a_jwk_that_is_not_a_usable_key_is_refused(ec_key: jwk.Key, public: dict[str, str]) -> None:
    with refused("the header's jwk is not a usable public key"):
        await verify(proof_of(ec_key, header={"jwk": public}), ec_key)


async def test_a_proof_of_another_key_is_refused(key: jwk.Key) -> None:
    for other in (new_key("ec"), new_key("ed25519")):
        with refused("jwk is not the key the token is bound to"):
            await verify(proof_of(other), key)


# the signature


async def test_a_proof_signed_by_another_key_than_its_jwk_is_refused(key: jwk.Key) -> None:
    same_kind = new_key("ec" if key.key_type == "EC" else "ed25519")

    with refused("signature is not valid"):
        await verify(proof_of(key, signer=same_kind), key)


async def test_claims_changed_after_signing_are_refused(key: jwk.Key) -> None:
    header, _, signature = proof_of(key).split(".")
    other_payload = proof_of(key, claims={"htu": URL + "x"}).split(".")[1]

    with refused("signature is not valid"):
        await verify(f"{header}.{other_payload}.{signature}", key)


@pytest.mark.parametrize("signature", [b"", b"\x00" * 64, b"garbage"])
async def test_a_signature_that_is_not_one_is_refused(key: jwk.Key, signature: bytes) -> None:
    with refused("signature is not valid"):
        await verify(proof_of(key, signature=signature), key)


@pytest.mark.parametrize(("kind", "alg"), [("ec", "EdDSA"), ("ec", "Ed25519"), ("ed25519", "ES256")])
async def test_an_alg_that_does_not_fit_the_key_is_refused(kind: KeyKind, alg: str) -> None:
    key = new_key(kind)

    # Signed as its key signs, but labelled with another algorithm: joserfc refuses the pair.
    with refused("signature is not valid"):
        await verify(proof_of(key, header={"alg": alg}), key)


# the claims


@pytest.mark.parametrize("payload", [b"not json", b"{", b"\xff\xfe\xfd", b""])
async def test_claims_that_are_not_json_are_refused(ec_key: jwk.Key, payload: bytes) -> None:
    with refused("claims are not JSON"):
        await verify(proof_of(ec_key, payload=payload), ec_key)


@pytest.mark.parametrize("payload", [b"[]", b'["htm", "POST"]', b'"POST"', b"42", b"null", b"true"])
async def test_claims_that_are_not_a_json_object_are_refused(ec_key: jwk.Key, payload: bytes) -> None:
    with refused("claims are not a JSON object"):
        await verify(proof_of(ec_key, payload=payload), ec_key)


@pytest.mark.parametrize(
    ("htm", "said"),
    [
        ("GET", "the proof's htm is GET"),
        ("post", "the proof's htm is post"),
        ("PUT", "the proof's htm is PUT"),
        ("", "the proof's htm is not a method name"),
        ("POST\nGET", "the proof's htm is not a method name"),
        ("P" * 17, "the proof's htm is not a method name"),
        (OMIT, "the proof has no htm"),
        (["POST"], "the proof's htm is not a method name"),
    ],
)
async def test_htm_other_than_the_request_method_is_refused(ec_key: jwk.Key, htm: object, said: str) -> None:
    with refused(f"htm does not match the request method: {said}; this call is a POST"):
        await verify(proof_of(ec_key, claims={"htm": htm}), ec_key)


async def test_htm_is_compared_with_the_request_method(ec_key: jwk.Key) -> None:
    await verify(proof_of(ec_key, method="GET"), ec_key, htm="GET")
    # The Connect GET form: the refusal names the method the proof should have said.
    with refused("htm does not match the request method: the proof's htm is POST; this call is a GET"):
        await verify(proof_of(ec_key), ec_key, htm="GET")


@pytest.mark.parametrize(
    "htu",
    [
        "https://api.example/platform.v1.BrokerService/MintUserApiToken",
        "https://elsewhere.example/platform.v1.VaultService/DeleteItem",
        "http://api.example/platform.v1.VaultService/DeleteItem",
        "https://api.example:8443/platform.v1.VaultService/DeleteItem",
        "https://api.example/platform.v1.VaultService/deleteitem",
        OMIT,
        42,
        None,
    ],
)
async def test_htu_other_than_the_request_url_is_refused(ec_key: jwk.Key, htu: object) -> None:
    with refused("htu does not match the request URL"):
        await verify(proof_of(ec_key, claims={"htu": htu}), ec_key)


@pytest.mark.parametrize(
    "htu",
    [
        "",
        "api.example/platform.v1.VaultService/DeleteItem",
        "ftp://api.example/platform.v1.VaultService/DeleteItem",
        "https://[::1/platform.v1.VaultService/DeleteItem",
        "https://[zz::1]/platform.v1.VaultService/DeleteItem",
        "https://api.example:99999/platform.v1.VaultService/DeleteItem",
        "https://api.example:1e3/platform.v1.VaultService/DeleteItem",
        "https://user@api.example/platform.v1.VaultService/DeleteItem",
    ],
)
async def test_htu_that_is_no_http_url_of_a_host_is_refused_so(ec_key: jwk.Key, htu: str) -> None:
    """tests/rpc/test_malformed_hosts.py has the full table of malformed hosts."""
    with refused(
        "htu does not match the request URL: the proof's htu is not an http(s) URL naming a host and an optional port"
    ):
        await verify(proof_of(ec_key, claims={"htu": htu}), ec_key)


@pytest.mark.parametrize(
    "htu",
    [
        "HTTPS://API.EXAMPLE/platform.v1.VaultService/DeleteItem",
        "https://api.example:443/platform.v1.VaultService/DeleteItem",
        "https://api.example/platform.v1.VaultService/DeleteItem?trace=1",
        "https://api.example/platform.v1.VaultService/DeleteItem#fragment",
    ],
)
async def test_htu_compares_without_query_fragment_case_of_host_or_default_port(ec_key: jwk.Key, htu: str) -> None:
    await verify(proof_of(ec_key, claims={"htu": htu}), ec_key)


@pytest.mark.parametrize(
    ("url", "normal"),
    [
        ("HTTP://Example.COM:80/a/b?q=1#f", "http://example.com/a/b"),
        ("https://example.com:443", "https://example.com/"),
        ("http://example.com:443/x", "http://example.com:443/x"),
        ("https://[::1]:8443/x", "https://[::1]:8443/x"),
        ("https://[::1]/x", "https://[::1]/x"),
    ],
)
def test_normalize_htu(url: str, normal: str) -> None:
    assert normalize_htu(url) == normal


@pytest.mark.parametrize("skew", [-MAX_AGE_SECONDS - 1, MAX_AGE_SECONDS + 1, -3600, 86400])
async def test_iat_outside_the_window_is_refused(ec_key: jwk.Key, skew: int) -> None:
    with refused(f"iat is not within {MAX_AGE_SECONDS} seconds of the server's time"):
        await verify(proof_of(ec_key), ec_key, now=START + skew)


@pytest.mark.parametrize("skew", [-MAX_AGE_SECONDS, 0, MAX_AGE_SECONDS])
async def test_iat_at_the_edges_of_the_window_is_accepted(ec_key: jwk.Key, skew: int) -> None:
    await verify(proof_of(ec_key), ec_key, now=START + skew)


@pytest.mark.parametrize("iat", [str(START), float(START), OMIT, None, [START]])
async def test_iat_that_is_not_a_whole_number_is_refused(ec_key: jwk.Key, iat: object) -> None:
    with refused(f"iat is not within {MAX_AGE_SECONDS} seconds of the server's time"):
        await verify(proof_of(ec_key, claims={"iat": iat}), ec_key)


async def test_iat_true_is_not_the_number_one(ec_key: jwk.Key) -> None:
    # JSON true is a Python bool, an int equal to 1: at a server time of 1 it would pass.
    with refused(f"iat is not within {MAX_AGE_SECONDS} seconds of the server's time"):
        await verify(proof_of(ec_key, claims={"iat": True}), ec_key, now=1)
    await verify(proof_of(ec_key, claims={"iat": 1}), ec_key, now=1)


@pytest.mark.parametrize("ath", [access_token_hash("zkp_another-token"), TOKEN, "", OMIT, None])
async def test_ath_other_than_the_access_tokens_hash_is_refused(ec_key: jwk.Key, ath: object) -> None:
    with refused("ath does not match the access token"):
        await verify(proof_of(ec_key, claims={"ath": ath}), ec_key)


def test_ath_is_the_unpadded_base64url_sha256_of_the_token() -> None:
    # SHA-256("abc") = ba7816bf...f20015ad, as in FIPS 180-2.
    assert access_token_hash("abc") == "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0"


@pytest.mark.parametrize("jti", [OMIT, "", "x" * (MAX_JTI_LENGTH + 1), 42, None, ["a"]])
async def test_jti_missing_empty_too_long_or_not_a_string_is_refused(ec_key: jwk.Key, jti: object) -> None:
    with refused("jti is missing"):
        await verify(proof_of(ec_key, claims={"jti": jti}), ec_key)


async def test_jti_of_the_longest_length_is_accepted(ec_key: jwk.Key) -> None:
    await verify(proof_of(ec_key, claims={"jti": "x" * MAX_JTI_LENGTH}), ec_key)


# replay


async def test_a_jti_is_used_once_per_key(ec_key: jwk.Key) -> None:
    replay = MemoryStore()
    proof = proof_of(ec_key, claims={"jti": "once"})
    other_key = new_key("ec")

    await verify(proof, ec_key, replay=replay)
    with refused("jti was already used"):
        await verify(proof, ec_key, replay=replay, now=START + 1)
    with refused("jti was already used"):  # a new proof does not make the jti new
        await verify(proof_of(ec_key, claims={"jti": "once"}), ec_key, replay=replay)
    await verify(proof_of(other_key, claims={"jti": "once"}), other_key, replay=replay)  # per key


async def test_a_jti_is_remembered_as_long_as_its_proof_is_accepted(ec_key: jwk.Key) -> None:
    """A proof from the future (iat = now + 60) is accepted until iat + 60: 120 s after first use."""
    replay = MemoryStore()
    proof = proof_of(ec_key)

    await verify(proof, ec_key, replay=replay, now=START - MAX_AGE_SECONDS)

    with refused("jti was already used"):
        await verify(proof, ec_key, replay=replay, now=START + MAX_AGE_SECONDS)
