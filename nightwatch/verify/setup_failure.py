"""Why a test environment's set-up failed, in words a team can act on.

A set-up that builds a package from source (pycurl, psycopg2, mysqlclient, python-xmlsec, lxml) fails when the build
tool or header it needs is not installed, and says so somewhere in pages of pip's output. `explain` keeps the last
lines that matter (redacted, capped) and, where they name a missing build tool or header, the Debian package that
provides it, so the model's tool result, the issue, the report and `nightwatch check --test-env` say what to install.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from nightwatch.redact import clean

TAIL_LINES = 20
LINE_CHARS = 300

# (what the output says, the tool or header it misses, the Debian package that provides it): as the build tools and
# the packages' own setup scripts word it (pycurl's `Could not run curl-config`, psycopg2's `pg_config executable not
# found`, mysqlclient's `mysql_config not found`, xmlsec's `xmlsec1-config`, a C extension's missing Python.h)
MISSING = [
    (r"curl-config", "curl-config", "libcurl4-openssl-dev"),
    (r"pg_config", "pg_config", "libpq-dev"),
    (r"mysql_config|mariadb_config|pkg-config name.*mysql|mysqlclient", "mysql_config", "default-libmysqlclient-dev"),
    (r"xmlsec1-config|xmlsec1\b.*not found|xmlsec1\.pc", "xmlsec1-config", "libxmlsec1-dev"),
    (r"Python\.h", "Python.h", "python3-dev"),
    (r"libxml/\w+\.h|xml2-config", "libxml2 headers", "libxml2-dev"),
    (r"libxslt/\w+\.h|xslt-config", "libxslt headers", "libxslt1-dev"),
    (r"ffi\.h", "ffi.h", "libffi-dev"),
    (r"openssl/\w+\.h", "OpenSSL headers", "libssl-dev"),
    (r"krb5-config", "krb5-config", "libkrb5-dev"),
    (r"sasl/sasl\.h", "sasl.h", "libsasl2-dev"),
    (r"\blber\.h|\bldap\.h", "ldap.h", "libldap2-dev"),
    (r"\bjpeg\b.*(?:not be found|not found)|jpeglib\.h", "libjpeg headers", "libjpeg-dev"),
    (r"zlib\.h|\bzlib\b.*(?:not be found|not found)", "zlib.h", "zlib1g-dev"),
    (r"pkg-config: (?:not found|command not found)|\bpkg-config\b.*(?:No such file|not found)", "pkg-config", "pkg-config"),
    (r"(?:command|program) '(?:x86_64-linux-gnu-)?(?:gcc|cc)' failed|(?:gcc|cc): (?:No such file|not found)|"
     r"error: (?:command|compiler) '?(?:x86_64-linux-gnu-)?gcc'? (?:failed|not found)|unable to execute '?(?:x86_64-linux-gnu-)?gcc",
     "gcc", "build-essential"),
    (r"can't find Rust compiler|cargo.*(?:not found|No such file)|rustc.*(?:not found|No such file)", "a Rust compiler", "cargo"),
]
_MISSING = [(re.compile(pattern, re.I), tool, package) for pattern, tool, package in MISSING]
_NOISE = re.compile(r"^\s*(?:$|[=\-*╰╭│]+\s*$|note: |hint: |\[notice\]|WARNING: |Collecting |Downloading |"
                    r"Using cached |Requirement already satisfied|Obtaining |  Preparing |  Getting requirements)")


@dataclass(frozen=True)
class SetupFailure:
    """The failing lines of a set-up's output and what it misses."""

    lines: list[str] = field(default_factory=list)  # the last lines that say something, redacted, oldest first
    missing: list[tuple[str, str]] = field(default_factory=list)  # (tool or header, Debian package)

    @property
    def hint(self) -> str:
        """`curl-config is missing (Debian: apt-get install libcurl4-openssl-dev)`, or the last failing line."""
        if self.missing:
            tools = ", ".join(dict.fromkeys(t for t, _ in self.missing))
            packages = " ".join(dict.fromkeys(p for _, p in self.missing))
            return f"{tools} {'is' if len(self.missing) == 1 else 'are'} missing (Debian: apt-get install {packages})"
        return self.lines[-1] if self.lines else ""


def explain(output: str) -> SetupFailure:
    """What a failed set-up's output says: its last meaningful lines and the build tools it misses."""
    text = clean(output[-200_000:], limit=100_000)[0]
    kept = [line[:LINE_CHARS] for line in text.splitlines() if not _NOISE.match(line)]
    missing = [(tool, package) for pattern, tool, package in _MISSING if pattern.search(text)]
    return SetupFailure(lines=kept[-TAIL_LINES:], missing=list(dict.fromkeys(missing)))
