"""Run a command in the sandbox a systemd unit describes, as far as it decides whether Python
runs at all: `python -m tests.e2e.systemd_sandbox UNIT -- COMMAND...` applies the unit's
NoNewPrivileges, SystemCallFilter (allowed and denied groups, as systemd-analyze lists them here),
SystemCallErrorNumber, RestrictAddressFamilies and MemoryDenyWriteExecute (systemd's seccomp
rules, and the kernel's PR_SET_MDWE too), then executes COMMAND.

For a machine without systemd as its init (a container), where the unit itself cannot be started:
what the hardening takes away from the process (system calls, socket families, writable and
executable memory) is taken away the same way, by seccomp. The file system's side (ProtectSystem,
PrivateTmp, ...) needs systemd's mount namespace, and is not reproduced.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import mmap
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

PR_SET_MDWE = 65  # linux/prctl.h, Linux 6.3
PR_MDWE_REFUSE_EXEC_GAIN = 1
SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_EQ = 4
SCMP_CMP_MASKED_EQ = 7
SHM_EXEC = 0o100000
WRITE_EXEC = mmap.PROT_WRITE | mmap.PROT_EXEC


def scmp_act_errno(number: int) -> int:
    return 0x00050000 | (number & 0xFFFF)


class ArgCmp(ctypes.Structure):
    _fields_ = (
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    )


def service_settings(unit: str) -> dict[str, list[str]]:
    """The [Service] section's settings: each key's values, in order (continuation lines joined)."""
    settings: dict[str, list[str]] = {}
    section = ""
    for raw in re.sub(r"\\\n", " ", unit).splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
            continue
        if section == "[Service]" and "=" in line:
            key, _, value = line.partition("=")
            settings.setdefault(key.strip(), []).append(value.strip())
    return settings


def syscall_groups() -> dict[str, list[str]]:
    """systemd's system call groups as this systemd defines them (`systemd-analyze syscall-filter`)."""
    listed = subprocess.run(
        ["systemd-analyze", "syscall-filter"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    groups: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in listed.splitlines():
        line = raw.strip()
        if raw.startswith("@"):
            current = groups.setdefault(line, [])
        elif not raw.strip() or not raw.startswith(" "):
            current = None
        elif current is not None and not line.startswith("#"):
            current.append(line)
    return groups


def expanded(names: list[str], groups: dict[str, list[str]]) -> set[str]:
    calls: set[str] = set()
    for name in names:
        if name.startswith("@"):
            calls |= expanded(groups[name], groups)
        else:
            calls.add(name)
    return calls


def allowed_syscalls(settings: dict[str, list[str]], groups: dict[str, list[str]]) -> set[str]:
    """SystemCallFilter= lines as systemd reads them: the allowed list, less each `~` list."""
    allowed: set[str] = set()
    denied: set[str] = set()
    for value in settings.get("SystemCallFilter", []):
        if value.startswith("~"):
            denied |= expanded(value[1:].split(), groups)
        else:
            allowed |= expanded(value.split(), groups)
    return allowed - denied


def apply(settings: dict[str, list[str]]) -> None:  # noqa: C901 # one rule after another
    libc = ctypes.CDLL(None, use_errno=True)
    seccomp = ctypes.CDLL(ctypes.util.find_library("seccomp") or "libseccomp.so.2", use_errno=True)
    seccomp.seccomp_init.restype = ctypes.c_void_p
    seccomp.seccomp_init.argtypes = [ctypes.c_uint32]
    seccomp.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    seccomp.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(ArgCmp),
    ]
    seccomp.seccomp_load.argtypes = [ctypes.c_void_p]

    if settings.get("NoNewPrivileges") != ["yes"]:
        sys.exit("the unit does not set NoNewPrivileges=yes")
    number = settings.get("SystemCallErrorNumber", ["EPERM"])[-1]
    context = seccomp.seccomp_init(scmp_act_errno(getattr(errno, number)))

    def allow(name: str, *conditions: tuple[int, int, int, int]) -> None:
        call = seccomp.seccomp_syscall_resolve_name(name.encode())
        if call < 0:
            return  # not a system call of this architecture
        array = (ArgCmp * max(len(conditions), 1))(*(ArgCmp(*c) for c in conditions))
        if seccomp.seccomp_rule_add_array(context, SCMP_ACT_ALLOW, call, len(conditions), array) != 0:
            sys.exit(f"seccomp refused a rule for {name}")

    conditional = {"socket"}
    memory_deny = settings.get("MemoryDenyWriteExecute") == ["yes"]
    if memory_deny:
        conditional |= {"mmap", "mmap2", "mprotect", "pkey_mprotect", "shmat"}
    for name in sorted(allowed_syscalls(settings, syscall_groups()) - conditional):
        allow(name)
    families = [
        getattr(socket, name) for value in settings.get("RestrictAddressFamilies", []) for name in value.split()
    ]
    for family in families or [socket.AF_UNIX, socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK]:
        allow("socket", (0, SCMP_CMP_EQ, family, 0))
    if memory_deny:
        # systemd's rules (seccomp_memory_deny_write_execute): no mapping both writable and
        # executable, no mprotect to executable, no executable shared memory.
        for mapped in ("mmap", "mmap2"):
            for prot in (0, mmap.PROT_WRITE, mmap.PROT_EXEC):
                allow(mapped, (2, SCMP_CMP_MASKED_EQ, WRITE_EXEC, prot))
        for protect in ("mprotect", "pkey_mprotect"):
            allow(protect, (2, SCMP_CMP_MASKED_EQ, mmap.PROT_EXEC, 0))
        allow("shmat", (2, SCMP_CMP_MASKED_EQ, SHM_EXEC, 0))
        # And the kernel's own, where there is one (Linux 6.3): what newer systemd uses.
        if libc.prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0:
            sys.stderr.write(f"PR_SET_MDWE: {os.strerror(ctypes.get_errno())}; seccomp's rules only\n")
    if seccomp.seccomp_load(context) != 0:  # sets no_new_privs first (SCMP_FLTATR_CTL_NNP)
        sys.exit("seccomp_load failed")


def main() -> None:
    unit, separator, *command = sys.argv[1:]
    if separator != "--" or not command:
        sys.exit("usage: python -m tests.e2e.systemd_sandbox UNIT -- COMMAND...")
    apply(service_settings(Path(unit).read_text()))
    os.execv(command[0], command)  # noqa: S606 # the command under test, in the sandbox


if __name__ == "__main__":
    main()
