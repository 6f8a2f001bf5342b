"""The application's test command and environment, and reading a test run for the production error."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from nightwatch.verify import sandbox, testenv
from nightwatch.verify.reproduce import CrashSite, reproduces, same_class, tracebacks

pytestmark = pytest.mark.slow  # set-ups and tests run in the sandbox: real processes

needs_sandbox = pytest.mark.skipif(sandbox.unavailable_reason() is not None and not os.environ.get("CI"),
                                   reason=f"{sandbox.unavailable_reason()} (CI installs it: .ci/run)")


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(textwrap.dedent(text))
    return tmp_path


@pytest.mark.parametrize("files, kind, shown", [
    ({"pyproject.toml": "[tool.pytest.ini_options]\ntestpaths=['tests']\n"}, "pytest", "python -m pytest"),
    ({"setup.cfg": "[tool:pytest]\n", "manage.py": ""}, "pytest", "python -m pytest"),
    ({"manage.py": "", "hc/api/tests/test_x.py": ""}, "django", "python manage.py test"),
    ({"setup.py": "", "tests/test_x.py": ""}, "unittest", "python -m unittest"),
    ({"Gemfile": "", "spec/x_spec.rb": ""}, "rspec", "bundle exec rspec"),
    ({"Gemfile": "", "test/x_test.rb": ""}, "rails", "bin/rails test"),
])
def test_the_test_command_is_detected_from_the_projects_files(tmp_path, files, kind, shown):
    command = testenv.test_command(project(tmp_path, files))
    assert command is not None and command.detected
    assert (command.kind, command.shown) == (kind, shown)


def test_a_configured_test_command_wins_and_runs_one_test_as_its_runner_wants(tmp_path):
    root = project(tmp_path, {"manage.py": ""})
    django = testenv.test_command(root)
    assert django.for_tests(["hc/api/tests/test_ping.py::PingTestCase::test_it_works"]) == [
        "python", "manage.py", "test", "hc.api.tests.test_ping.PingTestCase.test_it_works"]
    configured = testenv.test_command(root, "python -m pytest -x tests")
    assert not configured.detected and configured.kind == "pytest"
    assert configured.for_tests(["tests/test_a.py::test_b"])[-1] == "tests/test_a.py::test_b"
    assert testenv.test_command(tmp_path / "empty") is None


def test_the_environment_key_follows_the_lock_files_not_the_code(tmp_path):
    root = project(tmp_path, {"requirements.txt": "django==5.1\n", "app.py": "x = 1\n"})
    files = ["requirements.txt", "app.py"]
    key = testenv.environment_key(root, files, "pip install -r requirements.txt", "python3")
    (root / "app.py").write_text("x = 2\n")
    assert testenv.environment_key(root, files, "pip install -r requirements.txt", "python3") == key
    (root / "requirements.txt").write_text("django==5.2\n")
    assert testenv.environment_key(root, files, "pip install -r requirements.txt", "python3") != key
    assert testenv.setup_command(root) == "python -m pip install -r requirements.txt pytest"


PYTEST_SHORT = """\
=================================== FAILURES ===================================
___________________________________ test_gbp ___________________________________
tests/test_regression.py:3: in test_gbp
    assert pricing.convert(10.0, "GBP") > 0
bookshop/pricing.py:10: in convert
    return round(amount_eur * RATES[currency], 2)
E   KeyError: 'GBP'
=========================== short test summary info ============================
FAILED tests/test_regression.py::test_gbp - KeyError: 'GBP'
"""

DJANGO_RUNNER = """\
======================================================================
ERROR: test_it_handles_missing_tz (hc.front.tests.test_cron_preview.CronPreviewTestCase)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/work/hc/front/tests/test_cron_preview.py", line 41, in test_it_handles_missing_tz
    r = self.client.post("/checks/cron_preview/", payload)
  File "/venv/lib/python3.11/site-packages/django/test/client.py", line 948, in post
    response = super().post(
  File "/work/hc/front/views.py", line 812, in cron_preview
    zone = ZoneInfo(tz)
           ^^^^^^^^^^^^
  File "/usr/lib/python3.11/zoneinfo/_common.py", line 24, in load_tzdata
    raise ZoneInfoNotFoundError(f"No time zone found with key {key}")
zoneinfo._common.ZoneInfoNotFoundError: 'No time zone found with key Foo/Bar'

----------------------------------------------------------------------
Ran 1 test in 0.012s

FAILED (errors=1)
"""


def test_a_run_reproduces_the_error_only_with_its_class_through_its_crash_frame():
    assert reproduces(PYTEST_SHORT, CrashSite("builtins:KeyError", "bookshop/pricing.py", 10))[0]
    assert reproduces(PYTEST_SHORT, CrashSite("builtins:KeyError", "bookshop/pricing.py", 99, "convert"))[0]
    ok, why = reproduces(PYTEST_SHORT, CrashSite("builtins:ValueError", "bookshop/pricing.py", 10))
    assert not ok and "KeyError" in why
    ok, why = reproduces(PYTEST_SHORT, CrashSite("builtins:KeyError", "bookshop/orders.py", 10))
    assert not ok and "not through bookshop/orders.py" in why
    crash = CrashSite("zoneinfo._common:ZoneInfoNotFoundError", "hc/front/views.py", 812, "cron_preview")
    assert reproduces(DJANGO_RUNNER, crash)[0]
    assert reproduces("1 passed in 0.01s", crash) == (False, "no traceback in the output")
    assert [e.error_class for e in tracebacks(DJANGO_RUNNER)] == ["zoneinfo._common.ZoneInfoNotFoundError"]


def test_error_classes_compare_by_name_and_module_where_both_name_one():
    assert same_class("builtins:KeyError", "KeyError")
    assert same_class("django.urls.exceptions:NoReverseMatch", "django.urls.exceptions.NoReverseMatch")
    assert same_class("django.urls.exceptions:NoReverseMatch", "NoReverseMatch")
    assert not same_class("builtins:KeyError", "ValueError")
    assert not same_class("app.errors:NotFound", "werkzeug.exceptions.NotFound")


@needs_sandbox
def test_the_environment_is_made_in_the_sandbox_once_and_reused_while_the_locks_do_not_change(tmp_path):
    """A real set-up (pip installing the project itself, offline) in the sandbox; the next night reuses it."""
    root = project(tmp_path / "app", {
        "requirements.txt": "tinyapp==1.0\n",
        "test_tiny.py": "import unittest\nimport tinyapp\n\nclass T(unittest.TestCase):\n    def test_it(self):\n"
                        "        self.assertEqual(tinyapp.ANSWER, 42)\n",
    })
    wheel(root / "wheels", "tinyapp", "1.0", "ANSWER = 42\n")
    files = ["requirements.txt", "test_tiny.py", "wheels/tinyapp-1.0-py3-none-any.whl"]
    home = tmp_path / "home"
    setup = "python -m pip install --no-index --find-links wheels -r requirements.txt && echo MADE"
    first = testenv.prepare_environment(root, files, home, setup)
    assert first.ready, (first.detail, first.output)
    assert not first.reused and "MADE" in first.output
    second = testenv.prepare_environment(root, files, home, setup)
    assert second.ready and second.reused and "MADE" not in second.output  # the set-up did not run again
    assert second.mounts == first.mounts
    from nightwatch.verify.tree import disposable_tree
    with disposable_tree(root, ["test_tiny.py"]) as tree:  # the package comes from the environment, not the tree
        run = sandbox.run(["python", "-m", "unittest", "test_tiny"], tree, mounts=second.mounts, env=second.variables)
    assert run.exit_code == 0, run.output
    (root / "requirements.txt").write_text("tinyapp>=1.0\n")  # a changed lock file is another environment
    changed = testenv.environment_key(root, files, setup, testenv._base_python())
    assert first.mounts[0] == home / "test-envs" / first.mounts[0].parent.name / "venv" != home / "test-envs" / changed / "venv"


def wheel(folder: Path, name: str, version: str, code: str) -> Path:
    """A minimal pure-Python wheel, so that pip really installs something with no network."""
    import base64
    import hashlib
    import zipfile
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": code,
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(t.encode()).digest()).rstrip(b'=').decode()},"
                     f"{len(t.encode())}\n" for n, t in files.items()) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as z:
        for n, t in {**files, f"{info}/RECORD": record}.items():
            z.writestr(n, t)
    return path


@needs_sandbox
def test_a_failed_set_up_says_so_and_leaves_no_half_made_environment(tmp_path):
    root = project(tmp_path / "app", {"requirements.txt": "no-such-package-anywhere==1\n"})
    env = testenv.prepare_environment(root, ["requirements.txt"], tmp_path / "home", "echo trying; exit 3")
    assert not env.ready and "failed (exit 3)" in env.detail and "trying" in env.output
    assert not any((tmp_path / "home" / "test-envs").glob("*/venv"))


def test_a_nested_class_is_the_class_new_relic_names_by_its_module_and_a_skip_is_not_a_pass():
    from nightwatch.verify.reproduce import skipped

    assert same_class("django.contrib.auth.models:DoesNotExist", "django.contrib.auth.models.User.DoesNotExist")
    assert not same_class("django.contrib.auth.models:DoesNotExist", "django.core.exceptions.ObjectDoesNotExist")
    assert skipped("s                    [100%]\n1 skipped in 0.01s\n") and skipped("Ran 1 test in 0.001s\n\nOK (skipped=1)\n")
    assert not skipped("1 passed, 1 skipped in 0.01s") and not skipped("Ran 2 tests in 0.1s\n\nOK (skipped=1)\n")


def test_a_test_suite_file_is_one_the_runners_would_find():
    from nightwatch.verify.testenv import is_test_path

    assert all(is_test_path(p) for p in ["tests/api/test_pages.py", "hc/api/tests/test_pause.py", "app/pricing_test.py",
                                         "spec/models/order_spec.rb", "test/models/order_test.rb", "conftest.py",
                                         "spec/support/helpers.rb", "test_app.py"])
    assert not any(is_test_path(p) for p in ["app/models/order.rb", "hc/api/views.py", "contest.py", "app/testing.py",
                                             "latest/x.py", "app/attest_test_data.rb"])


@pytest.mark.parametrize("name, target, django", [
    ("", "tests/api/test_orders.py", "tests.api.test_orders"),
    ("test_it", "tests/api/test_orders.py::test_it", "tests.api.test_orders.test_it"),
    ("TestOrders::test_it", "tests/api/test_orders.py::TestOrders::test_it", "tests.api.test_orders.TestOrders.test_it"),
    ("TestOrders.test_it", "tests/api/test_orders.py::TestOrders::test_it", "tests.api.test_orders.TestOrders.test_it"),
    ("tests/api/test_orders.py::test_it", "tests/api/test_orders.py::test_it", "tests.api.test_orders.test_it"),
    ("test_orders.py::test_it", "tests/api/test_orders.py::test_it", "tests.api.test_orders.test_it"),
    ("tests.api.test_orders.OrdersTest.test_it", "tests/api/test_orders.py::OrdersTest::test_it",
     "tests.api.test_orders.OrdersTest.test_it"),
    ("test_it[1.5-a.b]", "tests/api/test_orders.py::test_it[1.5-a.b]", "tests.api.test_orders.test_it[1.5-a.b]"),
    ("-pfoo.bar", "tests/api/test_orders.py", "tests.api.test_orders"),
])
def test_a_test_named_without_its_file_runs_in_the_tests_own_file(name: str, target: str, django: str) -> None:
    """A model often names the test alone (`test_it`); pytest would look for a file of that name and run nothing."""
    from nightwatch.models import RegressionTest
    from nightwatch.verify.verifier import test_target

    test = RegressionTest(path="tests/api/test_orders.py", content="x", test=name)
    assert test_target(test) == target
    django_runner = testenv.TestCommand("django", ("python", "manage.py", "test"), detected=True)
    assert django_runner.for_tests([test_target(test, "django")]) == ["python", "manage.py", "test", django]


def test_ruby_runners_get_a_name_that_names_its_file_else_the_whole_file() -> None:
    from nightwatch.models import RegressionTest
    from nightwatch.verify.verifier import test_target

    spec = RegressionTest(path="spec/models/order_spec.rb", content="x", test="returns the total")
    assert test_target(spec, "rspec") == "spec/models/order_spec.rb"
    assert test_target(spec.model_copy(update={"test": "spec/models/order_spec.rb:12"}), "rspec") == "spec/models/order_spec.rb:12"
