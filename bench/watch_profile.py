"""Where N idle watches' memory and CPU go, and one change's fan-out to them (issue 42's diagnosis).

    python -m bench.watch_profile N OUT_DIR [--probe]

This tree's `serve --dev` (with --probe: under bench/probe.py's tracemalloc, a baseline taken
before the watches open and OUT_DIR/probe.json written once they are) holding N HTTP/1.1
watches of bench/watchers.py; py-spy records the server over an idle window (OUT_DIR/idle.txt)
and while one UpdateItem reaches every watch (OUT_DIR/fanout.txt), in its raw collapsed format.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from bench import watches10k
from bench.other_commits import ROOT
from bench.servers import Cores, serving

PY_SPY = str(Path(sys.executable).parent / "py-spy")
SNAPSHOT_S = 20  # for the probe to write its snapshot (a signal handler; slow with many traces)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.watch_profile")
    parser.add_argument("watches", type=int)
    parser.add_argument("out", type=Path)
    parser.add_argument("--probe", action="store_true")
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    credentials = out / "credentials.json"
    credentials.unlink(missing_ok=True)
    cap = str(args.watches + 100)
    env = {"PYTHONPATH": str(ROOT), "ZKPLATFORM_STATE_DIR": str(out), "ZKPLATFORM_MAX_STREAMS": cap}
    env |= {"ZKPLATFORM_WATCH_MAX_PER_WORKER": cap, "ZKPLATFORM_WATCH_MAX_PER_PRINCIPAL": cap}
    serve = ["serve", "--bind", "127.0.0.1:{port}", "--dev", "--dev-credentials", str(credentials)]
    runner = ["-m", "bench.probe", str(out / "probe.json")] if args.probe else ["-m", "zkplatform"]
    cores = Cores.split()
    with serving(
        [sys.executable, *runner, *serve], env, out / "server.log", ROOT, None if cores is None else cores.server
    ) as server:
        token, vault = watches10k.dev_token(credentials)
        since, item = asyncio.run(watches10k.latest(server.port, token, vault))
        if args.probe:
            os.kill(server.pid, signal.SIGUSR1)
        setup = watches10k.WatchSetup("profile", "memory", 1, args.watches, "http1", 1)
        before = server.rss_kib()
        with watches10k.watchers(
            setup, server.port, token, vault, since, None if cores is None else cores.load
        ) as held:
            print(watches10k.line(held[0]).strip())
            print(f"RSS KiB a watch: {(server.rss_kib() - before) / args.watches:.1f}")
            if args.probe:
                os.kill(server.pid, signal.SIGUSR2)
                time.sleep(SNAPSHOT_S)
            record = [PY_SPY, "record", "-p", str(server.pid), "-f", "raw", "--nonblocking"]
            seconds = str(watches10k.IDLE_S)
            subprocess.run([*record, "-d", seconds, "-r", "50", "-o", str(out / "idle.txt")], check=True)
            with subprocess.Popen([*record, "-d", "15", "-r", "200", "-o", str(out / "fanout.txt")]) as spy:
                time.sleep(1)
                item, sequence = asyncio.run(watches10k.update(server.port, token, item))
                committed = time.monotonic()
                ask = json.dumps({"collect": [sequence], "timeout": watches10k.COLLECT_TIMEOUT_S}) + "\n"
                stdin = held[0].stdin
                if stdin is not None:
                    stdin.write(ask.encode())
                    stdin.flush()
                arrivals = sorted(json.loads(watches10k.line(held[0]))["arrivals"][str(sequence)])
                spy.wait()
    if arrivals:
        p50, last = arrivals[len(arrivals) // 2] - committed, arrivals[-1] - committed
        print(f"fan-out to {len(arrivals)}: p50 {p50 * 1000:.0f} ms, max {last * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
