"""Transparency-log primitives, shared by the server and the Python client, on the standard library
and `cryptography` only.

- `merkle`: RFC 9162 section 2.1 Merkle tree hashes, inclusion and consistency proofs.
- `note`: C2SP signed-note (Ed25519, signature type 0x01) and tlog-cosignature (`cosignature/v1`,
  signature type 0x04) keys, signing and verification.
- `checkpoint`: C2SP tlog-checkpoint note bodies.
- `witness_wire`: the messages of C2SP tlog-witness `add-checkpoint`.
- `errors`: what each of them raises (ValueErrors with a stable `reason`).
- `encoding`: the strict base64 and decimal spellings they all parse.
- `statements`: the key log's statements and entries (docs/key-transparency.md).
- `ed25519`: the one Ed25519 signature check of both Python packages (OpenSSL's, which the
  TypeScript package's matches: clients/testdata/ed25519-speccheck.json).

clients/testdata/tlog/*.json hold the vectors every implementation (this one and the TypeScript
one) must agree with.
"""
