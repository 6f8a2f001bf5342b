"""The sandbox that runs regression tests, through the real bubblewrap: each thing a test written by a model that
read a hostile error message might try is contained, nothing outside the tree changes, and the run returns."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import socket
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from nightwatch.redact import REDACTED
from nightwatch.verify import sandbox

pytestmark = [pytest.mark.skipif(
    sandbox.unavailable_reason() is not None and not os.environ.get("CI"),
    reason=f"{sandbox.unavailable_reason()} (CI installs it: .ci/run)",
), pytest.mark.slow]  # every test starts processes in the sandbox

PYTHON_PREFIX = Path(sys.base_prefix).resolve()
PYTHON = str(PYTHON_PREFIX / "bin" / "python3")
# wall_s is a hang guard (these commands take well under a second); the tests of the wall clock set their own.
SHORT = sandbox.Limits(wall_s=120.0, cpu_s=60, memory_mb=512, file_mb=8, processes=32, work_mb=32, tmp_mb=16)


def run_python(tmp_path: Path, code: str, limits: sandbox.Limits = SHORT, **kw) -> sandbox.SandboxRun:
    tree = tmp_path / "tree"
    tree.mkdir(exist_ok=True)
    (tree / "attack.py").write_text(textwrap.dedent(code))
    (tree / "app.py").write_text("VALUE = 1\n")
    return sandbox.run([PYTHON, "attack.py"], tree, mounts=[PYTHON_PREFIX], limits=limits, **kw)


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        h.update(str(path.relative_to(folder)).encode())
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


def test_a_command_runs_in_a_copy_of_the_tree_and_its_output_comes_back(tmp_path):
    run = run_python(tmp_path, """
        import os, app
        print("cwd", os.getcwd(), "value", app.VALUE, "uid", os.getuid() if os.getuid() else "root")
        open("made-here.txt", "w").write("only in the copy")
    """)
    assert run.exit_code == 0, run.output
    assert "cwd /work value 1" in run.output
    assert "uid root" not in run.output  # as root, the command runs as an unprivileged uid
    assert not (tmp_path / "tree" / "made-here.txt").exists()


def test_reading_ssh_keys_the_api_key_and_nightwatch_home_finds_nothing(tmp_path, monkeypatch):
    home = tmp_path / "nightwatch-home"
    home.mkdir()
    (home / "knowledge.md").write_text("private analysis")
    user_home = tmp_path / "user"
    (user_home / ".ssh").mkdir(parents=True)
    (user_home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n")
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.setenv("NIGHTWATCH_HOME", str(home))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-" + "k" * 40)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_" + "t" * 36)
    run = run_python(tmp_path, f"""
        import os, glob
        for path in [{str(user_home / '.ssh' / 'id_ed25519')!r}, {str(home / 'knowledge.md')!r},
                     os.path.expanduser("~/.ssh/id_ed25519"), "/root/.ssh/id_rsa", "/proc/1/environ", "/etc/shadow",
                     {str(Path.cwd() / 'pyproject.toml')!r}]:
            try:
                print("READ", path, open(path, errors="replace").read()[:80])
            except OSError as exc:
                print("DENIED", path, type(exc).__name__)
        print("ENV", sorted(os.environ))
        print("PROCS", sorted(p for p in os.listdir("/proc") if p.isdigit()))
    """)
    assert run.exit_code == 0, run.output
    assert "READ" not in run.output, run.output
    assert "ANTHROPIC" not in run.output and "GITHUB" not in run.output and "NIGHTWATCH" not in run.output
    assert "sk-ant" not in run.output and "private analysis" not in run.output
    procs = run.output.split("PROCS", 1)[1]
    assert procs.count("'") <= 8, procs  # its own pid namespace: a handful of processes, not the machine's


def test_connecting_out_fails_even_to_this_machines_loopback(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        run = run_python(tmp_path, f"""
            import socket
            for host, port in [("127.0.0.1", {port}), ("1.1.1.1", 443), ("pypi.org", 443)]:
                try:
                    socket.create_connection((host, port), timeout=3)
                    print("CONNECTED", host)
                except OSError as exc:
                    print("REFUSED", host, type(exc).__name__)
        """)
    finally:
        server.close()
    assert run.exit_code == 0, run.output
    assert "CONNECTED" not in run.output
    assert run.output.count("REFUSED") == 3


def test_a_fork_bomb_is_stopped_and_leaves_no_process(tmp_path):
    marker = f"forkbomb-{os.getpid()}-{time.monotonic_ns()}"
    started = time.monotonic()
    run = run_python(tmp_path, f"""
        import os, sys
        sys.argv[0] = {marker!r}
        while True:
            try:
                os.fork()
            except OSError:
                pass
    """, limits=sandbox.Limits(wall_s=2.0, cpu_s=20, memory_mb=256, processes=16, work_mb=8, tmp_mb=8))  # the bomb spins
    assert run.timed_out, run.outcome  # on every core it may have until the wall clock stops it: 2 s of both, not more
    assert time.monotonic() - started < 60  # a hang guard: the wall clock is 2 s
    assert _all_gone(lambda p: _cmdline(p).startswith(PYTHON) and "attack.py" in _cmdline(p)) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="as another user the runs share that user's process limit by design")
def test_a_fork_bomb_does_not_starve_a_run_beside_it(tmp_path):
    bomb_tree, other_tree = tmp_path / "bomb", tmp_path / "other"
    limits = sandbox.Limits(wall_s=8.0, cpu_s=20, memory_mb=256, processes=16, work_mb=8, tmp_mb=8)  # both alike
    bombing = threading.Thread(target=run_python, args=(bomb_tree, "import os\nwhile True:\n    try:\n        os.fork()\n"
                                                                   "    except OSError:\n        pass\n"),
                               kwargs={"limits": limits})
    bomb_tree.mkdir()
    other_tree.mkdir()
    bombing.start()
    try:
        time.sleep(2)  # the bomb is at its limit
        run = run_python(other_tree, "import subprocess\nfor _ in range(4):\n    subprocess.run(['true'], check=True)\n"
                                     "print('four processes started')\n", limits=dataclasses.replace(limits, wall_s=120.0))
    finally:
        bombing.join(timeout=120)
    assert run.exit_code == 0 and "four processes started" in run.output, run.output


def test_filling_the_disk_stops_at_the_sandbox_limits_and_writes_nothing_outside(tmp_path):
    before = shutil.disk_usage(tmp_path).free
    run = run_python(tmp_path, """
        import os
        written = 0
        for target in ["/work/fill", "/tmp/fill"] + [f"/work/many-{i}" for i in range(20)]:
            try:
                with open(target, "wb") as f:
                    for _ in range(64):
                        f.write(b"x" * (1 << 20)); written += 1 << 20
            except OSError as exc:
                pass
        print("WROTE", written >> 20, "MiB")
    """)
    assert run.exit_code in (0, -25, 153), run.output  # SIGXFSZ ends it, or the writes fail with ENOSPC/EFBIG
    assert shutil.disk_usage(tmp_path).free > before - 64 * (1 << 20)
    assert sorted(p.name for p in (tmp_path / "tree").iterdir()) == ["app.py", "attack.py"]


def test_writing_outside_the_copy_changes_nothing(tmp_path):
    venv_like = tmp_path / "env"
    (venv_like / "lib").mkdir(parents=True)
    (venv_like / "lib" / "site.py").write_text("# the environment\n")
    outside = tmp_path / "outside.txt"
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "keep.py").write_text("KEEP = True\n")
    (tree / "attack.py").write_text(textwrap.dedent(f"""
        import os
        for path in ["/src/keep.py", {str(tree / 'keep.py')!r}, {str(venv_like / 'lib' / 'site.py')!r},
                     {str(outside)!r}, "/usr/lib/nightwatch-was-here", "/etc/passwd", "/proc/sys/kernel/hostname"]:
            try:
                with open(path, "a") as f:
                    f.write("pwned")
                print("WROTE", path)
            except OSError as exc:
                print("DENIED", path, type(exc).__name__)
    """))
    before = (digest(tree), digest(venv_like))
    run = sandbox.run([PYTHON, "attack.py"], tree, mounts=[PYTHON_PREFIX, venv_like], limits=SHORT)
    assert run.exit_code == 0, run.output
    assert "WROTE" not in run.output, run.output
    assert (digest(tree), digest(venv_like)) == before
    assert not outside.exists() and not Path("/usr/lib/nightwatch-was-here").exists()


def test_sleeping_past_the_limit_is_killed_with_everything_it_started(tmp_path):
    started = time.monotonic()
    run = run_python(tmp_path, """
        import os, subprocess, time
        subprocess.Popen(["sleep", "300"], start_new_session=True)  # escapes the process group
        print("sleeping", flush=True)
        time.sleep(300)
    """, limits=sandbox.Limits(wall_s=2.0))
    elapsed = time.monotonic() - started
    assert run.timed_out and run.exit_code is None
    assert "killed at the 2 s limit" in run.outcome
    assert "sleeping" in run.output
    assert elapsed < 30
    assert _all_gone(lambda p: _cmdline(p) == "sleep 300") == []


def test_a_printed_secret_is_redacted_and_endless_output_is_capped(tmp_path):
    known = "hunter2-" + "x" * 24
    run = run_python(tmp_path, f"""
        import sys
        print("token ghp_{'a' * 36} and AKIAIOSFODNN7EXAMPLE and {known}")
        for _ in range(200_000):
            sys.stdout.write("spam " * 20 + "\\n")
        print("THE END")
    """, limits=sandbox.Limits(wall_s=120.0, output_bytes=10_000), secrets=[known])
    assert run.exit_code == 0
    assert "ghp_" not in run.output and "AKIAIOSFODNN7EXAMPLE" not in run.output and known not in run.output
    assert REDACTED in run.output
    assert run.output_cut and "bytes of output cut" in run.output and run.output.rstrip().endswith("THE END")
    assert len(run.output) < 12_000


def test_without_bubblewrap_nothing_runs_and_the_result_says_why(tmp_path, monkeypatch):
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "bwrap" else real_which(name, *a, **k))
    (tmp_path / "tree").mkdir()
    run = sandbox.run(["touch", str(tmp_path / "ran")], tmp_path / "tree")
    assert run.not_run and run.not_run.startswith("bubblewrap is not installed")
    assert run.outcome.startswith("not run: bubblewrap is not installed")
    assert not (tmp_path / "ran").exists()


def _all_gone(matches, within_s: float = 30.0) -> list[Path]:
    """The sandboxed processes `matches` picks that are still alive after `within_s` (the kernel tears a killed pid
    namespace down at its own pace on a loaded core): a hang guard, polled, not a speed test."""
    deadline = time.monotonic() + within_s
    while True:
        left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and matches(p) and _in_other_pid_namespace(p)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _in_other_pid_namespace(proc: Path) -> bool:
    try:
        return os.readlink(proc / "ns" / "pid") != os.readlink("/proc/self/ns/pid")
    except OSError:
        return False


def _cgroups_here() -> str | None:
    group, why = sandbox.cgroup.make(64 * 1024 * 1024, 8)
    if group is not None:
        group.remove()
        return None
    return why


@pytest.mark.skipif(_cgroups_here() is not None, reason=f"no cgroup for a run on this machine: {_cgroups_here()}")
def test_many_processes_each_within_its_own_limit_are_held_to_the_runs_memory_together(tmp_path):
    """Each process stays under its address-space rlimit; together they pass the run's memory, and the kernel stops
    them there: the run says so, and leaves no group behind."""
    limits = dataclasses.replace(SHORT, memory_mb=256, work_mb=8, tmp_mb=8)  # 272 MB for all of them together
    run = run_python(tmp_path, """
        import os, sys, time
        children = []
        for _ in range(6):
            pid = os.fork()
            if pid == 0:
                held = b"x" * (120 << 20)  # 120 MB each, written: resident, within the process's own 256 MB
                time.sleep(3)
                os._exit(0)
            children.append(pid)
        died = [os.waitpid(pid, 0)[1] for pid in children]
        print("ALL HELD" if not any(died) else f"DIED {died}")
        sys.exit(1 if any(died) else 0)
    """, limits=limits)
    assert "ALL HELD" not in run.output, run.output
    assert run.memory_killed and run.exit_code == 1, run.output
    assert run.outcome == "failed (exit 1); a process of the run was killed at its memory limit (272 MB for all its processes)"
    assert run.grouped in ("cgroup v1", "cgroup v2")
    mine = f"nightwatch-run-{os.getpid()}-"
    assert not [p for p in Path("/sys/fs/cgroup").rglob(f"{mine}*") if p.is_dir()]


def test_without_a_cgroup_a_run_goes_on_with_its_per_process_limits_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox.cgroup, "make", lambda *a, **k: (None, "no cgroup here"))
    run = run_python(tmp_path, "print('ran')")
    assert run.exit_code == 0 and "ran" in run.output, run.output
    assert run.grouped == "per process only: no cgroup here" and not run.memory_killed


def test_a_run_that_cannot_enter_its_cgroup_does_not_run_at_all(tmp_path, monkeypatch):
    folder = tmp_path / "group"
    (folder / "cgroup.procs").mkdir(parents=True)  # a folder: the run's first process cannot write its pid there
    monkeypatch.setattr(sandbox.cgroup, "make", lambda *a, **k: (sandbox.cgroup.RunGroup(2, folder, folder), ""))
    run = run_python(tmp_path, "open('/tmp/ran', 'w').write('x')\nprint('ran')")
    assert run.not_run == "its cgroup could not be entered" and run.outcome == "not run: its cgroup could not be entered"
    assert "ran" not in run.output


@pytest.mark.skipif(_cgroups_here() is not None, reason=f"no cgroup for a run on this machine: {_cgroups_here()}")
def test_a_test_that_prints_the_refusal_and_exits_125_has_still_run(tmp_path):
    """Whether the run entered its cgroup is the kernel's count, not the output's: a test cannot pass itself off as
    never run (and hide its output) by printing what the sandbox's first process says when it cannot get in."""
    run = run_python(tmp_path, f"import sys\nsys.stderr.write({sandbox.cgroup.REFUSED!r} + '\\n')\nsys.exit(125)\n")
    assert run.not_run is None and run.exit_code == 125 and run.outcome == "failed (exit 125)", run.outcome
