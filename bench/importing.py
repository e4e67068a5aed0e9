"""The import rate: `zkplatform admin import` of an NDJSON file into a fresh SQLite file.

The real command line, as an operator runs it, in its own process: its wall time
and its peak resident set (from the kernel's accounting of that one child) are
what an operator waits for and what the machine must have.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

LINES = 200_000
VAULTS = 10
TENANT = "bench"
_ITEM = {
    "tenantId": TENANT,
    "version": "1",
    "kind": "note",
    "titleHash": "dGl0bGUtaGFzaC10aXRsZS1oYXNo",
    "updatedAt": "2026-01-01T00:00:00Z",
    "encryptedPayload": {
        "alg": "A256GCM",
        "nonce": "bm9uY2Vub25jZQ",
        "aad": "YWFk",
        "ciphertext": "Y2lwaGVydGV4dC1jaXBoZXJ0ZXh0LWNpcGhlcnRleHQ",
        "version": 1,
    },
    "wrappedKeys": [{"recipientId": "owner", "wrapAlg": "A256KW", "wrappedKey": "a2V5LWtleS1rZXkta2V5LWtleS1rZXk"}],
}


@dataclass(frozen=True, slots=True)
class ImportFigures:
    lines: int
    file_mib: float
    seconds: float
    peak_rss_mib: float

    @property
    def lines_per_second(self) -> float:
        return self.lines / self.seconds


def write_items(path: Path, lines: int) -> None:
    with path.open("w") as file:
        for n in range(lines):
            item = {"itemId": f"b-{n}", "vaultId": f"v-{n % VAULTS}", **_ITEM}
            file.write(json.dumps(item, separators=(",", ":")) + "\n")


def _admin(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "zkplatform"), "admin", *args]


def measure(work: Path, lines: int = LINES) -> ImportFigures:
    """Import `lines` items into a fresh, migrated SQLite file holding their tenant and vaults."""
    work.mkdir(parents=True, exist_ok=True)
    items, store = work / "items.ndjson", f"sqlite:///{work / 'import.db'}"
    write_items(items, lines)
    env = {**os.environ, "ZKPLATFORM_STATE_DIR": str(work)}
    setup = [("migrate",), ("tenant", "add", TENANT)]
    setup += [("vault", "add", f"v-{v}", "--tenant", TENANT) for v in range(VAULTS)]
    for args in setup:
        subprocess.run(_admin(*args, "--store", store), env=env, check=True, capture_output=True, timeout=120)
    started = time.monotonic()
    with subprocess.Popen(_admin("import", str(items), "--store", store), env=env, stdout=subprocess.PIPE) as child:
        # wait4: the resources of this child alone (RUSAGE_CHILDREN would mix in the servers).
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - started
        said = child.stdout.read().decode() if child.stdout else ""
    if child.returncode != 0 or f"imported {lines} item(s)" not in said:
        msg = f"the import failed (exit code {child.returncode}): {said!r}"
        raise RuntimeError(msg)
    return ImportFigures(lines, items.stat().st_size / 2**20, seconds, usage.ru_maxrss / 1024)  # ru_maxrss: KiB


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory(prefix="zk-import-") as tmp:
        figures = measure(Path(tmp), int(sys.argv[1]) if len(sys.argv) > 1 else LINES)
    print(figures, f"{figures.lines_per_second:,.0f} lines/s")
