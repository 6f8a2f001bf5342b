"""Stable identity of an error group: the same defect gets the same fingerprint every night.

class + normalised transaction + message with ids, numbers, uuids, hex and quoted values masked.
The fingerprint is 16 lowercase hex characters, so it is also a valid batch custom_id and file name.
"""

from __future__ import annotations

import hashlib
import re

_MASKS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I), "<uuid>"),
    (re.compile(r"\b0x[0-9a-f]+\b", re.I), "<hex>"),
    (re.compile(r"\b[0-9a-f]{12,}\b", re.I), "<hex>"),
    (re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.-]+\b"), "<email>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b"), "<ip>"),
    (re.compile(r"(?<![A-Za-z])\d+(?:\.\d+)?"), "<n>"),
]
_QUOTED_ID = re.compile(r"(=\s*)(['\"])[^'\"]*\2")
_SPACES = re.compile(r"\s+")


def mask_message(message: str) -> str:
    """Mask the parts of an error message that change between occurrences of one defect."""
    text = _QUOTED_ID.sub(r"\1<v>", message or "")
    for pattern, token in _MASKS:
        text = pattern.sub(token, text)
    return _SPACES.sub(" ", text).strip()[:300]


def normalise_transaction(transaction: str) -> str:
    """Mask ids in transaction names (`Controller/orders/123/edit` -> `Controller/orders/<n>/edit`)."""
    parts = [mask_message(p) if any(c.isdigit() for c in p) else p for p in (transaction or "").split("/")]
    return "/".join(parts)


def fingerprint_of(error_class: str, transaction: str, message: str) -> str:
    key = "\x1f".join([error_class.strip(), normalise_transaction(transaction), mask_message(message)])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
