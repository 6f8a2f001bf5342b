"""A run's cgroup is found the way the kernel lays hierarchies out (cgroup v2, v1's memory and pids, neither), from
/proc/self/mountinfo and /proc/self/cgroup as this machine and others write them; a fake root holds their files."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from nightwatch.verify import cgroup

V1_MOUNTS = """31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
V1_OWN = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/1ff4\n0::/\n"
V2_MOUNTS = "28 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"


CONTROL_FILES = ("cgroup.procs", "memory.max", "memory.swap.max", "memory.limit_in_bytes", "memory.memsw.limit_in_bytes",
                 "pids.max")


@pytest.fixture(autouse=True)
def fake_kernel(monkeypatch):
    """A folder made under a fake hierarchy gets the control files the kernel would make, and is removed with them while
    no process is listed in it, as the kernel does (a real cgroupfs: tests/verify/test_sandbox.py)."""
    def new_group(folder: Path) -> None:
        folder.mkdir()
        for name in CONTROL_FILES:
            (folder / name).write_text("")

    def drop_group(folder: Path) -> None:
        if (folder / "cgroup.procs").exists() and (folder / "cgroup.procs").read_text().strip():
            raise OSError(16, "Device or resource busy")
        for name in CONTROL_FILES + ("cgroup.kill",):
            (folder / name).unlink(missing_ok=True)
        folder.rmdir()

    monkeypatch.setattr(cgroup, "_new_group", new_group)
    monkeypatch.setattr(cgroup, "_drop_group", drop_group)


def _root(tmp_path: Path, mounts: str, own: str) -> Path:
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/mountinfo").write_text(mounts)
    (tmp_path / "proc/self/cgroup").write_text(own)
    return tmp_path


def test_cgroup_v1_makes_a_memory_and_a_pids_group_below_this_process_s_own(tmp_path):
    root = _root(tmp_path, V1_MOUNTS, V1_OWN)
    (root / "sys/fs/cgroup/memory/process_api/1ff4").mkdir(parents=True)
    (root / "sys/fs/cgroup/pids").mkdir(parents=True)
    (root / "sys/fs/cgroup/unified").mkdir(parents=True)  # a v2 mount with no controllers delegated: not used
    group, why = cgroup.make(300 << 20, 72, root=root)
    assert why == "" and group is not None and group.kind == "cgroup v1"
    assert group.memory.parent == root / "sys/fs/cgroup/memory/process_api/1ff4" and group.pids.parent == root / "sys/fs/cgroup/pids"
    assert (group.memory / "memory.limit_in_bytes").read_text() == f"{300 << 20}\n"
    assert (group.memory / "memory.memsw.limit_in_bytes").read_text() == f"{300 << 20}\n"
    assert (group.pids / "pids.max").read_text() == "72\n"
    argv = group.enter(["prlimit", "--", "bwrap"])
    assert argv[:2] == ["/bin/sh", "-c"] and argv[3] == cgroup.REFUSED
    assert argv[4:] == [str(group.memory / "cgroup.procs"), str(group.pids / "cgroup.procs"), "--", "prlimit", "--", "bwrap"]
    (group.memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    assert group.oom_killed()


def test_cgroup_v2_is_used_where_memory_and_pids_are_delegated_to_this_process_s_group(tmp_path):
    root = _root(tmp_path, V2_MOUNTS, "0::/user.slice/nightwatch.service\n")
    parent = root / "sys/fs/cgroup/user.slice/nightwatch.service"
    parent.mkdir(parents=True)
    (parent / "cgroup.subtree_control").write_text("cpu memory pids\n")
    group, why = cgroup.make(300 << 20, 72, root=root)
    assert group is not None and group.kind == "cgroup v2" and group.memory == group.pids and group.memory.parent == parent
    assert (group.memory / "memory.max").read_text() == f"{300 << 20}\n" and (group.memory / "pids.max").read_text() == "72\n"
    assert group.enter(["true"])[4:6] == [str(group.memory / "cgroup.procs"), "--"]
    assert not group.oom_killed()
    (group.memory / "memory.events").write_text("low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\n")
    assert group.oom_killed()


def test_no_delegated_controllers_and_no_v1_hierarchies_make_no_group_and_say_why(tmp_path):
    root = _root(tmp_path, V2_MOUNTS, "0::/user.slice\n")
    (root / "sys/fs/cgroup/user.slice").mkdir(parents=True)
    (root / "sys/fs/cgroup/user.slice/cgroup.subtree_control").write_text("cpu\n")
    group, why = cgroup.make(300 << 20, 72, root=root)
    assert group is None and why == "no cgroup with the memory and pids controllers is available to this process"


def test_a_group_that_cannot_be_made_is_left_behind_by_nothing_and_says_why(tmp_path):
    root = _root(tmp_path, V1_MOUNTS, V1_OWN)  # the hierarchies' folders do not exist: mkdir fails
    group, why = cgroup.make(300 << 20, 72, root=root)
    assert group is None and why.startswith("a cgroup could not be made")
    assert not list(tmp_path.rglob("nightwatch-run-*"))


def test_a_hierarchy_mounted_from_below_its_root_is_not_read_as_if_it_were_the_root(tmp_path):
    mounts = V1_MOUNTS.replace("0:32 / /sys/fs/cgroup/memory", "0:32 /process_api/1ff4 /sys/fs/cgroup/memory")
    root = _root(tmp_path, mounts, V1_OWN)
    group, why = cgroup.make(300 << 20, 72, root=root)
    assert group is None and why.startswith("no cgroup")


def test_groups_a_process_that_is_gone_left_behind_are_removed_and_a_living_ones_kept(tmp_path):
    root = _root(tmp_path, V2_MOUNTS, "0::/svc\n")
    parent = root / "sys/fs/cgroup/svc"
    parent.mkdir(parents=True)
    (parent / "cgroup.subtree_control").write_text("memory pids\n")
    ended = subprocess.Popen(["true"])
    ended.wait()  # a pid that has ended (waited for through its Popen, which another thread's Popen may reap too)
    dead_pid = ended.pid
    (parent / f"nightwatch-run-{dead_pid}-3").mkdir()
    (parent / f"nightwatch-run-{os.getpid()}-99").mkdir()  # this process's, still running
    (parent / f"nightwatch-run-{dead_pid}-4").mkdir()  # made a moment ago: its maker may live in another pid namespace
    long_ago = time.time() - 2 * cgroup.SWEEP_AFTER_S
    for name in (f"nightwatch-run-{dead_pid}-3", f"nightwatch-run-{os.getpid()}-99"):
        os.utime(parent / name, (long_ago, long_ago))
    group, _ = cgroup.make(300 << 20, 72, root=root)
    assert group is not None
    assert not (parent / f"nightwatch-run-{dead_pid}-3").exists()
    assert (parent / f"nightwatch-run-{os.getpid()}-99").exists()
    assert (parent / f"nightwatch-run-{dead_pid}-4").exists()


def test_a_half_made_group_removes_only_the_folder_it_made(tmp_path):
    root = _root(tmp_path, V1_MOUNTS, V1_OWN)
    memory = root / "sys/fs/cgroup/memory/process_api/1ff4"
    memory.mkdir(parents=True)  # the pids hierarchy's folder is missing: the second mkdir fails
    other = memory / "nightwatch-run-1-0-abcd"  # another run's group, alive
    other.mkdir()
    (other / "cgroup.procs").write_text("4242\n")
    group, why = cgroup.make(300 << 20, 72, root=root)
    assert group is None and why.startswith("a cgroup could not be made")
    assert [p.name for p in memory.iterdir()] == [other.name] and (other / "cgroup.procs").read_text() == "4242\n"


def test_two_groups_made_at_once_never_share_a_name(tmp_path):
    root = _root(tmp_path, V2_MOUNTS, "0::/svc\n")
    parent = root / "sys/fs/cgroup/svc"
    parent.mkdir(parents=True)
    (parent / "cgroup.subtree_control").write_text("memory pids\n")
    names = {cgroup.make(1 << 20, 8, root=root)[0].memory.name for _ in range(20)}
    assert len(names) == 20 and all(n.startswith("nightwatch-run-") for n in names)


def test_a_cgroup_mount_hidden_by_a_later_mount_at_the_same_point_is_not_used(tmp_path):
    hidden = V1_MOUNTS + "52 39 0:50 / /sys/fs/cgroup/pids rw,relatime - tmpfs tmpfs rw\n"
    root = _root(tmp_path, hidden, V1_OWN)
    (root / "sys/fs/cgroup/memory/process_api/1ff4").mkdir(parents=True)
    (root / "sys/fs/cgroup/pids").mkdir(parents=True)
    group, why = cgroup.make(300 << 20, 72, root=root)
    assert group is None and why.startswith("no cgroup")


def test_a_group_was_entered_when_the_kernel_counted_memory_or_faults_in_it(tmp_path):
    folder = tmp_path / "g"
    folder.mkdir()
    group = cgroup.RunGroup(1, folder, folder)
    assert not group.entered()
    (folder / "memory.max_usage_in_bytes").write_text("0\n")
    (folder / "memory.stat").write_text("cache 0\ntotal_pgfault 0\n")
    assert not group.entered()
    (folder / "memory.stat").write_text("cache 0\ntotal_pgfault 311\n")
    assert group.entered()
    (folder / "memory.stat").write_text("")
    (folder / "memory.max_usage_in_bytes").write_text("1204224\n")
    assert group.entered()


def test_a_folder_that_is_not_a_cgroup_gets_no_control_file_and_no_group(tmp_path, monkeypatch):
    monkeypatch.setattr(cgroup, "_new_group", lambda folder: folder.mkdir())  # a plain folder: no kernel made its files
    root = _root(tmp_path, V2_MOUNTS, "0::/svc\n")
    parent = root / "sys/fs/cgroup/svc"
    parent.mkdir(parents=True)
    (parent / "cgroup.subtree_control").write_text("memory pids\n")
    group, why = cgroup.make(300 << 20, 72, root=root)
    assert group is None and why.startswith("a cgroup could not be made")
    assert not list(parent.rglob("memory.max")) and not list(parent.glob("nightwatch-run-*"))


def _sleeper() -> subprocess.Popen:
    return subprocess.Popen(["sleep", "30"])


def test_a_process_the_group_no_longer_lists_is_never_signalled(tmp_path, monkeypatch):
    """Its pid may belong to another process by the time of the kill: only a pid the group still lists, held by a
    pidfd from before that second look, is killed."""
    folder = tmp_path / "g"
    cgroup._new_group(folder)
    kept, killed = _sleeper(), _sleeper()
    try:
        (folder / "cgroup.procs").write_text(f"{kept.pid}\n{killed.pid}\n")
        reads = iter([f"{kept.pid}\n{killed.pid}\n", f"{killed.pid}\n", f"{killed.pid}\n"])
        monkeypatch.setattr(cgroup, "_read", lambda path: next(reads) if path.name == "cgroup.procs" else "")
        cgroup.RunGroup(1, folder, folder)._kill_members()
        assert killed.wait(timeout=10) == -9
        assert kept.poll() is None
    finally:
        for process in (kept, killed):
            process.kill()
            process.wait()


def test_cgroup_v2_ends_the_group_with_cgroup_kill_where_the_kernel_has_it(tmp_path):
    folder = tmp_path / "g"
    cgroup._new_group(folder)
    (folder / "cgroup.kill").write_text("")
    listed = _sleeper()
    try:
        (folder / "cgroup.procs").write_text(f"{listed.pid}\n")
        cgroup.RunGroup(2, folder, folder)._kill_members()
        assert (folder / "cgroup.kill").read_text() == "1\n"
        assert listed.poll() is None  # the kernel kills (the fake one here does not): no signal by pid was sent
        (folder / "cgroup.kill").unlink()
        cgroup.RunGroup(2, folder, folder)._kill_members()  # an older kernel: each listed process, by its pidfd
        assert listed.wait(timeout=10) == -9
    finally:
        listed.kill()
        listed.wait()
