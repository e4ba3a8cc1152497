"""Override tokens read with Hydra's own grammar, as NeMo-RL's scripts read their argv.

`a.b=v` changes a key, `+a.b=v` adds one, `++a.b=v` adds or changes, `~a.b` deletes. The
compiler, binding and planning all ask here which key a token touches (`a.b='x=y'`: `a.b`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

from catalog.errors import StepsError

SYNTAX_FIX = (
    "use key=value, +key=value, ++key=value or ~key; quote values that contain "
    "'=', ',', brackets, braces or '$' (e.g. key='a=b')"
)


def redacted(token: str, detail: str = "") -> tuple[str, str]:
    """The token as a message may quote it (a secret key's value as `***`), and `detail` (a
    parser's or OmegaConf's message about it) with no part of that value left in it."""
    from runners.secrets import redact_override

    shown = redact_override(token)
    if shown == token:
        return token, detail
    detail = detail.replace(token, shown)
    parts = re.findall(r"[A-Za-z0-9_\-]{4,}", token.partition("=")[2])
    if any(part in detail for part in parts):
        detail = "(the details quote the secret value; not shown)"
    return shown, detail


@functools.cache
def _visitor() -> Any:
    """Hydra's own visitor, but for lists: it asks the parse tree for element i with a scan of
    every child (`ctx.element(i)`), so a list of n elements cost n^2 (a 20k-element list took
    minutes); here the elements are taken in one pass, the same values in the same order."""
    from hydra._internal.grammar.functions import Functions
    from hydra.core.override_parser.overrides_parser import create_functions
    from hydra.core.override_parser.overrides_visitor import HydraOverrideVisitor
    from hydra.grammar.gen.OverrideParser import OverrideParser

    class LinearListVisitor(HydraOverrideVisitor):
        def visitListContainer(self, ctx: Any) -> list:
            elements = ctx.getTypedRuleContexts(OverrideParser.ElementContext)
            return [self.visitElement(e) for e in elements]

    functions: Functions = create_functions()
    return LinearListVisitor(functions)


def _hydra_parse(token: str) -> Any:
    """One override token through Hydra's grammar (its lexer, parser and error listener, as
    `OverridesParser.parse_override` runs them), read by `_visitor`."""
    from antlr4 import CommonTokenStream, InputStream
    from hydra.core.override_parser.overrides_visitor import HydraErrorListener
    from hydra.core.override_parser.types import Override
    from hydra.grammar.gen.OverrideLexer import OverrideLexer
    from hydra.grammar.gen.OverrideParser import OverrideParser

    listener = HydraErrorListener()
    lexer = OverrideLexer(InputStream(token))
    lexer.removeErrorListeners()
    lexer.addErrorListener(listener)
    parser = OverrideParser(CommonTokenStream(lexer))
    parser.removeErrorListeners()
    parser.addErrorListener(listener)
    parsed = _visitor().visit(parser.override())
    assert isinstance(parsed, Override)
    parsed.input_line = token
    parsed.validate()
    return parsed


def first_line(exc: BaseException) -> str:
    """An exception's first line (its type's name when it says nothing): one line per finding."""
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


class OverrideError(StepsError):
    """One override token that cannot be parsed or applied (exit 2); `token` is it as typed, so
    a run can report it and go on judging the config without it (runners.run.plan_run)."""

    def __init__(self, token: str, code: str, message: str, **kw: Any) -> None:
        super().__init__(code, message, exit_code=2, **kw)
        self.token = token


@functools.lru_cache(maxsize=1024)
def _parse_one(token: str) -> Any:
    from hydra.errors import HydraException

    try:
        return _hydra_parse(token)
    except HydraException as exc:
        shown, first = redacted(token, first_line(exc))
        raise OverrideError(
            token, "E-OVERRIDE-SYNTAX", f"cannot parse override '{shown}': {first}", fix=SYNTAX_FIX
        ) from None


def parse_overrides(tokens: Iterable[str]) -> list[Any]:
    """Hydra `Override` objects, one per token (shared: read only; the last lists are kept,
    so 50k overrides are parsed once); E-OVERRIDE-SYNTAX names a token Hydra rejects."""
    return list(_parse_all(tuple(tokens)))


@functools.lru_cache(maxsize=4)
def _parse_all(tokens: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(_parse_one(t) for t in tokens)


def override_keys(tokens: Iterable[str]) -> list[str]:
    """The dotted key each token sets, adds or deletes."""
    return [o.key_or_group for o in parse_overrides(tokens)]


def setting_override(tokens: Iterable[str], dotted: str) -> str | None:
    """The token that sets `dotted` or a section holding it (the last one wins), if any."""
    tokens = list(tokens)
    found = None
    for token, key in zip(tokens, override_keys(tokens), strict=True):
        if dotted == key or dotted.startswith(key + "."):
            found = token
    return found
