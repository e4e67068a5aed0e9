"""The transparency-log primitives' tests, in process: the package's sources (clients/python) come
first on the path, as for the Python client's own tests."""

from __future__ import annotations

import sys
from pathlib import Path

PY_CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"
if str(PY_CLIENT) not in sys.path:
    sys.path.insert(0, str(PY_CLIENT))
