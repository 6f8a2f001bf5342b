"""A sandboxed run's processes limited together: the sum of their memory and their count, in a cgroup made for the run.

The rlimits the sandbox sets hold each process (its address space) and each uid (its process count): a test that
starts many processes can still use many times the memory limit in all. Where this machine lets NightWatch make a
cgroup below its own (as root, usually: cgroup v2 with the memory and pids controllers delegated to its group, or v1's
memory and pids hierarchies), each run gets one: its memory (`memory.max`, v1 `memory.limit_in_bytes`; the files it
writes to its tmpfs count there too, so the limit is the run's memory plus its tmpfs sizes), no swap beyond it where
swap is accounted, and its process count (`pids.max`). The run's first process moves itself in before it starts
anything, so every process the run starts is inside; when the run ends, whatever is left in the group is killed and the
group removed. A machine without them runs with the rlimits alone, and the run says so.
"""

from __future__ import annotations

import itertools
import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")
OWN_GROUPS = Path("/proc/self/cgroup")
REFUSED = "nightwatch: the run could not enter its cgroup"  # said on its output, for a reader: entered() decides
_RUNS = itertools.count()
SWEEP_AFTER_S = 60.0


@dataclass(frozen=True)
class RunGroup:
    """The cgroup folder(s) of one run: one for cgroup v2, the memory and the pids one for v1."""

    version: int
    memory: Path
    pids: Path

    @property
    def kind(self) -> str:
        return f"cgroup v{self.version}"

    def folders(self) -> list[Path]:
        return list(dict.fromkeys([self.memory, self.pids]))

    def enter(self, argv: list[str]) -> list[str]:
        """`argv` run by a shell that first moves itself into the group (its children inherit it), or says REFUSED."""
        script = ('while [ "$1" != -- ]; do echo $$ 2>/dev/null > "$1" || { echo "$0" >&2; exit 125; }; shift; done; '
                  'shift; exec "$@"')
        return ["/bin/sh", "-c", script, REFUSED, *(str(f / "cgroup.procs") for f in self.folders()), "--", *argv]

    def entered(self) -> bool:
        """Whether the run's first process got in: the group's peak memory, or its page faults, are above zero (the
        kernel's count: nothing the run prints can say it)."""
        peak = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        if _read(self.memory / peak).strip() not in ("", "0"):
            return True
        faults = _counts(self.memory / "memory.stat")
        return faults.get("pgfault", 0) > 0 or faults.get("total_pgfault", 0) > 0

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the run at its memory limit."""
        events = self.memory / ("memory.events" if self.version == 2 else "memory.oom_control")
        return _counts(events).get("oom_kill", 0) > 0

    def remove(self) -> None:
        """Kill whatever the run left in the group, then remove it (never raises: a group left behind is empty)."""
        for _ in range(50):
            self._kill_members()
            try:
                for folder in self.folders():
                    if folder.exists():
                        _drop_group(folder)
                return
            except OSError:
                time.sleep(0.05)

    def _kill_members(self) -> None:
        """SIGKILL every process in the group. cgroup v2's `cgroup.kill` does it in the kernel; elsewhere each process
        is held by a pidfd before it is signalled, and signalled only if the group still lists it: a pid read from
        `cgroup.procs` can end and be given to another process in between, and a plain kill would hit that one."""
        if self.version == 2 and _write(self.memory / "cgroup.kill", 1, optional=True):
            return
        for folder in self.folders():
            _kill_listed(folder)


def _members(folder: Path) -> list[int]:
    return [int(p) for p in _read(folder / "cgroup.procs").split() if p.isdigit()]


def _kill_listed(folder: Path) -> None:
    """Hold each listed process by a pidfd, read the list again, and kill those still on it (a pid that left it in
    between may be someone else's by now)."""
    held = {pid: _pidfd(pid) for pid in _members(folder)}
    try:
        still = set(_members(folder))
        for pid, handle in held.items():
            if pid not in still:
                continue
            try:
                if handle is None:
                    os.kill(pid, signal.SIGKILL)
                else:
                    signal.pidfd_send_signal(handle, signal.SIGKILL)
            except OSError:
                pass
    finally:
        for handle in held.values():
            if handle is not None:
                os.close(handle)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (OSError, AttributeError):  # gone already, or no pidfds (Linux before 5.3): the kill is then by pid
        return None


def make(memory_bytes: int, processes: int, root: Path = Path("/")) -> tuple[RunGroup | None, str]:
    """(a group for one run with these limits, "") or (None, why not). `root`: where /sys and /proc are (tests)."""
    mounts = _mounts(root)
    own = _own_paths(root)
    name = f"nightwatch-run-{os.getpid()}-{next(_RUNS)}-{secrets.token_hex(4)}"  # pids repeat across pid namespaces
    if "" in mounts and "" in own:  # cgroup v2: one folder, its controllers delegated to our group
        parent = mounts[""] / own[""].lstrip("/")
        controllers = set(_read(parent / "cgroup.subtree_control").split())
        if {"memory", "pids"} <= controllers:
            return _made(RunGroup(2, parent / name, parent / name), memory_bytes, processes)
    if "memory" in mounts and "pids" in mounts:
        memory = mounts["memory"] / own.get("memory", "/").lstrip("/") / name
        pids = mounts["pids"] / own.get("pids", "/").lstrip("/") / name
        return _made(RunGroup(1, memory, pids), memory_bytes, processes)
    return None, "no cgroup with the memory and pids controllers is available to this process"


def _made(group: RunGroup, memory_bytes: int, processes: int) -> tuple[RunGroup | None, str]:
    for folder in group.folders():
        _sweep(folder.parent)
    made: list[Path] = []
    try:
        for folder in group.folders():
            _new_group(folder)  # never one that exists: it would be another run's
            made.append(folder)
        if group.version == 2:
            _write(group.memory / "memory.max", memory_bytes)
            _write(group.memory / "memory.swap.max", 0, optional=True)
        else:
            _write(group.memory / "memory.limit_in_bytes", memory_bytes)
            _write(group.memory / "memory.memsw.limit_in_bytes", memory_bytes, optional=True)
        _write(group.pids / "pids.max", processes)
    except OSError as exc:
        for folder in made:  # only what this call made, and only while it is empty
            try:
                _drop_group(folder)
            except OSError:
                pass
        return None, f"a cgroup could not be made ({exc.strerror or exc})"
    return group, ""


def _sweep(parent: Path) -> None:
    """Remove the groups a NightWatch process that is gone left behind (killed before it removed them): a group whose
    processes are all gone can be removed, and only such a one. A group made in the last minute is kept even when its
    maker's pid is not alive here: in another pid namespace a living maker's pid means nothing to this one, and its
    run enters the group within milliseconds of making it."""
    now = time.time()
    try:
        found = list(parent.glob("nightwatch-run-*"))
    except OSError:
        return
    for folder in found:
        try:
            if not alive(folder.name.split("-")[2]) and now - folder.stat().st_mtime > SWEEP_AFTER_S:
                _drop_group(folder)
        except OSError:
            pass  # gone meanwhile, or still in use


def _new_group(folder: Path) -> None:
    folder.mkdir()  # the kernel fills it with the controllers' files


def _drop_group(folder: Path) -> None:
    folder.rmdir()  # refused while a process or a child group is in it


def alive(pid: str) -> bool:
    """Whether the process of this id (its text, from a folder's name) still runs; anything else is not."""
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's: alive
    return True


def _write(path: Path, value: int, optional: bool = False) -> bool:
    """Write a control file the kernel made; never create one (a folder that is not a cgroup gets no file that would
    pass for a control). Whether it was written; an optional file that is missing or refused is no error."""
    try:
        handle = os.open(path, os.O_WRONLY)
        try:
            os.write(handle, f"{value}\n".encode())
        finally:
            os.close(handle)
    except OSError:
        if optional:
            return False
        raise
    return True


def _counts(path: Path) -> dict[str, int]:
    """A kernel file of `name count` lines (memory.stat, memory.events, memory.oom_control), its counts by name."""
    counts: dict[str, int] = {}
    for line in _read(path).splitlines():
        name, _, count = line.partition(" ")
        if count.strip().isdigit():
            counts.setdefault(name, int(count))
    return counts


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _mounts(root: Path) -> dict[str, Path]:
    """Mount points by controller ("" for the v2 hierarchy), where the mount's root is the hierarchy's root."""
    found: dict[str, Path] = {}
    for line in _read(root / str(MOUNTINFO).lstrip("/")).splitlines():
        fields = line.split(" - ")
        if len(fields) != 2:
            continue
        before, after = fields[0].split(), fields[1].split()
        if len(before) < 5 or len(after) < 3 or before[3] != "/":
            continue  # a hierarchy mounted from below its root: its paths do not match /proc/self/cgroup's
        point = root / before[4].lstrip("/")
        found = {k: v for k, v in found.items() if v != point}  # a later mount at the same point hides the earlier
        if after[0] == "cgroup2":
            found.setdefault("", point)
        elif after[0] == "cgroup":
            for option in after[2].split(","):
                if option in ("memory", "pids"):
                    found.setdefault(option, point)
    return found


def _own_paths(root: Path) -> dict[str, str]:
    """This process's group in each hierarchy ("" for v2), from /proc/self/cgroup."""
    paths: dict[str, str] = {}
    for line in _read(root / str(OWN_GROUPS).lstrip("/")).splitlines():
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        for controller in controllers.split(",") if controllers else [""]:
            paths.setdefault(controller, path)
    return paths
