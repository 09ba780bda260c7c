"""Secrets redacted from documents before they are chunked and stored.

Ingest replaces every secret a pattern below finds with ``[REDACTED:<kind>]`` in each
block's text and the title, before chunking: chunks, full-text indexes, entities,
relations and vectors never see it. The ``redact`` setting turns it off or allows exact
values (``{"enabled": true, "allow": ["AKIAIOSFODNN7EXAMPLE"]}``).

The patterns are our own: detect-secrets 1.5 (tried first) reports a GitHub token as
``ghp`` rather than its span, and finds neither ``github_pat_`` tokens, an AWS secret key
in ``AWS_SECRET_ACCESS_KEY=...`` nor ``password = ...`` without its entropy plugins,
which flag ordinary words.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

SETTING = "redact"
# An assignment's value: not a placeholder (``$VAR``, ``<password>``, ``{{ x }}``, ``%s``)
# nor text already redacted; at least 6 characters, with a digit, symbol or capital
# letter, so prose such as "token: the one from Lockbox" keeps its words.
_VALUE = r"""(?![$<{%\[(])(?=[^\s"'`,;]*[0-9A-Z_/+=!@#^&*.-])[^\s"'`,;]{6,}"""
# (kind, pattern): the secret is the pattern's group "s", or the whole match.
PATTERNS = [
    (
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?s:.*?)(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
    ("aws-access-key-id", r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"),
    (
        "aws-secret-key",
        r"(?i:aws[a-z0-9_.-]{0,20}?(?:secret|private)[a-z0-9_.-]{0,20}?)[\"']?\s*(?:=|:|=>)\s*"
        r"[\"']?(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
    ),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    ("slack-token", r"\bxox[abposre]-[A-Za-z0-9-]{10,}"),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}"),
    ("url-password", r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:(?P<s>[^\s@/]+)@"),
    (
        "password",
        r"(?i:(?<![a-z0-9])[a-z0-9_.-]*(?:password|passwd|pwd)[a-z0-9_]*)[\"']?\s*(?:=|:|=>)\s*"
        rf"[\"']?(?P<s>{_VALUE})",
    ),
    (
        "secret",
        r"(?i:(?<![a-z0-9])[a-z0-9_.-]*(?:api[_-]?key|access[_-]?key|client[_-]?secret|"
        r"secret[_-]?key|auth[_-]?token|access[_-]?token|secret|token)[a-z0-9_]*)[\"']?\s*"
        rf"(?:=|:|=>)\s*[\"']?(?P<s>{_VALUE})",
    ),
]
# What every match of a kind holds, in lower case: a text with none of them is not searched
# for that kind (most blocks hold no secret, and 1.7 million searches cost python3.11-doc's
# ingest 3 of its 10 seconds).
NEEDLES = {
    "private-key": ("private key",),
    "aws-access-key-id": ("akia", "asia", "abia", "acca", "a3t"),
    "aws-secret-key": ("aws",),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "slack-token": ("xox",),
    "jwt": ("eyj",),
    "url-password": ("://",),
    "password": ("passw", "pwd"),
    "secret": ("key", "secret", "token"),
}
# (kind, compiled pattern, needles); a kind without needles fails here, at import
_COMPILED = [(kind, re.compile(pattern), NEEDLES[kind]) for kind, pattern in PATTERNS]


@dataclass
class Redactor:
    """Replaces secrets in text; ``counts`` says how many of each kind it replaced."""

    enabled: bool = True
    allow: frozenset = frozenset()
    counts: Counter = field(default_factory=Counter)

    @classmethod
    def from_setting(cls, value):
        value = check_setting(value if value is not None else {})
        return cls(enabled=value.get("enabled", True), allow=frozenset(value.get("allow", ())))

    def redact(self, text):
        if not self.enabled or not text:
            return text
        lowered = text.lower()
        for kind, pattern, needles in _COMPILED:
            if any(needle in lowered for needle in needles):
                text = pattern.sub(lambda match, kind=kind: self._replace(kind, match), text)
        return text

    def _replace(self, kind, match):
        group = "s" if "s" in match.re.groupindex else 0
        secret = match.group(group)
        if secret in self.allow:
            return match.group(0)
        self.counts[kind] += 1
        start, end = match.span(group)
        whole = match.group(0)
        offset = match.start(0)
        return whole[: start - offset] + f"[REDACTED:{kind}]" + whole[end - offset :]


def check_setting(value):
    """The ``redact`` setting, checked: ``{"enabled": bool, "allow": [str, ...]}``."""
    example = '{"enabled": true, "allow": ["AKIAIOSFODNN7EXAMPLE"]}'
    if not isinstance(value, dict):
        raise ValueError(f"redact must be a JSON object, e.g. {example}")
    unknown = set(value) - {"enabled", "allow"}
    if unknown:
        raise ValueError(f"redact: unknown keys {', '.join(sorted(unknown))}; use {example}")
    if not isinstance(value.get("enabled", True), bool):
        raise ValueError("redact: enabled must be true or false")
    allow = value.get("allow", [])
    if not isinstance(allow, list) or not all(isinstance(a, str) and a for a in allow):
        raise ValueError(f"redact: allow must be a list of exact secret values, e.g. {example}")
    return value


def redact_document(document, redactor):
    """Redact ``document``'s title and blocks in place; returns ``{kind: count}``."""
    redactor.counts = Counter()
    # The title and each block's headings repeat heading blocks' text: not counted again.
    quiet = Redactor(redactor.enabled, redactor.allow)
    document.title = quiet.redact(document.title)
    headings = {}  # each block repeats the headings it sits under: each is redacted once
    for block in document.blocks:
        block.text = redactor.redact(block.text)
        block.headings = tuple(
            headings[h] if h in headings else headings.setdefault(h, quiet.redact(h)) for h in block.headings
        )
    return dict(sorted(redactor.counts.items()))
