"""Run an application's code (its tests, a regression test a model wrote) in a bubblewrap sandbox.

What runs here may have been written by a model that read a hostile error message, so it may try anything.
Each run gets:
  - a private copy of the tree it is given, on a size-capped tmpfs at /work (the copy on disk, the user's
    checkout, NIGHTWATCH_HOME, the Prefect home and $HOME are not mounted at all);
  - read-only system folders (/usr and a few files of /etc), the test environment's folders, nothing else;
  - its own network namespace (loopback only) unless `network=True` (the test environment's set-up), its own
    pid, ipc and uts namespaces, a new session (no terminal to inject into);
  - an environment of its own: PATH, HOME=/tmp/home, LANG, TMPDIR and what the caller names; never a variable
    of NightWatch's;
  - limits: CPU seconds, address space, file size and processes (rlimits through `prlimit`), a wall clock after
    which its whole process group and pid namespace are killed; where the machine allows it, a cgroup of its own
    holding the sum of its processes' memory and their count (nightwatch/verify/cgroup.py), which a process's own
    limits do not;
  - as root, an unprivileged uid (`setpriv`), so that the process limit holds (root is exempt from it): a uid of
    its own for each run, so that runs side by side do not share it.
Output (stdout and stderr together) is capped while it is read and redacted before anyone sees it.
Without bubblewrap nothing runs: the result says "not run: bubblewrap is not installed".
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from nightwatch.redact import REDACTED, redact
from nightwatch.verify import cgroup
from nightwatch.verify.reproduce import skipped

SANDBOX_UID = 65534  # as root, a set-up runs as this uid (nobody), which owns the environment it makes
# As root, each other run gets a uid of its own from this range, with no process at the time: the process limit counts
# a uid's processes, so runs side by side under one uid shared it, and a fork bomb in one starved the other.
RUN_UIDS = range(2_100_000_000, 2_100_000_000 + 65_536)
_RUNS = itertools.count()
WORK = "/work"
_ETC = ("passwd", "group", "hosts", "nsswitch.conf", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime",
        "alternatives", "ssl", "ca-certificates", "mime.types", "timezone", "python3")  # pip.conf only for set-up
_SYSTEM = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
_MIB = 1024 * 1024
_SANDBOX_PROCESSES = 8  # the run's own: its shell, bubblewrap and its init in the pid namespace, beside the command's


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot run here (bubblewrap or util-linux missing, namespaces refused): nothing runs."""


@dataclass(frozen=True)
class Limits:
    wall_s: float = 120.0
    cpu_s: int = 120
    memory_mb: int = 2048
    file_mb: int = 64
    processes: int = 64
    work_mb: int = 1024  # the tmpfs holding the copy of the tree
    tmp_mb: int = 256
    output_bytes: int = 64_000  # kept of the output: its first and last halves


@dataclass
class SandboxRun:
    """What one command did inside the sandbox. `output` is capped and redacted."""

    command: list[str]
    exit_code: int | None  # None: killed at the wall clock or never started
    output: str
    seconds: float
    timed_out: bool = False
    output_cut: bool = False
    not_run: str | None = None  # why nothing ran
    limits: Limits = field(default_factory=Limits)
    memory_killed: bool = False  # the kernel killed a process at the run's memory limit (its cgroup's)
    grouped: str = ""  # how the run's processes were held together: "cgroup v1", "cgroup v2", or why not

    @property
    def outcome(self) -> str:
        """passed | failed (exit N) | skipped | killed ... | not run: why. A run that exited 0 having only skipped its
        tests is "skipped": a skip is not a pass."""
        if self.not_run:
            return f"not run: {self.not_run}"
        if self.timed_out:
            return f"killed at the {self.limits.wall_s:g} s limit"
        limit = f"its memory limit ({group_memory_mb(self.limits):,} MB for all its processes)"
        if self.memory_killed and self.exit_code in (-signal.SIGKILL, 128 + signal.SIGKILL):
            return f"killed at {limit}"
        if self.exit_code is not None and self.exit_code < 0:
            return f"killed by signal {-self.exit_code} ({signal.Signals(-self.exit_code).name})"
        if self.exit_code == 0:
            return "skipped" if skipped(self.output) else "passed"
        # a process of the run killed at the limit does not make the command's own failure anything but a failure
        return f"failed (exit {self.exit_code})" + (f"; a process of the run was killed at {limit}" if self.memory_killed else "")


def unavailable_reason() -> str | None:
    """Why no sandbox can run on this machine, or None."""
    if not shutil.which("bwrap"):
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    if not shutil.which("prlimit"):
        return "prlimit (util-linux) is not installed"
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        return "setpriv (util-linux) is not installed: as root the sandbox must drop to an unprivileged uid"
    return None


@dataclass(frozen=True)
class Layered:
    """A tree a run copies, and a folder of the files the run adds or changes, copied over it (each replacing what was
    there): the night's copy of the checkout shared by every run, and one run's test and fix."""

    tree: Path
    overlay: Path | None = None


def run(command: list[str], tree: Path | Layered, *, mounts: list[Path] = (), env: dict[str, str] | None = None,  # type: ignore[assignment]
        limits: Limits = Limits(), network: bool = False, writable: list[Path] = (),  # type: ignore[assignment]
        secrets: list[str] = ()) -> SandboxRun:  # type: ignore[assignment]
    """Run `command` in /work, a private copy of `tree` (with its overlay over it, for a Layered tree). `mounts`: folders
    visible read-only at their own paths (a test environment, its interpreter); `writable`: folders visible read-write
    at their own paths (only the test environment while it is made). `secrets`: literal values to redact from the
    output besides the usual rules."""
    reason = unavailable_reason()
    if reason:
        return SandboxRun(command=command, exit_code=None, output="", seconds=0.0, not_run=reason, limits=limits)
    layered = tree if isinstance(tree, Layered) else Layered(tree)
    argv = _argv(command, layered, list(mounts), list(writable), env or {}, limits, network)
    group, why = cgroup.make(group_memory_mb(limits) * _MIB, limits.processes + _SANDBOX_PROCESSES)
    try:
        run = _run(command, group.enter(argv) if group else argv, limits, secrets)
        if group is not None and not run.timed_out and not group.entered():  # the kernel's word, not the output's
            return SandboxRun(command=command, exit_code=None, output="", seconds=run.seconds, limits=limits,
                              not_run="its cgroup could not be entered")
        run.memory_killed = group is not None and group.oom_killed()
        run.grouped = group.kind if group else f"per process only: {why}"
        return run
    finally:
        if group is not None:
            group.remove()


def grouping() -> str:
    """How runs here hold their processes together, for `nightwatch check`: a cgroup per run, or why only per process."""
    group, why = cgroup.make(64 * _MIB, 8)
    if group is None:
        return f"memory and processes limited per process only ({why})"
    group.remove()
    return f"memory and processes limited per run ({group.kind})"


def group_memory_mb(limits: Limits) -> int:
    """The memory all of a run's processes may hold together: its memory limit and its two tmpfs, whose files count
    as the memory of the group that writes them (filling them ends in "no space left", not in the OOM killer)."""
    return limits.memory_mb + limits.work_mb + limits.tmp_mb


def _run(command: list[str], argv: list[str], limits: Limits, secrets: list[str]) -> SandboxRun:
    started = time.monotonic()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"})
    except OSError as exc:
        return SandboxRun(command=command, exit_code=None, output="", seconds=0.0, limits=limits,
                          not_run=f"bubblewrap could not start ({exc.strerror or exc})")
    reader = _CappedReader(proc.stdout, limits.output_bytes)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=limits.wall_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        proc.wait()
    reader.join(timeout=10)
    seconds = time.monotonic() - started
    text, cut = reader.text()
    return SandboxRun(command=command, exit_code=None if timed_out else proc.returncode, seconds=round(seconds, 2),
                      output=scrub(text, secrets), timed_out=timed_out, output_cut=cut, limits=limits)


def scrub(text: str, secrets: list[str] | tuple[str, ...] = ()) -> str:
    """Redact the output: the literal secrets NightWatch holds, then every rule of nightwatch.redact."""
    for value in sorted({s for s in secrets if s and len(s) >= 6}, key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return redact(text.replace("\x00", ""))


def _argv(command: list[str], layered: Layered, mounts: list[Path], writable: list[Path], env: dict[str, str],
          limits: Limits, network: bool) -> list[str]:
    tree, overlay = layered.tree, layered.overlay
    root = os.geteuid() == 0
    processes = limits.processes + (0 if root else _processes_of(os.getuid()))
    argv = ["prlimit", f"--cpu={limits.cpu_s}", f"--as={limits.memory_mb * _MIB}", f"--fsize={limits.file_mb * _MIB}",
            f"--nproc={processes}", "--core=0", "--", "bwrap", *([] if root else ["--unshare-user"]),
            "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent",
            "--new-session", "--hostname", "sandbox", *([] if network else ["--unshare-net"])]
    argv += _system(network) + ["--proc", "/proc", "--dev", "/dev",
                                "--perms", "1777", "--size", str(limits.tmp_mb * _MIB), "--tmpfs", "/tmp",
                                "--perms", "1777", "--size", str(limits.work_mb * _MIB), "--tmpfs", WORK,
                                "--ro-bind", str(tree), "/src"]
    argv += ["--ro-bind", str(overlay), "/overlay"] if overlay is not None else []
    argv += _binds(mounts, writable)
    base_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp/home", "LANG": "C.UTF-8", "TMPDIR": "/tmp",
                "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "CI": "true"}
    argv.append("--clearenv")
    for key, value in {**base_env, **env}.items():
        argv += ["--setenv", key, value]
    argv += ["--chdir", WORK]
    if root:
        uid = SANDBOX_UID if writable else _free_uid()
        argv += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs",
                 "--inh-caps=-all", "--bounding-set=-all", "--"]
    # The tree is copied into the tmpfs (no .git: a test has no business with history), the run's own files over it
    # (each replacing a file or link of that name, never written through one), then the command runs.
    copy = "cp -R /src/. /work/" + (" && cp -R --remove-destination /overlay/. /work/" if overlay is not None else "")
    return argv + ["/bin/sh", "-c", f'mkdir -p /tmp/home && {copy} && exec "$@"', "sandbox", *command]


def _system(network: bool) -> list[str]:
    """The system folders read-only (merged-/usr links as links) and the few files of /etc a program needs."""
    argv: list[str] = []
    for name in _SYSTEM:
        path = Path("/") / name
        if path.is_symlink():
            argv += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            argv += ["--ro-bind", str(path), str(path)]
    argv += ["--perms", "0755", "--dir", "/etc"]
    for name in (*_ETC, *(("resolv.conf", "pip.conf") if network else ())):
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return argv


def _binds(mounts: list[Path], writable: list[Path]) -> list[str]:
    """Each folder at its own path, its parents made 0755 (bubblewrap would make them 0700, which the unprivileged
    uid could not pass)."""
    argv: list[str] = []
    made: set[Path] = {Path("/"), Path("/tmp"), Path(WORK)}
    for path, how in [*((p.resolve(), "--ro-bind") for p in mounts if p.exists()),
                      *((p.resolve(), "--bind") for p in writable)]:
        for parent in reversed(path.parents):
            if parent not in made and not parent.is_relative_to("/usr"):
                argv += ["--perms", "0755", "--dir", str(parent)]
                made.add(parent)
        argv += [how, str(path), str(path)]
    return argv


def _free_uid() -> int:
    """A uid of RUN_UIDS that no process has now (this process's runs, then another's, take the next ones)."""
    for _ in range(64):
        uid = RUN_UIDS[(os.getpid() * 1_024 + next(_RUNS)) % len(RUN_UIDS)]
        if _processes_of(uid) == 0:
            return uid
    return uid


def _processes_of(uid: int) -> int:
    """How many processes (threads count too, as for RLIMIT_NPROC) `uid` has now."""
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += sum(1 for _ in (entry / "task").iterdir())
            except OSError:
                continue
    return count


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL bubblewrap's process group; its pid namespace dies with its first process, taking every process the
    command started (also those in a session of their own)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class _CappedReader(threading.Thread):
    """Reads a pipe to its end, keeping the first and the last half of `cap` bytes: a command that prints without
    end costs no memory, and the end of the output (where a test runner puts its summary) is kept."""

    def __init__(self, pipe, cap: int) -> None:
        super().__init__(daemon=True)
        self.pipe, self.half = pipe, max(cap // 2, 1)
        self.head, self.tail, self.total = bytearray(), bytearray(), 0

    def run(self) -> None:
        while chunk := self.pipe.read1(65536):
            self.total += len(chunk)
            room = self.half - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail += chunk
                if len(self.tail) > self.half:
                    del self.tail[:len(self.tail) - self.half]
        self.pipe.close()

    def text(self) -> tuple[str, bool]:
        cut = self.total > len(self.head) + len(self.tail)
        head, tail = self.head.decode("utf-8", "replace"), self.tail.decode("utf-8", "replace")
        if cut:
            return f"{head}\n[... {self.total - len(self.head) - len(self.tail):,} bytes of output cut ...]\n{tail}", True
        return head + tail, False
