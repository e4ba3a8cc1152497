"""Keep secrets out of everything we print or save (run dir, dry-run output, run.json, errors).

Environment variables: a name is secret when any of its words (split at `_`, `-`, `.` and
camelCase) is a secret word (`HF_TOKEN`); words, not substrings, so NCCL_IB_PKEY and
TOKENIZERS_PARALLELISM are settings. Config keys are stricter, since NeMo-RL's configs are full
of `*_key` and `*_token` data fields (`input_key`, `pad_token`): a key is secret when its name
ends in a credential word or is `<kind>_key` for a key kind (`wandb_api_key`, not `cache_key`);
no key of any upstream NeMo-RL config is. Everything under a secret key is redacted, bools and
nulls and a whole-value switch (`HF_HUB_DISABLE_TOKEN=1`) excepted. A token-shaped string and a
secret variable's value are redacted under any name.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

REDACTED = "***"
SECRET_WORDS = {
    "token", "key", "secret", "password", "passwd", "pass", "apikey", "credential", "credentials"
}  # fmt: skip
# Values a setting has, never a credential: a secret-named variable holding one is a switch.
SWITCH_VALUES = {"", "0", "1", "true", "false", "yes", "no", "on", "off"}
_MIN_SECRET_LEN = 4  # shorter values (`1`, `yes`) would redact ordinary strings

# Config keys: a credential as the name's last word, or `<qualifier>_key` for the key kinds.
_CREDENTIAL_WORDS = {
    "token", "apikey", "secret", "secrets", "password", "passwd", "passphrase", "credential",
    "credentials", "auth",
}  # fmt: skip
_KEY_QUALIFIERS = {
    "api", "access", "secret", "private", "ssh", "signing", "encryption", "license", "client",
    "account", "service", "master", "auth",
}  # fmt: skip
# `<word>_token` names a tokenizer's special token, not a credential.
_TOKENIZER_WORDS = {
    "pad", "eos", "bos", "unk", "mask", "sep", "cls", "stop", "start", "end", "image", "video",
    "audio", "think", "eot", "eom", "special", "placeholder", "boi", "eoi", "vision", "tool",
    "chat", "begin", "system", "user", "assistant", "response", "prompt", "default", "first",
    "last", "next", "max", "min", "num", "per",
}  # fmt: skip
# Real credentials' shapes (Hugging Face, GitHub, OpenAI-style, NGC, AWS, Slack, GitLab): each
# a fixed prefix and a tail. The prefixes also let a long text with none of them (a JSON document
# of 1e5 findings) skip the pattern, which tries every position.
_TOKEN_TAILS = {
    "hf_": "[A-Za-z0-9]{30,}",
    **{f"gh{kind}_": "[A-Za-z0-9]{30,}" for kind in "pousr"},
    "github_pat_": r"\w{30,}",
    "sk-": "[A-Za-z0-9_-]{20,}",
    "nvapi-": "[A-Za-z0-9_-]{20,}",
    "AKIA": "[0-9A-Z]{16}",
    **{f"xox{kind}-": "[0-9A-Za-z-]{10,}" for kind in "abpr"},
    "glpat-": "[0-9A-Za-z_-]{20,}",
}
_TOKEN_SHAPE = re.compile(
    r"(?<![A-Za-z0-9_-])(?:"
    + "|".join(re.escape(prefix) + tail for prefix, tail in _TOKEN_TAILS.items())
    + r")(?![A-Za-z0-9_-])"
)


def _may_hold_token(text: str) -> bool:
    return any(prefix in text for prefix in _TOKEN_TAILS)


def _words(name: str) -> list[str]:
    if name.islower() and name.isascii() and name.replace("_", "").isalnum():
        return [w for w in name.split("_") if w]  # snake_case, most keys: no regex per key
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


@functools.lru_cache(maxsize=4096)  # a name's answer never changes: every command asks per variable
def is_secret_env(name: str) -> bool:
    """`HF_TOKEN`, `WANDB_API_KEY`, `DB_PASSWORD`: any word of the name is a secret word."""
    return any(w in SECRET_WORDS for w in _words(name))


def holds_secret(name: str, value: str) -> bool:
    """A secret-named variable with a credential in it (`HF_HUB_DISABLE_TOKEN=1` holds none)."""
    return is_secret_env(name) and value.strip().lower() not in SWITCH_VALUES


def is_secret_key(key: str) -> bool:
    """A config key (its last dotted part) named for a credential (`api_key`, `hf_token`)."""
    return _is_secret_name(str(key).rsplit(".", 1)[-1])


@functools.lru_cache(maxsize=4096)  # asked for every key of every config scrubbed or shown
def _is_secret_name(name: str) -> bool:
    words = _words(name)
    if not words:
        return False
    last, before = words[-1], (words[-2] if len(words) > 1 else "")
    if last == "key":
        return before in _KEY_QUALIFIERS
    if last == "token":
        return before not in _TOKENIZER_WORDS
    return last in _CREDENTIAL_WORDS


def is_secret_path(dotted: str) -> bool:
    """A dotted key at or under a secret key (`credentials.aws`, `logger.wandb.api_key`)."""
    return any(is_secret_key(part) for part in re.split(r"[.\[\]]+", str(dotted)) if part)


_INLINE_KEY = re.compile(r"[{,]\s*['\"]?([A-Za-z0-9_\-]+)['\"]?\s*:")


def names_secret_key(value: str) -> bool:
    """An override value that is a mapping with a secret key in it (`{api_key: abc}`)."""
    return any(is_secret_key(k) for k in _INLINE_KEY.findall(value))


def is_switch(value: Any) -> bool:
    """No credential: unset, `???`, a bool, or a switch value (`0`, `1`, `true`, `no`...)."""
    if value is None or isinstance(value, bool):
        return True
    return str(value).strip().lower() in SWITCH_VALUES or value == "???"


def has_token(value: str) -> bool:
    """The string holds something shaped like a real credential (`hf_...`, `ghp_...`, `sk-...`)."""
    return _may_hold_token(value) and bool(_TOKEN_SHAPE.search(value))


_OPAQUE = re.compile(r"^[A-Za-z0-9_\-]{32,}$")


def looks_like_secret(value: str) -> bool:
    """A known token prefix, or a long opaque string (a W&B key is 40 hex characters)."""
    v = value.strip()
    if has_token(v):
        return True
    if len(v) < 12 or any(c in v for c in "/ :.,"):
        return False
    if v.startswith(("hf_", "ghp_", "gho_", "github_pat_", "sk-", "xoxb-", "xoxp-", "AKIA")):
        return True
    return bool(_OPAQUE.match(v)) and any(c.isdigit() for c in v) and any(c.isalpha() for c in v)


def secret_values(env: Mapping[str, str]) -> dict[str, str]:
    """Value -> variable name for every secret-named environment variable with a real value."""
    return {v: k for k, v in env.items() if holds_secret(k, v) and len(v) >= _MIN_SECRET_LEN}


def mask(value: Any, top: bool = True) -> Any:
    """A secret key's value with every scalar `***`, but bools, nulls and a whole-value switch."""
    if isinstance(value, dict):
        return {k: mask(v, False) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask(v, False) for v in value]
    if value is None or isinstance(value, bool) or (top and is_switch(value)):
        return value
    return REDACTED


def redact(obj: Any, values: Mapping[str, str]) -> Any:
    """A copy of a plain container with secret keys' values and secret values replaced by `***`."""
    if isinstance(obj, dict):
        return {k: mask(v) if is_secret_key(str(k)) else redact(v, values) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact(v, values) for v in obj]
    if isinstance(obj, str):
        return redact_text(obj, values)
    return obj


def redact_text(text: str, values: Mapping[str, str]) -> str:
    """Replace every occurrence of a secret value, and anything token-shaped, inside a string."""
    for secret in sorted(values, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return _TOKEN_SHAPE.sub(REDACTED, text) if _may_hold_token(text) else text


def redact_override(token: str, values: Mapping[str, str] | None = None) -> str:
    """`++logger.wandb.api_key=abc` -> `++logger.wandb.api_key=***`, whatever the value's form;
    also under a secret key and for a mapping holding one (`logger.wandb={api_key: abc}`)."""
    head, sep, value = token.partition("=")
    secret = is_secret_path(head.lstrip("+~").strip()) or names_secret_key(value)
    if sep and secret and value.strip() not in ("", "null"):
        return f"{head}={REDACTED}"
    return redact_text(token, values or {})
