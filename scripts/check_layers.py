"""Import-layer check: rpc -> domain -> repository <- store; app and cli wire them.

Fails when a module imports a layer it must not know, e.g. the domain importing
protobuf or a store importing the RPC layer.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "zkplatform"

TRANSPORT = ("connectrpc", "google.protobuf", "google.rpc", "zkplatform_api", "buf", "hypercorn", "protovalidate")
# layer (a module path prefix under zkplatform) -> import prefixes it must not use
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "zkplatform.domain": (*TRANSPORT, "zkplatform.rpc", "zkplatform.store", "zkplatform.app", "zkplatform.cli"),
    "zkplatform.repository": (*TRANSPORT, "zkplatform.rpc", "zkplatform.store", "zkplatform.app", "zkplatform.cli"),
    "zkplatform.store": (*TRANSPORT, "zkplatform.rpc", "zkplatform.app", "zkplatform.cli"),
    "zkplatform.rpc": ("zkplatform.store", "zkplatform.app", "zkplatform.cli"),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def main() -> int:
    problems: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        module = module_name(path)
        banned = [prefix for layer, prefixes in FORBIDDEN.items() if within(module, layer) for prefix in prefixes]
        problems.extend(
            f"{path.relative_to(SRC.parent.parent)}:{lineno}: {module} must not import {imported}"
            for lineno, imported in imports(ast.parse(path.read_text(), str(path)))
            if any(within(imported, prefix) for prefix in banned)
        )
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print("import layers: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
