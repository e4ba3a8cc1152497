"""Secrets in Hydra overrides (`++hf_token=...` in a pipeline stage): kept off command lines.

The literal value at or under a secret-named key (`hf_token`, `credentials.aws`), or a
token-shaped value under any key, moves into the child's environment: the command line says
`key=${oc.env:STEPS_SECRET_<KEY>}` (a string) or `key='${oc.decode:${oc.env:...}}'` (a list,
mapping or number, keeping its type); a secret environment variable's value inside an override
becomes `${oc.env:<VAR>}`. So `ps`, logs and records only show references NeMo-RL resolves.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from runners.rundir import SECRET_VAR_PREFIX
from runners.secrets import (
    has_token,
    is_secret_key,
    is_secret_path,
    is_switch,
    names_secret_key,
    secret_values,
)

_MIN_LEN = 4  # as runners.secrets: shorter values would redact ordinary text
_NUMBER = re.compile(r"^[-+]?(\d[\d_]*)?\.?\d[\d_]*([eE][-+]?\d+)?$")


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


def _secret(key: str, value: str) -> tuple[str, bool] | None:
    """(what travels in the environment, whether the child decodes it) for a value to move:
    a secret key's literal that is not a switch, or a token-shaped literal; else None."""
    raw = value.strip()
    if "${" in raw:
        return None
    literal = _literal(raw)
    if is_secret_path(key) and not is_switch(literal if literal is not None else raw):
        if literal is None or (literal == raw and _NUMBER.match(raw)):
            return (raw, True) if raw not in ("", "null") else None
        return literal, False
    return (literal, False) if literal is not None and has_token(literal) else None


def _leaves(value: Any, secret: bool) -> Iterable[str]:
    """The scalars at or under a secret key in a parsed override value."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, secret or is_secret_key(str(k)))
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v, secret)
    elif secret and value is not None and not isinstance(value, bool):
        yield str(value)


def secret_var(key: str) -> str:
    """The environment variable a secret override's value travels in."""
    return SECRET_VAR_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", key).upper()


def override_secrets(overrides: Iterable[str]) -> dict[str, str]:
    """Secret value -> a name for it, for every value a secret override holds (a list's or
    mapping's items too, `logger.wandb={api_key: ..}`), for `redact_text`."""
    from catalog.errors import StepsError
    from runners.config.overrides import parse_overrides

    out: dict[str, str] = {}
    for token in overrides:
        parts = _split(token)
        if parts is None:
            continue
        moved = _secret(parts[1], parts[2])
        leaves = [moved[0]] if moved is not None and not moved[1] else []
        if (moved is not None and moved[1]) or (
            "${" not in parts[2] and names_secret_key(parts[2])
        ):
            try:
                parsed = parse_overrides([token])[0].value()
                leaves = list(_leaves(parsed, is_secret_path(parts[1])))
            except (StepsError, ValueError):
                leaves = []  # a syntax error's message is redacted where it is raised
        for leaf in leaves:
            if len(leaf) >= _MIN_LEN:
                out[leaf] = secret_var(parts[1])
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
        moved = _secret(key, value)
        if moved is not None:
            var = secret_var(key)
            extra[var] = moved[0]
            ref = f"${{oc.env:{var}}}"
            safe.append(f"{head}='${{oc.decode:{ref}}}'" if moved[1] else f"{head}={ref}")
            continue
        for secret in sorted(values, key=len, reverse=True):
            if secret in value:
                value = value.replace(secret, "${oc.env:" + values[secret] + "}")
        safe.append(f"{head}={value}")
    return safe, extra
