"""Secrets in Hydra overrides (`++hf_token=...` in a pipeline stage): kept off command lines.

`runners.secrets` decides what is secret and redacts what we print or save; this module applies
it to override tokens that must reach a child process. A secret-named key's literal value is
moved into the child's environment (`key=${oc.env:STEPS_SECRET_<KEY>}` on the command line), and
the value of a secret environment variable inside an override becomes `${oc.env:<VAR>}`, so
`ps`, logs and records only ever show the reference. NeMo-RL resolves both as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from runners.rundir import SECRET_VAR_PREFIX
from runners.secrets import is_secret_key, secret_values

_MIN_LEN = 4  # as runners.secrets: shorter values would redact ordinary text


def _split(token: str) -> tuple[str, str, str] | None:
    """(head with its +/~ prefix, key, value) of `key=value`, or None for `~key`."""
    head, sep, value = token.partition("=")
    return (head, head.lstrip("+~"), value) if sep else None


def _literal(value: str) -> str | None:
    """The string a Hydra override value stands for, or None when it is not a plain literal
    (an interpolation, null, a list or a dict)."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    if not value or value == "null" or value[0] in "[{" or "${" in value:
        return None
    return value


def secret_var(key: str) -> str:
    """The environment variable a secret override's value travels in."""
    return SECRET_VAR_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", key).upper()


def override_secrets(overrides: Iterable[str]) -> dict[str, str]:
    """Secret value -> a name for it, for every secret-named override with a literal value
    (what `redact_text` needs to find the value wherever else it appears)."""
    out: dict[str, str] = {}
    for token in overrides:
        parts = _split(token)
        if parts and is_secret_key(parts[1]):
            value = _literal(parts[2])
            if value is not None and len(value) >= _MIN_LEN:
                out[value] = secret_var(parts[1])
    return out


def known_secrets(env: Mapping[str, str], overrides: Iterable[str] = ()) -> dict[str, str]:
    """Every secret value to redact: secret environment variables and secret overrides."""
    return {**secret_values(env), **override_secrets(overrides)}


def move_secrets(overrides: Iterable[str], env: Mapping[str, str]) -> tuple[list[str], dict]:
    """(overrides safe for a command line, environment variables the child needs for them)."""
    values = secret_values(env)
    safe: list[str] = []
    extra: dict[str, str] = {}
    for token in overrides:
        parts = _split(token)
        if parts is None:
            safe.append(token)
            continue
        head, key, value = parts
        literal = _literal(value)
        if is_secret_key(key) and literal:
            var = secret_var(key)
            extra[var] = literal
            safe.append(f"{head}=${{oc.env:{var}}}")
            continue
        for secret in sorted(values, key=len, reverse=True):
            if secret in value:
                value = value.replace(secret, "${oc.env:" + values[secret] + "}")
        safe.append(f"{head}={value}")
    return safe, extra
