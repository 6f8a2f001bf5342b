"""The CodeHost contract and the path and text rules every host shares.

The agent's read-only tools sit directly on a CodeHost, and a CodeHostError's text is shown to the
model as the tool's error, so every message says what was wrong and what to ask for instead.
Path checks live here, once, so the local checkout and GitHub refuse exactly the same paths, and
withhold the same secret files (by name, and by content: key material or a file of mostly credentials).
Text a host renders for the model is redacted before any cap cuts it.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import posixpath
import re
import threading
from datetime import datetime
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from nightwatch.models import CorrelatedPR
from nightwatch.redact import has_private_key, redact, secret_content_reason

READ_LIMIT_BYTES = 200_000  # one read never returns more than this; ask for a line range instead
SEARCH_MAX_FILE_BYTES = 1_000_000  # larger files are skipped by search and refused by read_text
SEARCH_TEXT_CHARS = 300  # a search hit shows at most this much of its line
_DRIVE = re.compile(r"^[A-Za-z]:")
CONTENT_CHECK_BYTES = 64_000  # smaller files are checked for being mostly credentials; every file for key material

# Secret files are withheld by name whatever they hold (matched case-insensitively on the file name, or on the
# path for the entries with a folder). Templates meant to be committed (.env.example, *.pub) stay readable.
SECRET_FILE_NAMES = (
    ".env", ".env.*", "*.env", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "*.pkcs12", "*.p8", "*.keystore",
    "*.jks", "*.kdbx", "*.kdb", "*.ppk", "*.ovpn", "*.tfstate", "*.tfstate.*", "*.keychain", "*.keychain-db",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "credentials*.json", "client_secret*.json",
    "service-account*.json", "service_account*.json", "*.yml.enc", "*.yaml.enc", "*.json.enc", "secrets.yml",
    "secrets.yaml", "secrets.json", "secrets.toml", "secret.yml", ".npmrc", ".pypirc", ".netrc", "_netrc",
    ".git-credentials", ".pgpass", ".my.cnf", ".dockercfg", ".htpasswd", "htpasswd", ".vault-token", ".boto",
    ".s3cfg", "master.key", "kubeconfig", ".terraformrc", "terraform.rc", "*.asc.key", "secring.*",
)
SECRET_FILE_PATHS = (
    ".aws/credentials", ".docker/config.json", ".kube/config", ".gem/credentials", ".ssh/*", ".gnupg/*",
    "config/master.key", "config/credentials/*", "config/credentials.yml.enc", ".config/gcloud/*",
)
NOT_SECRET_FILE_NAMES = (".env.example", ".env.sample", ".env.template", ".env.dist", ".env.*.example", "*.pub")


class CodeHostError(Exception):
    """A code-host request failed; the message is short, names the problem and what to try instead."""


class SearchHit(BaseModel):
    """One matching line. `line` is 1-based; 0 means the host could not tell which line matched."""

    path: str
    line: int
    text: str


@runtime_checkable
class CodeHost(Protocol):
    """Read-only access to one repository's default branch, plus its recently merged pull requests."""

    name: str
    search_is_exhaustive: bool  # search_code looks at every file (else its counts are lower bounds)

    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None, numbered: bool = False
    ) -> str: ...

    def read_text(self, path: str) -> str:
        """The whole current text of a file, never capped or numbered (fix validation needs it exact)."""
        ...

    def search_code(
        self, query: str, path_glob: str | None = None, limit: int = 20, regex: bool = False
    ) -> list[SearchHit]: ...

    def list_directory(self, path: str = "") -> list[str]: ...

    def default_branch(self) -> str: ...

    def recent_merged_prs(self, since: datetime, limit: int = 30) -> list[CorrelatedPR]: ...

    def file_digest(self, path: str) -> str | None:
        """sha256 of the file as this night reads it; None when it is not a file of the repository."""
        ...

    def current_digest(self, path: str) -> str | None:
        """sha256 of the file on the default branch now (a host that keeps what it read asks again): what a fix is
        committed over."""
        ...

    def tracked_files(self) -> frozenset[str]:
        """Every file path of the default branch (secret files included: only names, to map trace paths)."""
        ...


_COMMIT_ID = re.compile(r"[0-9a-fA-F]{7,64}")


def are_commit_ids(*names: str) -> bool:
    """Every name is a commit id (7 to 64 hex digits): untrusted text, such as a deploy marker's commit, reaches git's
    arguments or an API's URL as nothing else."""
    return all(_COMMIT_ID.fullmatch(name or "") for name in names)


def safe_relative_path(path: str, allow_root: bool = False) -> str:
    """Normalise a repository path or refuse it: no NUL, no absolute path, no `..`, nothing in .git."""
    if not isinstance(path, str):
        raise CodeHostError(f"path must be a string, got {type(path).__name__}")
    if "\x00" in path:
        raise CodeHostError(f"path contains a NUL byte: {path!r}")
    raw = path.strip().replace("\\", "/")
    if raw.startswith(("/", "~")) or _DRIVE.match(raw):
        raise CodeHostError(f"absolute paths are not allowed: {path} (use a path relative to the repository root)")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise CodeHostError(f"path escapes the repository: {path}")
    if ".git" in parts:
        raise CodeHostError(f"the .git directory is not part of the code: {path}")
    if not parts and not allow_root:
        raise CodeHostError("empty path: name a file relative to the repository root, e.g. app/models/order.rb")
    return posixpath.join(*parts) if parts else ""


def _any_of(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One regular expression that matches what any of these shell patterns matches (`fnmatch.fnmatchcase`)."""
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


_NOT_SECRET_NAME, _SECRET_NAME = _any_of(NOT_SECRET_FILE_NAMES), _any_of(SECRET_FILE_NAMES)
_SECRET_PATH = _any_of(SECRET_FILE_PATHS + tuple("*/" + p for p in SECRET_FILE_PATHS))


@functools.lru_cache(maxsize=65536)
def secret_file_reason(path: str) -> str | None:
    """Why a path names a secret file (`.env`, `*.pem`, `config/master.key`…), or None. Every search and listing asks
    this of each file it walks: the patterns are one expression per list, and the answers are kept."""
    lowered = path.lower().strip("/")
    name = posixpath.basename(lowered)
    if _NOT_SECRET_NAME.match(name):
        return None
    if _SECRET_NAME.match(name):
        return f"the name {posixpath.basename(path)!r} marks a secret file"
    if _SECRET_PATH.match(lowered):
        pattern = next(p for p in SECRET_FILE_PATHS if fnmatch.fnmatchcase(lowered, p) or fnmatch.fnmatchcase(lowered, "*/" + p))
        return f"{pattern} is a secret file"
    return None


def secret_text_reason(text: str) -> str | None:
    """Why a file's text is itself a secret: key material anywhere, or a small file of mostly credentials. The verdict
    is a function of the text alone, so it is kept by the text's digest: a monorepo's copies of one file, and the same
    file met again by a search, a listing and the night's tree, are judged once."""
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    with _VERDICTS_LOCK:
        if key in _VERDICTS:
            return _VERDICTS[key]
    verdict = ("it holds private key material" if has_private_key(text) else None) if len(text) > CONTENT_CHECK_BYTES \
        else secret_content_reason(text)
    with _VERDICTS_LOCK:
        if len(_VERDICTS) >= _MAX_VERDICTS:
            _VERDICTS.clear()
        _VERDICTS[key] = verdict
    return verdict


_VERDICTS: dict[bytes, str | None] = {}
_VERDICTS_LOCK = threading.Lock()
_MAX_VERDICTS = 200_000


def withheld(path: str, reason: str) -> CodeHostError:
    """The error a secret file answers with: it names the file and why, never its content."""
    return CodeHostError(
        f"{path} is withheld as a secret file ({reason}); NightWatch never shows secret files to the model. "
        "Read the code that loads the setting instead (search_code for its name)."
    )


def looks_binary(data: bytes) -> bool:
    """Git's own heuristic: a NUL byte in the first 8 KB."""
    return b"\x00" in data[:8192]


def decode_text(path: str, data: bytes) -> str:
    if looks_binary(data):
        raise CodeHostError(f"binary file, not readable as text: {path}")
    return data.decode("utf-8", errors="replace")


def digest_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def render_file(
    path: str, text: str, start_line: int | None, end_line: int | None, numbered: bool, limit: int = READ_LIMIT_BYTES
) -> str:
    """Cut a file to the asked line range and the size cap; number lines like `  42| code` if asked.

    What this returns is shown, never written back, so secrets are redacted here, and before the cap: a cut
    through a secret would leave a tail no rule recognises.
    """
    lines = text.splitlines(keepends=True)
    first, last = _line_range(path, len(lines), start_line, end_line)
    chosen = lines[first - 1 : last]
    body = "".join(f"{n:>5}| {line}" for n, line in enumerate(chosen, first)) if numbered else "".join(chosen)
    margin = limit + 64_000  # redact a little more than is kept, so a secret across the cut is still whole
    body = redact(body[:margin]) + body[margin:] if len(body) > margin else redact(body)
    encoded = body.encode("utf-8")
    if len(encoded) <= limit:
        return body
    kept = encoded[:limit].decode("utf-8", errors="ignore")
    shown = kept.count("\n")
    return kept + (
        f"\n… [truncated: {len(encoded):,} bytes is over the {limit:,} byte read cap; showing lines {first}-"
        f"{first + shown - 1}; read further with start_line={first + shown}]"
    )


def _line_range(path: str, total: int, start_line: int | None, end_line: int | None) -> tuple[int, int]:
    first = 1 if start_line is None else start_line
    last = total if end_line is None else min(end_line, total)
    if first < 1 or (end_line is not None and end_line < first):
        raise CodeHostError(f"bad line range {start_line}-{end_line} for {path}: lines start at 1 and end >= start")
    if total and first > total:
        raise CodeHostError(f"start_line {first} is past the end of {path} ({total} lines)")
    return first, last


def line_matcher(query: str, regex: bool):
    """A predicate for one line: case-insensitive substring, or a case-insensitive regex if asked."""
    if not query or not query.strip():
        raise CodeHostError("empty search query: give a word or identifier to look for")
    if regex:
        try:
            pattern = re.compile(query, re.IGNORECASE)
        except re.error as exc:
            raise CodeHostError(f"invalid regular expression {query!r}: {exc}; search a plain string instead") from exc
        return lambda line: pattern.search(line) is not None
    needle = query.casefold()
    return lambda line: needle in line.casefold()


def hit_text(line: str) -> str:
    """A matching line, redacted before it is cut to SEARCH_TEXT_CHARS."""
    text = redact(line.strip()).strip()
    return text if len(text) <= SEARCH_TEXT_CHARS else text[:SEARCH_TEXT_CHARS] + " …"


def glob_matches(path: str, glob: str | None) -> bool:
    """`*.rb` matches at any depth, `app/models/*.rb` from the root, a plain `app/models` as a folder."""
    if not glob:
        return True
    pattern = glob.strip().removeprefix("./") or "*"
    if not any(c in pattern for c in "*?["):
        folder = pattern.rstrip("/")
        return path == folder or path.startswith(folder + "/")
    if "/" not in pattern:
        return fnmatch.fnmatchcase(posixpath.basename(path), pattern)
    return fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(path, pattern.replace("**/", ""))
