"""`python -m zkplatform.dpop_proof`, as the README uses it, makes proofs the server accepts."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import pytest

from zkplatform.domain.dpop import ProofRequest, verify_proof
from zkplatform.dpop_proof import main
from zkplatform.store.memory import MemoryStore

URL = "http://127.0.0.1:8080/platform.v1.VaultService/DeleteItem"
TOKEN = "zkp_" + "A" * 49


@pytest.mark.parametrize("kind", ["ec", "ed25519"])
async def test_key_and_proof_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    keyfile = tmp_path / "key.json"
    assert main(["new-key", str(keyfile), "--kind", kind]) == 0
    thumbprint = capsys.readouterr().out.strip()
    assert main(["proof", str(keyfile), URL, TOKEN]) == 0
    proof = capsys.readouterr().out.strip()

    assert stat.S_IMODE(keyfile.stat().st_mode) == 0o600
    assert len(thumbprint) == 43
    await verify_proof(
        ProofRequest(proof=proof, htm="POST", htu=URL),
        key_thumbprint=thumbprint,
        access_token=TOKEN,
        now=int(time.time()),
        replay=MemoryStore(),
    )
