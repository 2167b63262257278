"""Operating-system containment for the sandbox child (`plbench/_sandbox_child.py`).

`contain(workdir, limits)` turns the freshly started child into a process that cannot touch
anything but its own working folder, whatever Python or C code it runs afterwards:

- as root (the build's normal case): a private mount and network namespace, in which every
  mount is remounted read-only and the working folder becomes a small private tmpfs owned by
  the solution's user (so /tmp, /dev/shm, /var/tmp and the checkout are read-only and what the
  solution writes vanishes with the namespace); the standard library is bound read-only into
  that folder, where the solution's user can reach it wherever the interpreter lives; then the
  child drops to its own uid and gid, `SANDBOX_ID_BASE + pid`, unique among live processes and
  with no passwd entry;
- always: resource limits (CPU, address space, file size, open files, no core dumps, and
  RLIMIT_NPROC = 1, which the kernel counts per uid: with a uid of its own the child is that
  uid's only task, so it can start no process and no thread), no-new-privileges (no setuid
  binary gives root back) and a seccomp filter refusing socket(2) (a Unix socket file such as
  PostgreSQL's is reachable from any network namespace and would otherwise accept a dropped user).

Not root: no namespace and no uid change are possible, so the solution runs as the invoking
user; the limits, no-new-privileges, the seccomp filter and the Python-level guards of the child
still apply, but files that user may write are protected only by those guards.

Loaded by path from the child (which runs with -S -P), so it imports only the standard library.
"""

from __future__ import annotations

import _signal as signal  # see _sandbox_child
import ctypes
import os
import resource
import struct
import sys

SANDBOX_ID_BASE = 1_600_000_000  # + pid: far above login and subordinate-uid ranges
FILE_SIZE_LIMIT = 16 << 20  # RLIMIT_FSIZE; also the size of the private working folder
_OPEN_FILES = 256
STANDARD_LIBRARY_MOUNT = ".python-stdlib"  # in the working folder
_WORKDIR_INODES = 4096

_CLONE_NEWNS = 0x00020000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
# Per-mount options a read-only bind remount must repeat, or the kernel refuses it.
_MOUNT_OPTION_FLAGS = {"ro": _MS_RDONLY, "nosuid": _MS_NOSUID, "nodev": _MS_NODEV, "noexec": _MS_NOEXEC}
_PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 4, 38, 22, 2

# seccomp: per machine, the audit architecture and the syscalls refused with EACCES.
SECCOMP_RULES = {
    "x86_64": (0xC000003E, {"socket": 41}),
    "aarch64": (0xC00000B7, {"socket": 198}),
}
_X32_SYSCALL_BIT = 0x40000000
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x06
_RET_ALLOW, _RET_ERRNO, _RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
_EACCES = 13

_libc = ctypes.CDLL(None, use_errno=True)


class ContainmentError(RuntimeError):
    pass


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise ContainmentError(f"{what}: {os.strerror(errno)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None, what: str) -> None:
    encode = lambda s: None if s is None else os.fsencode(s)  # noqa: E731
    _check(_libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)), what)


def unescape_mount_point(field: str) -> str:
    """A mount point as /proc/self/mountinfo writes it: a backslash and three octal digits for a space, a tab,
    a newline or a backslash (not with re: the child imports nothing it can do without)."""
    head, *escaped = field.split("\\")
    return head + "".join(chr(int(part[:3], 8)) + part[3:] for part in escaped)


def _mount_points() -> list[tuple[str, int]]:
    """(mount point, option flags) of every mount this namespace sees."""
    points = []
    with open("/proc/self/mountinfo", encoding="utf-8") as info:
        for line in info:
            fields = line.split()
            point = unescape_mount_point(fields[4])
            flags = 0
            for option in fields[5].split(","):
                flags |= _MOUNT_OPTION_FLAGS.get(option, 0)
            points.append((point, flags))
    return points


def _isolate_file_system(workdir: str, uid: int, gid: int) -> None:
    _check(_libc.unshare(_CLONE_NEWNS | _CLONE_NEWNET), "unshare(mount, network)")
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE, None, "making mounts private")
    for point, flags in _mount_points():
        remount = _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | flags
        _mount(None, point, None, remount, None, f"remounting {point} read-only")
    options = f"size={FILE_SIZE_LIMIT},nr_inodes={_WORKDIR_INODES},mode=0700,uid={uid},gid={gid}"
    _mount("tmpfs", workdir, "tmpfs", _MS_NOSUID | _MS_NODEV, options, "mounting the working folder")
    os.chdir(workdir)  # the cwd still named the folder under the new mount


def _bind_standard_library(workdir: str) -> None:
    """Make the standard library importable by the solution's user. An interpreter under a private home (pyenv's
    /root/.pyenv, /root being 0700 on a fresh machine) is readable by root only: the dropped user then found no
    `heapq` nor `re`, until pgserver's first start happened to widen /root. The library is bound read-only into
    the working folder and the import system (search path, the packages already imported) pointed there."""
    library = os.path.dirname(os.__file__)
    bound = os.path.join(workdir, STANDARD_LIBRARY_MOUNT)
    os.mkdir(bound)
    _mount(library, bound, None, _MS_BIND | _MS_REC, None, "binding the standard library")
    flags = _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV
    _mount(None, bound, None, flags, None, "making the standard library read-only")

    def moved(paths: list[str]) -> list[str]:
        return [bound + p[len(library) :] if p == library or p.startswith(library + os.sep) else p for p in paths]

    sys.path[:] = moved(sys.path)
    for module in list(sys.modules.values()):
        search = getattr(module, "__path__", None)
        if isinstance(search, list):  # a regular package: its submodules load from __path__
            search[:] = moved(search)
    sys.path_importer_cache.clear()


def _drop_privileges(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)


def _apply_limits(cpu_seconds: int, memory_bytes: int) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
    resource.setrlimit(resource.RLIMIT_NOFILE, (_OPEN_FILES, _OPEN_FILES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))
    # Oversized writes then fail with OSError (a per-case error) instead of killing the child.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def seccomp_program(machine: str) -> bytes:
    """The BPF program: wrong architecture or x32 ABI: kill; a refused syscall: EACCES; else allow."""
    arch, refused = SECCOMP_RULES[machine]
    count = len(refused)

    def op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
        return struct.pack("HBBI", code, jt, jf, k)

    program = op(_BPF_LD_W_ABS, 4)  # seccomp_data.arch
    program += op(_BPF_JEQ_K, arch, 0, count + 4)  # to the kill at the end
    program += op(_BPF_LD_W_ABS, 0)  # seccomp_data.nr
    program += op(_BPF_JGE_K, _X32_SYSCALL_BIT, count + 2, 0)
    for i, number in enumerate(refused.values()):
        program += op(_BPF_JEQ_K, number, count - i, 0)  # to the EACCES return
    program += op(_BPF_RET_K, _RET_ALLOW)
    program += op(_BPF_RET_K, _RET_ERRNO | _EACCES)
    program += op(_BPF_RET_K, _RET_KILL_PROCESS)
    return program


def _install_seccomp() -> None:
    program = seccomp_program(os.uname().machine)  # not `platform`: 10 ms to import
    filters = ctypes.create_string_buffer(program, len(program))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(program) // 8, ctypes.addressof(filters))
    _check(_libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "installing seccomp")


def contain(workdir: str, cpu_seconds: int, memory_bytes: int) -> str:
    """Contain this process for good; returns how ("isolated" as root, else "unprivileged")."""
    level = "unprivileged"
    if os.geteuid() == 0:
        uid = gid = SANDBOX_ID_BASE + os.getpid()
        _isolate_file_system(workdir, uid, gid)
        _bind_standard_library(workdir)
        _drop_privileges(uid, gid)
        level = "isolated"
    _apply_limits(cpu_seconds, memory_bytes)
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "setting no-new-privileges")
    _check(_libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0), "clearing dumpable")
    _install_seccomp()
    return level
