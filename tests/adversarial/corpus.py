"""The planted-secret corpus (secrets.yml): fake secrets in the contexts they reach NightWatch through.

Every secret in the corpus was generated at random for these tests; none is a real credential.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

CORPUS_FILE = Path(__file__).with_name("secrets.yml")
CONTEXTS = ("error_message", "stack_trace", "repo_file", "model_answer")
WINDOW = 8  # no run of this many characters of a secret may survive


@dataclass(frozen=True)
class Planted:
    name: str
    context: str
    secret: str
    text: str  # the context with the secret in place
    planted: str  # the smallest self-identifying form: the secret with the key, URL or marker naming it


@dataclass(frozen=True)
class LookAlike:
    name: str
    text: str


@lru_cache(maxsize=1)
def _document() -> dict:
    return yaml.safe_load(CORPUS_FILE.read_text(encoding="utf-8"))


def formats() -> list[Planted]:
    out = []
    for entry in _document()["formats"]:
        secret = entry["secret"]
        out.append(Planted(name=entry["name"], context=entry["context"], secret=secret,
                           text=entry["text"].replace("{secret}", secret), planted=entry.get("planted") or secret))
    return out


def lookalikes() -> list[LookAlike]:
    return [LookAlike(name=e["name"], text=e["text"]) for e in _document()["lookalikes"]]


def planted_secrets() -> dict[str, str]:
    """name -> the self-identifying form of every planted secret (what a hostile source would carry)."""
    return {p.name: p.planted for p in formats()}


def windows(secret: str, size: int = WINDOW) -> set[str]:
    """Every run of `size` characters of the secret that holds no line break (a kept line break is no leak)."""
    return {secret[i:i + size] for i in range(len(secret) - size + 1) if "\n" not in secret[i:i + size]
            and "\\n" not in secret[i:i + size]}


def leaked(secret: str, text: str, size: int = WINDOW) -> list[str]:
    """The windows of `secret` still present in `text`."""
    return sorted(w for w in windows(secret, size) if w in text)
