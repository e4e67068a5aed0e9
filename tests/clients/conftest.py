"""The Python client package's own tests, in process: its sources (clients/python) come first on
the path, as `make clients` stages them into the wheel (the other tests run the wheel itself)."""

from __future__ import annotations

import sys
from pathlib import Path

PY_CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"
if str(PY_CLIENT) not in sys.path:
    sys.path.insert(0, str(PY_CLIENT))
