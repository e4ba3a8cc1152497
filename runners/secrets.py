"""Keep secrets out of everything we print or save (run dir, dry-run output, run.json).

A name is secret when one of its WORDS (split at `_`, `-`, `.` and camelCase) is TOKEN, KEY,
SECRET, PASSWORD, PASS... and it does not read as a data field (`input_key`, `max_new_tokens`,
`stop_token_ids` are not secrets). Words, not substrings: NCCL_IB_PKEY, TOKENIZERS_PARALLELISM and
KEYTAB_PATH are settings. For environment variables any such word counts (`HF_TOKEN`,
`AWS_SECRET_ACCESS_KEY`); for config keys the LAST word must be one (`api_key`, `hf_token`), so
`input_key: problem` stays readable. A secret-named variable whose value is a switch (`0`, `1`,
`true`, `no`...) holds no credential (`HF_HUB_DISABLE_TOKEN=1`): it travels as a plain setting.
Any resolved string equal to a secret environment variable's value is redacted too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REDACTED = "***"
SECRET_WORDS = {
    "token", "key", "secret", "password", "passwd", "pass", "apikey", "credential", "credentials"
}  # fmt: skip
# Values a setting has, never a credential: a secret-named variable holding one is a switch.
SWITCH_VALUES = {"", "0", "1", "true", "false", "yes", "no", "on", "off"}
# Config-key words that name a data field, not a credential (`input_key`, `prompt_key`).
_FIELD_KEYS = re.compile(
    r"(input|output|prompt|chosen|rejected|label|text|answer|question|sort|metric|type|"
    r"dataset|column|message|image|video|audio|response|reference|env|name|cache|primary)_key$",
    re.IGNORECASE,
)
_MIN_SECRET_LEN = 4  # shorter values (`1`, `yes`) would redact ordinary strings


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def is_secret_env(name: str) -> bool:
    """`HF_TOKEN`, `WANDB_API_KEY`, `DB_PASSWORD`: any word of the name is a secret word."""
    return any(w in SECRET_WORDS for w in _words(name))


def holds_secret(name: str, value: str) -> bool:
    """A secret-named variable with a credential in it (`HF_HUB_DISABLE_TOKEN=1` holds none)."""
    return is_secret_env(name) and value.strip().lower() not in SWITCH_VALUES


def is_secret_key(key: str) -> bool:
    """A config key whose last word names a credential (`api_key`, `hf_token`, `password`)."""
    leaf = str(key).rsplit(".", 1)[-1]
    words = _words(leaf)
    return bool(words) and words[-1] in SECRET_WORDS and not _FIELD_KEYS.search(leaf)


_TOKEN_PREFIXES = ("hf_", "ghp_", "gho_", "github_pat_", "sk-", "xoxb-", "xoxp-", "AKIA", "nvapi-")
_OPAQUE = re.compile(r"^[A-Za-z0-9_\-]{32,}$")


def looks_like_secret(value: str) -> bool:
    """A value shaped like a credential: a known token prefix, or a long opaque string
    (a W&B key is 40 hex characters); paths, URLs and words are not."""
    v = value.strip()
    if len(v) < 12 or any(c in v for c in "/ :.,"):
        return False
    if v.startswith(_TOKEN_PREFIXES):
        return True
    return bool(_OPAQUE.match(v)) and any(c.isdigit() for c in v) and any(c.isalpha() for c in v)


def secret_values(env: Mapping[str, str]) -> dict[str, str]:
    """Value -> variable name for every secret-named environment variable with a real value."""
    return {v: k for k, v in env.items() if holds_secret(k, v) and len(v) >= _MIN_SECRET_LEN}


def redact(obj: Any, values: Mapping[str, str], key: str = "") -> Any:
    """A copy of a plain container with secret keys and secret values replaced by `***`."""
    if isinstance(obj, dict):
        return {
            k: (REDACTED if is_secret_key(str(k)) and _set(v) else redact(v, values, str(k)))
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [redact(v, values, key) for v in obj]
    if isinstance(obj, str):
        return redact_text(obj, values)
    return obj


def _set(value: Any) -> bool:
    return value not in (None, "", "???") and not isinstance(value, (dict, list, bool))


def redact_text(text: str, values: Mapping[str, str]) -> str:
    """Replace every occurrence of a secret value inside a string."""
    for secret in sorted(values, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact_override(token: str, values: Mapping[str, str]) -> str:
    """`++logger.wandb.api_key=abc` -> `++logger.wandb.api_key=***` (and secret values inside)."""
    if "=" in token:
        head, _, value = token.partition("=")
        if is_secret_key(head.lstrip("+~")) and value not in ("", "null"):
            return f"{head}={REDACTED}"
    return redact_text(token, values)
