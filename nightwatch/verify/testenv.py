"""The application's test environment and test command.

NIGHTWATCH_TEST_SETUP (for example `uv sync --frozen` or `pip install -r requirements.txt`) runs once in the
sandbox, with the network but none of NightWatch's variables, into a virtual environment under
`$NIGHTWATCH_HOME/test-envs/<key>`: the key is the set-up command, the interpreter and the content of the lock and
requirement files, so the environment is made again only when one of them changes and later nights reuse it. A set-up
that fails says why (its last lines and the Debian package a missing build tool comes from: setup_failure.py), keeps
its whole output in `test-envs/<key>/setup.log`, and is not tried again for the same key until the set-up command or
a lock file changes, or `nightwatch check --test-env` asks for it.
NIGHTWATCH_TEST_ENV names an environment made elsewhere (a CI image's virtualenv) instead.
NIGHTWATCH_TEST_COMMAND is detected where unset: pytest where the project configures it, `manage.py test` for
Django, else unittest; `bundle exec rspec` or `bin/rails test` for Ruby where a Ruby toolchain is installed.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from nightwatch import clock
from nightwatch.redact import clean
from nightwatch.verify import sandbox
from nightwatch.verify.setup_failure import explain
from nightwatch.verify.tree import disposable_tree, open_up

LOCK_FILES = ("uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock", "Pipfile", "pyproject.toml", "setup.cfg", "setup.py",
              "Gemfile", "Gemfile.lock")
_REQUIREMENTS = re.compile(r"^(?:requirements[\w.-]*\.(?:txt|in)|requirements/[\w.-]+\.(?:txt|in))$")
SETUP_LIMITS = sandbox.Limits(wall_s=1200.0, cpu_s=1200, memory_mb=4096, file_mb=1024, processes=256, work_mb=2048,
                              tmp_mb=2048, output_bytes=32_000)
_PASS_THROUGH = re.compile(r"^(?:PIP_\w+|UV_INDEX\w*|UV_EXTRA_INDEX_URL|UV_DEFAULT_INDEX|UV_FIND_LINKS|"
                           r"UV_NATIVE_TLS|SSL_CERT_FILE|REQUESTS_CA_BUNDLE|(?:HTTPS?|NO|ALL)_PROXY|(?:https?|no|all)_proxy)$")


@dataclass(frozen=True)
class TestCommand:
    """How the application's tests run, and how one test of them runs."""

    __test__ = False  # not a pytest class

    kind: str  # pytest | django | unittest | rspec | rails | custom
    argv: tuple[str, ...]
    detected: bool

    @property
    def shown(self) -> str:
        return shlex.join(self.argv)

    @property
    def ruby(self) -> bool:
        return self.kind in {"rspec", "rails"}

    def for_tests(self, tests: list[str]) -> list[str]:
        """The command running only `tests` (paths, or pytest node ids `path::name`)."""
        if self.kind == "pytest":
            return [*self.argv, "-p", "no:cacheprovider", "--tb=short", "-q", *tests]
        if self.kind in {"django", "unittest"}:
            return [*self.argv, *(_dotted(t) for t in tests)]
        return [*self.argv, *tests]


@dataclass
class TestEnvironment:
    """Where the tests run: the folders the sandbox mounts read-only and the variables it sets. `ready` False says
    why in `detail`, and nothing runs."""

    __test__ = False  # not a pytest class

    ready: bool
    detail: str
    mounts: list[Path] = field(default_factory=list)
    variables: dict[str, str] = field(default_factory=dict)
    setup_seconds: float = 0.0
    reused: bool = False
    output: str = ""  # a failed set-up's last lines (redacted), or a made one's output
    log: Path | None = None  # a failed set-up's whole output


def test_command(root: Path, configured: str | None = None) -> TestCommand | None:
    """NIGHTWATCH_TEST_COMMAND, else the command the project's files imply, else None."""
    if configured and configured.strip():
        argv = tuple(shlex.split(configured))
        return TestCommand(kind=_kind_of(argv), argv=argv, detected=False)
    if (root / "Gemfile").is_file() and not _python_project(root):
        if (root / "spec").is_dir():
            return TestCommand("rspec", ("bundle", "exec", "rspec"), True)
        if (root / "test").is_dir():
            return TestCommand("rails", ("bin/rails", "test"), True)
        return None
    if _pytest_configured(root):
        return TestCommand("pytest", ("python", "-m", "pytest"), True)
    if (root / "manage.py").is_file():
        return TestCommand("django", ("python", "manage.py", "test"), True)
    if _python_project(root):
        return TestCommand("unittest", ("python", "-m", "unittest"), True)
    return None


def setup_command(root: Path, configured: str | None = None) -> str | None:
    """NIGHTWATCH_TEST_SETUP, else what the project's lock or requirement files imply."""
    if configured and configured.strip():
        return configured.strip()
    if (root / "uv.lock").is_file() and shutil.which("uv"):
        return "uv sync --frozen"
    requirements = [r for r in ("requirements.txt", "requirements-dev.txt", "requirements-test.txt",
                                "requirements/test.txt", "requirements/dev.txt") if (root / r).is_file()]
    if requirements:
        return "python -m pip install " + " ".join(f"-r {r}" for r in requirements) + " pytest"
    if (root / "pyproject.toml").is_file() or (root / "setup.py").is_file():
        return "python -m pip install -e . pytest"
    return None


def environment_key(root: Path, files: list[str], setup: str, python: str) -> str:
    """What the environment depends on: the set-up command, the interpreter, the lock and requirement files."""
    digest = hashlib.sha256(f"{setup}\0{python}\0{_python_version(python)}".encode())
    for rel in sorted(f for f in files if f in LOCK_FILES or _REQUIREMENTS.match(f)):
        digest.update(f"\0{rel}\0".encode())
        try:
            digest.update((root / rel).read_bytes())
        except OSError:
            digest.update(b"<unreadable>")
    return digest.hexdigest()[:16]


def existing_environment(path: Path, home: Path) -> TestEnvironment:
    """NIGHTWATCH_TEST_ENV: a virtual environment made elsewhere, mounted read-only (`home`: NightWatch's, never
    mounted)."""
    path = path.expanduser()
    python = path / "bin" / "python"
    if not python.exists():
        return TestEnvironment(False, f"NIGHTWATCH_TEST_ENV {path} has no bin/python")
    return TestEnvironment(True, f"the environment at {path} (NIGHTWATCH_TEST_ENV)", mounts=[path, *_interpreter_of(path, home)],
                           variables=_venv_variables(path), reused=True)


def prepare_environment(root: Path, files: list[str], home: Path, setup: str | None, python: str | None = None,
                        limits: sandbox.Limits = SETUP_LIMITS, secrets: list[str] = (), retry: bool = False) -> TestEnvironment:  # type: ignore[assignment]
    """The environment for the tree at `root` (its tracked `files`), made with `setup` in the sandbox or reused; a set-up
    that failed for these files is not run again (its failure is answered) unless `retry`."""
    if not setup:
        return TestEnvironment(False, "no NIGHTWATCH_TEST_SETUP and no lock or requirements file to make one from")
    python = python or _base_python()
    key = environment_key(root, files, setup, python)
    folder = home / "test-envs" / key
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two investigations of one night make it once
        started = time.monotonic()
        venv, marker, failed_marker = folder / "venv", folder / "ready.json", folder / FAILED
        if failed_marker.is_file() and not retry:
            return _failed_before(folder, setup)
        if marker.is_file() and (venv / "bin" / "python").exists():
            made = json.loads(marker.read_text())
            return TestEnvironment(True, f"reused test environment {key} (made {made.get('made_at', '?')} by `{setup}`)",
                                   mounts=[venv, *_interpreter_of(venv, home)], variables=_venv_variables(venv),
                                   setup_seconds=round(time.monotonic() - started, 3), reused=True)
        failed_marker.unlink(missing_ok=True)
        failed = _make(root, files, setup, python, venv, home, limits, secrets)
        seconds = round(time.monotonic() - started, 1)
        if isinstance(failed, TestEnvironment):
            failed.setup_seconds = seconds
            return _record_failure(folder, failed)
        marker.write_text(json.dumps({"key": key, "setup": setup, "python": python, "seconds": seconds,
                                      "made_at": clock.now().isoformat(timespec="seconds")}))
        return TestEnvironment(True, f"made test environment {key} with `{setup}` in {seconds:g} s",
                               mounts=[venv, *_interpreter_of(venv, home)], variables=_venv_variables(venv),
                               setup_seconds=seconds, output=failed)


FAILED = "failed.json"
SETUP_LOG = "setup.log"


def _record_failure(folder: Path, failed: TestEnvironment) -> TestEnvironment:
    """A failed set-up, said as a team can act on it, its whole output in setup.log, remembered for the key."""
    why = explain(failed.output)
    log = folder / SETUP_LOG
    log.write_text(clean(failed.output, limit=2_000_000)[0], encoding="utf-8")
    failed.detail = f"{failed.detail}: {why.hint}" if why.hint else failed.detail
    failed.output, failed.log = "\n".join(why.lines), log
    (folder / FAILED).write_text(json.dumps({"detail": failed.detail, "lines": why.lines,
                                             "at": clock.now().isoformat(timespec="seconds")}), encoding="utf-8")
    return failed


def _failed_before(folder: Path, setup: str) -> TestEnvironment:
    """The failure recorded for these files and this set-up: not run again until one of them changes."""
    try:
        record = json.loads((folder / FAILED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = {}
    detail = record.get("detail") or f"`{setup}` failed"
    return TestEnvironment(False, f"{detail} (on {record.get('at', 'an earlier night')}; not tried again until the set-up "
                                  f"command or a lock file changes, or `nightwatch check --test-env`)",
                           output="\n".join(record.get("lines") or []), log=folder / SETUP_LOG)


def _make(root: Path, files: list[str], setup: str, python: str, venv: Path, home: Path, limits: sandbox.Limits,
          secrets: list[str]) -> TestEnvironment | str:
    """A new virtual environment, then `setup` in the sandbox with the network and write access to it alone: the
    set-up's output, or a TestEnvironment saying why it failed (and nothing half made is left)."""
    shutil.rmtree(venv, ignore_errors=True)
    made_venv = subprocess.run([python, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=300)
    if made_venv.returncode != 0:
        return TestEnvironment(False, f"{python} -m venv failed: {made_venv.stderr.strip()[-300:]}")
    open_up(venv)
    cache = home / "test-envs" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    tool_dirs = _tool_dirs(setup, home)
    variables = {**_venv_variables(venv, extra_path=tool_dirs), "UV_PROJECT_ENVIRONMENT": str(venv),
                 "UV_PYTHON": str(venv / "bin" / "python"), "UV_CACHE_DIR": str(cache / "uv"),
                 "PIP_CACHE_DIR": str(cache / "pip"), "UV_LINK_MODE": "copy",
                 **{k: v for k, v in os.environ.items() if _PASS_THROUGH.match(k)}}
    if os.geteuid() == 0:
        os.chmod(venv.parent, 0o755)
        for path in (venv, cache):
            _chown_tree(path, sandbox.SANDBOX_UID)
    with disposable_tree(root, files) as tree:
        run = sandbox.run(["/bin/sh", "-c", setup], tree, mounts=[*_interpreter_of(venv, home), *tool_dirs],
                          writable=[venv, cache], env=variables, limits=limits, network=True, secrets=list(secrets))
    if run.not_run or run.exit_code != 0:
        shutil.rmtree(venv, ignore_errors=True)
        return TestEnvironment(False, f"`{setup}` {run.outcome}", output=run.output)
    return run.output


def _venv_variables(venv: Path, extra_path: list[Path] = ()) -> dict[str, str]:  # type: ignore[assignment]
    path = ":".join([str(venv / "bin"), *(str(p) for p in extra_path), "/usr/local/bin", "/usr/bin", "/bin"])
    return {"VIRTUAL_ENV": str(venv), "PATH": path}


def _interpreter_of(venv: Path, home: Path) -> list[Path]:
    """The base interpreter's prefix a virtual environment links to, when it is not in /usr: the folder above the real
    interpreter's bin/ (its `python` followed through every link; pyvenv.cfg's `home` is only the folder of the name
    the environment was made with, such as ~/bin/python3, whose parent would be the user's home). Never a folder that
    holds the user's home or NightWatch's (`home`): none is mounted, and the environment is then not usable in the
    sandbox."""
    real = next((p.resolve() for p in (venv / "bin" / "python", venv / "bin" / "python3") if p.exists()), None)
    if real is None:
        return []
    prefix = real.parent.parent
    if prefix.is_relative_to("/usr") or prefix == Path("/"):
        return []
    return [] if _exposes(prefix, home) else [prefix]


def _exposes(mount: Path, home: Path) -> bool:
    """Whether mounting `mount` would show the user's home or NightWatch's `home` (it is one of them or holds one)."""
    return any(private.is_relative_to(mount) for private in (Path.home().resolve(), home.resolve()))


def _tool_dirs(setup: str, home: Path) -> list[Path]:
    """The folder of the set-up command's program when it lives outside the system folders (uv in ~/.local/bin)."""
    try:
        program = shlex.split(setup)[0]
    except (ValueError, IndexError):
        return []
    found = shutil.which(program)
    if not found or program == "python":
        return []
    folder = Path(found).resolve().parent
    if folder.is_relative_to("/usr") or str(folder) in {"/bin", "/sbin"}:
        return []
    return [] if _exposes(folder, home) else [folder]


def _base_python() -> str:
    return getattr(sys, "_base_executable", None) or sys.executable


def _python_version(python: str) -> str:
    try:
        return subprocess.run([python, "-c", "import sys; print(sys.version)"], capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _chown_tree(path: Path, uid: int) -> None:
    for folder, _dirs, names in os.walk(path):
        os.lchown(folder, uid, uid)
        for n in names:
            os.lchown(os.path.join(folder, n), uid, uid)


def _kind_of(argv: tuple[str, ...]) -> str:
    words = " ".join(argv)
    if "pytest" in words:
        return "pytest"
    if "manage.py" in words and "test" in argv:
        return "django"
    if "unittest" in words:
        return "unittest"
    if "rspec" in words:
        return "rspec"
    if "rails" in words or "rake" in words:
        return "rails"
    return "custom"


def _dotted(test: str) -> str:
    """A test path or pytest-style id as the dotted label Django's runner and unittest take."""
    path, _, rest = test.partition("::")
    module = str(PurePosixPath(path).with_suffix("")).replace("/", ".") if path.endswith(".py") else path
    return ".".join([module, *[p for p in rest.split("::") if p]])


def _python_project(root: Path) -> bool:
    return any((root / name).exists() for name in ("pyproject.toml", "setup.py", "setup.cfg", "manage.py",
                                                   "requirements.txt")) or any(root.glob("*.py"))


def _pytest_configured(root: Path) -> bool:
    if (root / "pytest.ini").is_file() or (root / "conftest.py").is_file():
        return True
    for name, marker in (("pyproject.toml", "[tool.pytest"), ("setup.cfg", "[tool:pytest]"), ("tox.ini", "[pytest]")):
        try:
            if marker in (root / name).read_text(errors="replace"):
                return True
        except OSError:
            continue
    return False


def is_test_path(path: str) -> bool:
    """A file of an application's test suite: under a tests/test/spec folder, or named as pytest, rspec and minitest
    find tests (test_*, *_test.py, *_spec.rb, *_test.rb), or a conftest.py."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return (any(p in {"tests", "test", "spec"} for p in parts[:-1]) or name.startswith("test_") or name == "conftest.py"
            or name.endswith(("_test.py", "_spec.rb", "_test.rb")))
