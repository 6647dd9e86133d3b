"""Credentials masked in text shown to a person or an agent; the stored text stays exact.

``redact_text`` replaces each secret it recognises with a marker naming its kind
(``[REDACTED:github-token]``); ``redact_value`` does the same inside dataclasses, dicts,
lists and tuples (a DTO, a tool result). Every read surface runs its output through one
of them, once, at its choke point: the agent tools, the CLI's consoles and JSON, the
workbench's loads, ``strata export --redact``. Capture, derivation and the default export
read the raw text.

Recognised: GitHub tokens, ``sk-`` style API keys (OpenAI, DeepSeek, Anthropic), AWS
access key ids and secret keys, ``Bearer`` tokens, JWTs, ``password=`` / ``token:`` /
``"api_key": "…"`` style values, private-key blocks, card numbers that pass the Luhn check
and passwords in URLs. The patterns ask for a credential's shape (a prefix, a length, a
digit, a checksum), so words, 40-hex commit hashes, UUIDs, phone numbers and dates pass.

Most text holds none of the words a secret needs, and pays a few substring tests and one
digit scan; only text that has one of them runs the patterns. The 10,000 messages of the
bundled demo conversation repeated take about 40 ms (4 µs a message; most of it the few long
logs pasted into it), so a page of search hits costs well under a millisecond.

Text is cut to a length only after it is redacted: a cut through a secret leaves a prefix
that no pattern recognises any more.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from typing import Any, Callable

# Upper case: Rich and Textual markup take "[lower:case]" for a style tag and drop it from the
# screen (the CLI's tables, the workbench's cells), but leave "[UPPER:..." as text.
MARKER_PREFIX = "[REDACTED:"


def marker(kind: str) -> str:
    """The text that stands in for a secret of ``kind``."""
    return f"{MARKER_PREFIX}{kind}]"


# ----------------------------------------------------------------------------- the gate

# A secret of each kind contains one of these (in any case), or a run of eight digits (a card
# number): text holding none is returned untouched without running a pattern. Substring tests on
# the lower-cased text cost a fraction of one regular expression searched for all of them; the
# needles with "_" or "-" are only looked for in text that has one.
_WORD_NEEDLES = (
    "akia",
    "asia",
    "eyj",
    "private key",
    "bearer",
    "passw",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "apikey",
    "://",
)
_UNDERSCORE_NEEDLES = (
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "sk_",
    "api_key",
    "access_key",
    "private_key",
)
_DASH_NEEDLES = ("sk-", "api-key", "access-key", "private-key")
_KEY_NEEDLES = (
    "passw",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "api_key",
    "apikey",
    "api-key",
    "access_key",
    "access-key",
    "private_key",
    "private-key",
)
_DIGITS = re.compile(r"\d\d\d\d[ -]?\d\d\d\d")


def _has_digit(text: str) -> bool:
    return (
        "0" in text
        or "1" in text
        or "2" in text
        or "3" in text
        or "4" in text
        or "5" in text
        or "6" in text
        or "7" in text
        or "8" in text
        or "9" in text
    )


def _may_hold_secret(text: str, lowered: str) -> bool:
    for needle in _WORD_NEEDLES:
        if needle in lowered:
            return True
    if "_" in lowered:
        for needle in _UNDERSCORE_NEEDLES:
            if needle in lowered:
                return True
    if "-" in lowered:
        for needle in _DASH_NEEDLES:
            if needle in lowered:
                return True
    return _has_digit(text) and _DIGITS.search(text) is not None


# ----------------------------------------------------------------------------- the patterns

_TOKEN_CHARS = "A-Za-z0-9_-"

_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    # A block cut off before its END line is masked to the end of the text.
    r".*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.S,
)
# scheme://user:PASSWORD@host — only the password goes (the user and host say which account).
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{1,30}://[^\s:/@?#\[\]]*:)([^\s/@?#]+)(?=@)")
_JWT = re.compile(rf"(?<![{_TOKEN_CHARS}])eyJ[{_TOKEN_CHARS}]{{5,}}\.eyJ[{_TOKEN_CHARS}]{{5,}}\.[{_TOKEN_CHARS}]*")
_GITHUB = re.compile(r"g(?<![A-Za-z0-9_]g)(?:h[pousr]_[A-Za-z0-9]{20,}|ithub_pat_[A-Za-z0-9_]{20,})")
# sk-…: OpenAI (sk-, sk-proj-), DeepSeek (sk- and 32 hex), Anthropic (sk-ant-api03-…); sk_live_ / sk_test_
# (Stripe). At least 20 characters with a digit: "sk-learn" or a hyphenated word is no key.
_SK = re.compile(
    rf"s(?<![{_TOKEN_CHARS}]s)k(?:-(?=[{_TOKEN_CHARS}]{{20}})(?=[A-Za-z_-]*\d)[{_TOKEN_CHARS}]+"
    r"|_(?:live|test)_[A-Za-z0-9]{16,})"
)
_AWS_KEY_ID = re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")
# "Bearer" then a token with a digit: "the bearer of bad news" is prose.
_BEARER = re.compile(r"(?i)(\bbearer\s+)(?=[A-Za-z._~+/-]*\d)([A-Za-z0-9._~+/-]{12,}=*)")

# key = value, key: value, "key": "value". The key ends in one of these words (aws_secret_access_key,
# DB_PASSWORD, x-api-key, refresh_token); words around it ("tokens", "passwordless") are other words.
# The pattern matches the word only (the rest of the key's name is read back in _key_name): matching
# the whole name took time quadratic in a long run of "a_a_a_…".
_KEY_WORDS = (
    r"password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key"
    r"|private[_-]?key|client[_-]?secret"
)
_KEY_VALUE = re.compile(
    rf"(?i)(?<![A-Za-z0-9])(?P<key>{_KEY_WORDS})(?![A-Za-z0-9])"
    r"(?P<sep>[\"']?\s*(?P<op>=>|[:=])\s*)"
    r"(?:(?P<quote>[\"'])(?P<quoted>[^\"'\n]{1,500})(?P=quote)|(?P<bare>[^\s\"'`,;<>(){}\[\]]{1,500}))"
)
# A bare value after ":" is prose as often as not ("Secret: we are planning a party"): it must look
# like a credential — a digit or a symbol in it, or one long run.
_CREDENTIAL_LIKE = re.compile(r"[0-9!#$%^*+/=?@~|\\]|^\S{12,}$")
# Values that name a placeholder or code, not a secret: os.environ["TOKEN"], ${TOKEN}, None, ***.
_NOT_A_VALUE = re.compile(
    r"(?i)^(?:none|null|nil|true|false|undefined|empty|required|optional|string|str|\*+|x+|"
    r"\.\.\.|…|\$.*|%.*|<.*|os\.\w.*|env\b.*|getenv.*|process\.env.*|self\.\w+.*)$"
)
# A path after pwd (PWD=/home/ana: the working directory) or a private key (private_key: ~/.ssh/id_ed25519)
# names a place, not a secret.
_PATH = re.compile(r"(?i)^(?:~?\.{0,2}/|[a-z]:\\)")
_PATH_KEYS = ("pwd", "private_key", "privatekey")

# Card numbers: 13–19 digits, written whole or in groups of four (Amex 4-6-5, Diners 4-6-4) with one
# separator, with a card network's leading digits and a valid Luhn check digit.
# The first digit is matched before the look back (not after it), so the engine only tries the
# pattern where a digit stands: three times faster on a long log.
_CARD = re.compile(
    r"\d(?<![\w-]\d)(?:\d{3}([ -])\d{4}\1\d{4}\1\d{4}(?:\1?\d{1,3})?|\d{3}([ -])\d{6}\2\d{4,5}|\d{12,18})(?![\w-])"
)
_CARD_PREFIX = re.compile(r"^(?:4|5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)|3[47]|3(?:0[0-5]|[68])|35|6(?:011|5|4[4-9]|2))")

# The marker names what the key ends in: refresh_token is a token, aws_secret_access_key an AWS secret.
_KIND_OF_KEY = (
    ("secret_access_key", "aws-secret-key"),
    ("password", "password"),
    ("passwd", "password"),
    ("passphrase", "password"),
    ("pwd", "password"),
    ("private_key", "private-key"),
    ("privatekey", "private-key"),
    ("api_key", "api-key"),
    ("apikey", "api-key"),
    ("access_key", "access-key"),
    ("accesskey", "access-key"),
    ("token", "token"),
    ("client_secret", "secret"),
    ("secret", "secret"),
)


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if index % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"[ -]", "", match.group(0))
    if 13 <= len(digits) <= 19 and _CARD_PREFIX.match(digits) and _luhn(digits):
        return marker("card-number")
    return match.group(0)


def _key_kind(key: str) -> str:
    lowered = key.lower().replace("-", "_")
    for word, kind in _KIND_OF_KEY:
        if lowered.endswith(word):
            return kind
    return "secret"


_KEY_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _key_name(match: re.Match[str]) -> tuple[str, int]:
    """The whole name of the key whose last word ``match`` found (DB_PASSWORD, aws_secret_access_key),
    read back at most 64 characters, and where it starts."""
    string, at = match.string, match.start()
    low = max(0, at - 64)
    while at > low and string[at - 1] in _KEY_NAME_CHARS:
        at -= 1
    return string[at : match.end("key")], at


def _key_value(match: re.Match[str]) -> str:
    value = match.group("quoted") if match.group("quote") else match.group("bare")
    if value.startswith(MARKER_PREFIX) or value.strip() == "" or _NOT_A_VALUE.match(value.strip()):
        return match.group(0)
    key, key_start = _key_name(match)
    if value.lower() == key.lower():  # f(token=token): code, not a secret
        return match.group(0)
    if _PATH.match(value) and key.lower().replace("-", "_").endswith(_PATH_KEYS):
        return match.group(0)
    if not match.group("quote") and match.group("op") == ":" and not _CREDENTIAL_LIKE.search(value):
        return match.group(0)
    start, end = match.span("quoted" if match.group("quote") else "bare")
    base = match.start()
    if not match.group("quote") and "&" in value and key_start and match.string[key_start - 1] in "?&":
        end = start + value.index("&")  # a URL's query: the next parameter is not part of the value
    text = match.group(0)
    return text[: start - base] + marker(_key_kind(key)) + text[end - base :]


def _url_password(match: re.Match[str]) -> str:
    if match.group(2).startswith(MARKER_PREFIX) or not match.group(2).strip("*"):  # masked already
        return match.group(0)
    return match.group(1) + marker("url-password")


def _bearer(match: re.Match[str]) -> str:
    return match.group(1) + marker("bearer-token")


def _whole(kind: str) -> Callable[[re.Match[str]], str]:
    text = marker(kind)
    return lambda match: text


# (pattern, replacement, whether the text can hold it). Order matters: a private-key block goes
# first (its body is base64 that other patterns would cut into pieces), the key=value rule last
# (its value may already be a marker, which it leaves alone).
_RULES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str], Callable[[str, str], bool]], ...] = (
    (_PRIVATE_KEY, _whole("private-key"), lambda text, low: "PRIVATE KEY" in text),
    (_URL_PASSWORD, _url_password, lambda text, low: "://" in text),
    (_JWT, _whole("jwt"), lambda text, low: "eyJ" in text),
    (_GITHUB, _whole("github-token"), lambda text, low: any(n in text for n in _UNDERSCORE_NEEDLES[:6])),
    (_SK, _whole("api-key"), lambda text, low: "sk-" in text or "sk_" in text),
    (_AWS_KEY_ID, _whole("aws-access-key-id"), lambda text, low: "AKIA" in text or "ASIA" in text),
    (_BEARER, _bearer, lambda text, low: "bearer" in low),
    (_CARD, _card, lambda text, low: _DIGITS.search(text) is not None),
    (_KEY_VALUE, _key_value, lambda text, low: any(n in low for n in _KEY_NEEDLES)),
)


# Short strings repeat (tags, names, types, statuses, dates in a page of DTOs): their answer is
# remembered, which halves masking a page of a hundred event rows.
_SHORT = 64
_SHORT_CACHE: dict[str, str] = {}
_SHORT_CACHE_MAX = 8192


def redact_text(text: str) -> str:
    """``text`` with every recognised secret replaced by its marker (``text`` itself when none)."""
    if not text or not isinstance(text, str):
        return text
    if len(text) <= _SHORT:
        known = _SHORT_CACHE.get(text)
        if known is None:
            if len(_SHORT_CACHE) >= _SHORT_CACHE_MAX:
                _SHORT_CACHE.clear()
            known = _SHORT_CACHE[text] = _redact(text)
        return text if known == text else known
    return _redact(text)


def _redact(text: str) -> str:
    lowered = text.lower()
    if not _may_hold_secret(text, lowered):
        return text
    for pattern, replace, wanted in _RULES:
        if wanted(text, lowered):  # the original's words: a marker adds none a later rule looks for
            text = pattern.sub(replace, text)
    return text


def redact_value(value: Any) -> Any:
    """``value`` with ``redact_text`` applied to every string inside it: dataclasses (frozen or
    not, rebuilt only where a field changed), dicts, lists and tuples (named tuples too). Anything
    else is returned as it is."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        out = {key: redact_value(item) for key, item in value.items()}
        return value if all(out[key] is item for key, item in value.items()) else out
    if isinstance(value, (list, tuple)):
        items = [redact_value(item) for item in value]
        if all(a is b for a, b in zip(items, value)):
            return value  # nothing to mask: the same object, so a DTO holding it is not rebuilt
        if isinstance(value, list):
            return items
        return type(value)._make(items) if hasattr(value, "_make") else type(value)(items)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = _INIT_FIELDS.get(type(value))
        if names is None:
            names = _INIT_FIELDS[type(value)] = tuple(f.name for f in dataclasses.fields(value) if f.init)
        changed = {}
        for name in names:
            current = getattr(value, name)
            redacted = redact_value(current)
            if redacted is not current:
                changed[name] = redacted
        return dataclasses.replace(value, **changed) if changed else value
    return value


_INIT_FIELDS: dict[type, tuple[str, ...]] = {}


def mask_secret(text: str, secret: str, *, min_chars: int = 8) -> str:
    """``text`` without ``secret``, whole or begun: every occurrence, and any run of token
    characters that starts with its first ``min_chars`` characters (an echo cut short), becomes
    ``[REDACTED:api-key]``; then the other patterns run. A secret shorter than ``min_chars`` is
    no secret worth masking (it would mask common letters)."""
    if not text:
        return text
    if secret and len(secret) >= min_chars:
        text = text.replace(secret, marker("api-key"))
        head = secret[:min_chars]
        if head in text:
            text = re.sub(re.escape(head) + r"[^\s\"'<>]*", marker("api-key"), text)
    return redact_text(text)


class RedactingFilter(logging.Filter):
    """A logging filter that masks secrets in a record's message and traceback before any
    handler formats it (an exception's text may quote a request, a URL or a tool argument)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = redact_text(message)
        if masked is not message:
            record.msg, record.args = masked, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info))
        return True


__all__ = ["MARKER_PREFIX", "RedactingFilter", "marker", "mask_secret", "redact_text", "redact_value"]
