"""Check a compiled config against the schema derived from the running NeMo-RL's source.

Typing is lax like pydantic's ("3" is an int); unknown keys warn (NeMo-RL keeps them). Keys
upstream's example configs set (`shipped`) are accepted unchecked; where nothing validates the
config (v0.6.0's TypedDicts) so are their nulls (`shipped_null`), nulls the code handles
(`none_ok`), and a required key read only on a branch an example skips (`gated`: a warning).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from catalog.did_you_mean import close_matches
from catalog.errors import WARNING, Finding
from catalog.nemo_rl_version import in_range, pin_version
from runners.nemo_rl.schema.gym_script import GYM_DATA_CLASS, gym_data_classes
from runners.nemo_rl.schema.store import Schema, cached_schema_for
from runners.preflight import PreflightContext, rule
from runners.preflight.basics import missing_sections
from runners.preflight.schema_types import as_bool, describe, lax_ok, literal_ok, shape_matches
from runners.preflight.topology import (
    UNRESOLVED,
    algorithm,
    config_location,
    generation,
    uses_gym,
    where,
)

OWN_SECTIONS = {"run"}  # our own top-level section, stripped before exec
# Sections NeMo-RL hands whole to a library (WandbLogger: `wandb.init(**cfg)` in 0.6.0, 0.7.0 and
# the pin): that library's keyword arguments are read though no TypedDict declares them.
PASSED_ON = {
    "logger.wandb": frozenset(
        {"id", "resume", "group", "tags", "notes", "mode", "job_type", "config", "save_code",
         "resume_from", "fork_from", "settings", "reinit", "allow_val_change"}
    ),
}  # fmt: skip
LIST_INDEX = re.compile(r"\[\d+\]")  # shipped keys are recorded with list items as `[]`
# dict[str, str] sections whose values upstream passes through str() before use, so any scalar
# works (`VLLM_USE_RAY_V2_EXECUTOR_BACKEND: 1` in the pin's own recipes): vllm_generation.py
# v0.7.0:206-207, pin:217-218; pydantic never sees them (VllmConfig's fields are undeclared).
STRINGIFIED = {"policy.generation.vllm_cfg.env_vars"}
GENERATION_BACKENDS = {  # backend: (its config class, the versions that have it)
    "vllm": ("VllmConfig", "all"),
    "megatron": ("MCoreGenerationConfig", "all"),
    "sglang": ("SGLangConfig", "all"),
    "trtllm": ("TrtllmConfig", "pin"),  # grpo.py, RL#2420 (after the r0.7.0 branch)
    "dynamo": (None, "pin"),  # RL#3391
}


def run_schema(ctx: PreflightContext, algo: str | None = None) -> Schema | None:
    """The schema for this run's algorithm and NeMo-RL (derived or loaded once per process)."""
    algo = algo or algorithm(ctx)
    return None if algo is None else cached_schema_for(algo, ctx.nemo_rl_dir, ctx.nemo_rl_version)


def _hint(word: str, choices: Iterable[str]) -> str:
    near = close_matches(word, choices)
    return f" (did you mean {', '.join(repr(n) for n in near)}?)" if near else ""


class SchemaChecker:
    """Walks a config dict against one algorithm's schema, yielding findings with dotted keys."""

    def __init__(self, schema: dict, ctx: PreflightContext) -> None:
        self.classes: dict[str, dict] = schema["classes"]
        self.root: str = schema["root"]
        self.shipped: dict[str, dict[str, str]] = schema.get("shipped", {})
        self.nulls: dict[str, dict[str, str]] = schema.get("shipped_null", {})
        self.version = schema.get("upstream", {}).get("version") or "the pin"
        self.none_ok: dict[str, dict[str, str]] = schema.get("none_ok", {})
        self.validated = bool(schema.get("validated"))
        self.gated: dict[str, dict[str, str]] = {} if self.validated else schema.get("gated", {})
        self.ctx = ctx
        gym = schema.get("gym", {})
        self.gym_reads: dict[str, str] = {}
        if uses_gym(ctx) and gym.get("data"):
            self.gym_reads = gym["data"]
            self.classes, self.root = gym_data_classes(self.classes, self.root, gym)
        self._extras: dict[str, dict] = {}
        self._lenient = 0  # >0 inside subclass-only keys: types checked, presence not

    def finding(self, code: str, key: str, msg: str, fix: str, warn: bool = False) -> Finding:
        severity = WARNING if warn else "error"  # located in `located`, once kept
        return Finding(code, f"{key}: {msg}", None, None, fix, severity, key)

    def located(self, findings: Iterable[Finding]) -> list[Finding]:
        """The kept findings with the file:line that set their key (union trials skip this)."""
        out = []
        for f in findings:
            path, line = where(self.ctx, f.key)
            out.append(replace(f, path=path, line=line))
        return out

    def subclass_fields(self, name: str) -> dict:
        """Fields a subclass elsewhere in NeMo-RL adds (VllmConfig for GenerationConfig)."""
        if name not in self._extras:
            cls = self.classes[name]
            extra: dict = {}
            for sub in cls.get("subclasses", []):
                for fname, spec in self.classes.get(sub, {}).get("fields", {}).items():
                    if fname not in cls["fields"]:
                        extra.setdefault(fname, spec)
            self._extras[name] = extra
        return self._extras[name]

    def check_root(self, config: dict) -> list[Finding]:
        return self.located(self.check_class(config, self.root, "", top=True))

    def check(self, value: Any, t: dict, key: str) -> Iterator[Finding]:
        if isinstance(value, str) and value == UNRESOLVED:
            return  # reported by unresolved_values
        if value is None and self._shipped_null(key):
            return
        kind = t["t"]
        if kind == "ref":
            yield from self.check_class(value, t["name"], key)
        elif kind == "union":
            yield from self.check_union(value, t["options"], key)
        elif kind == "literal":
            if not literal_ok(value, t["values"]):
                yield self.type_error(key, value, t)
        elif kind == "list":
            if not isinstance(value, (list, tuple)):
                yield self.type_error(key, value, t)
            else:
                for i, item in enumerate(value):
                    yield from self.check(item, t["item"], f"{key}[{i}]")
        elif kind == "dict":
            if not isinstance(value, dict):
                yield self.type_error(key, value, t)
            elif t["value"]["t"] != "any" and LIST_INDEX.sub("[]", key) not in STRINGIFIED:
                for k, v in value.items():
                    yield from self.check(v, t["value"], f"{key}.{k}")
        elif not lax_ok(value, kind):
            yield self.type_error(key, value, t)

    def _shipped_null(self, key: str) -> bool:
        parent, _, leaf = LIST_INDEX.sub("[]", key).rpartition(".")
        return leaf in self.nulls.get(parent, {})

    def type_error(self, key: str, value: Any, t: dict) -> Finding:
        shown = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
        return self.finding(
            "E-SCHEMA-TYPE",
            key,
            f"expected {describe(t)}, got {shown}",
            f"set {key} to a value of type {describe(t)}",
        )

    def code_null(self, key: str, t: dict, handled: str) -> Iterator[Finding]:
        """A null the type refuses but the code handles (`none_ok`): refused only where pydantic
        validates the config at load (0.7.0+)."""
        if not self.validated or not any(self.check(None, t, key)):
            return
        yield self.finding(
            "E-SCHEMA-TYPE",
            key,
            f"expected {describe(t)}, got None: NeMo-RL {self.version} validates its config with "
            f"pydantic, which refuses None here before {handled} (which handles None) runs",
            f"set {key} to a value of type {describe(t)} (null is accepted only by NeMo-RL "
            "versions whose config is not validated, e.g. 0.6.0)",
        )

    def check_union(self, value: Any, options: list[dict], key: str) -> Iterator[Finding]:
        if isinstance(value, dict):
            refs = [o for o in options if o["t"] == "ref" and "enabled" in self._fields(o)]
            if refs:  # an enabled: true/false union: pick the branch by `enabled`
                if "enabled" not in value:
                    yield self.finding(
                        "E-SCHEMA-KEY",
                        f"{key}.enabled",
                        "required key is missing",
                        f"add {key}.enabled (true or false)",
                    )
                    return
                for o in refs:
                    lit = self._fields(o)["enabled"]["type"]
                    if lit["t"] != "literal" or literal_ok(
                        as_bool(value["enabled"]), lit["values"]
                    ):
                        # keys of the enabled branch left under enabled: false are fine
                        known = {k for r in refs for k in self._fields(r)}
                        yield from self.check_class(value, o["name"], key, also_known=known)
                        return
        best: list[Finding] | None = None
        for o in options:
            found = list(self.check(value, o, key))
            errors = sum(f.is_error for f in found)
            if errors == 0 and (best is None or len(found) < len(best)):
                best = found
                if not found:
                    break
        if best is not None:
            yield from best
            return
        shaped = [o for o in options if shape_matches(value, o)]
        if len(shaped) == 1:
            yield from self.check(value, shaped[0], key)
        else:
            yield self.type_error(key, value, {"t": "union", "options": options})

    def missing(
        self,
        key: str,
        fname: str,
        spec: dict,
        name: str,
        present: list[str],
        also: list[str] | None = None,
    ) -> Finding:
        """A required key the config lacks (read only on a branch: a warning before 0.7.0)."""
        dotted = f"{key}.{fname}" if key else fname
        fix = f"add {dotted} ({describe(spec['type'])})"
        source = self.gym_reads.get(fname) or self.classes[name]["source"]
        branch = self.gated.get(LIST_INDEX.sub("[]", key), {}).get(fname)
        if branch:
            return self.finding(
                "W-SCHEMA-BRANCH-KEY",
                dotted,
                f"required key is missing ({name}, {source}); NeMo-RL {self.version} does not "
                f"validate its config and reads it only on one branch ({branch}), which an "
                "upstream example config leaves out too: a KeyError if this run takes it",
                fix,
                warn=True,
            )
        if name == GYM_DATA_CLASS and fname in self.gym_reads:
            more = "".join(f", {key}.{k} at {self.gym_reads[k]}" for k in also or [])
            where = f"the NeMo-Gym script of NeMo-RL {self.version} reads it at {source}{more}"
            where += ": a KeyError before training starts"
        else:
            where = f"{name}, {source}"
        return self.finding(
            "E-SCHEMA-KEY",
            dotted,
            f"required key is missing ({where}){_hint(fname, present)}",
            fix,
        )

    def _fields(self, ref: dict) -> dict:
        return self.classes.get(ref["name"], {}).get("fields", {})

    def check_class(
        self,
        value: Any,
        name: str,
        key: str,
        top: bool = False,
        also_known: set[str] | frozenset[str] = frozenset(),
    ) -> Iterator[Finding]:
        cls = self.classes.get(name)
        if cls is None:
            return
        if cls["kind"] == "enum":
            if value not in cls["values"]:
                yield self.type_error(key, value, {"t": "literal", "values": cls["values"]})
            return
        if not isinstance(value, dict):
            yield self.type_error(key, value, {"t": "ref", "name": name})
            return
        fields: dict = cls["fields"]
        also_known = also_known | PASSED_ON.get(key, frozenset())
        extra = self.subclass_fields(name)
        prefix = f"{key}." if key else ""
        present = [k for k in value if k not in fields]
        script_keys: list[str] = []
        for fname, spec in fields.items():
            handled = self.none_ok.get(name, {}).get(fname)
            if fname in value and value[fname] is None and handled:
                yield from self.code_null(prefix + fname, spec["type"], handled)
            elif fname in value:
                yield from self.check(value[fname], spec["type"], prefix + fname)
            elif name == GYM_DATA_CLASS and fname in self.gym_reads:
                script_keys.append(fname)
            elif spec["required"] and not self._lenient:
                yield self.missing(key, fname, spec, name, present)
        if script_keys:  # one data section the script cannot read: one finding
            first = script_keys[0]
            yield self.missing(key, first, fields[first], name, present, also=script_keys[1:])
        shipped = self.shipped.get(LIST_INDEX.sub("[]", key), {})
        for k in present:
            if (top and k in OWN_SECTIONS) or k in also_known or k in shipped:
                continue
            if k in extra:
                self._lenient += 1
                try:
                    yield from self.check(value[k], extra[k]["type"], prefix + k)
                finally:
                    self._lenient -= 1
                continue
            found = self.unknown(prefix + k, k, name, [*fields, *extra, *shipped])
            if found is not None:
                yield found

    def unknown(self, dotted: str, leaf: str, name: str, declared: list[str]) -> Finding | None:
        """E-SCHEMA-TYPO for a key an edit or two from a declared one (key_typos.py), else
        W-SCHEMA-UNKNOWN; nothing for a key kept on purpose (run.keep_keys)."""
        from runners.preflight.key_typos import KEEP, TYPO, kept, typo

        near = typo(self.ctx, dotted, leaf, declared)
        keep = f"or list it in {KEEP} to keep it on purpose"
        if near is not None:
            return self.finding(
                TYPO,
                dotted,
                f"not a key {name} declares (did you mean '{near}'?); NeMo-RL keeps it unread, so "
                f"'{near}' keeps the value set elsewhere",
                f"rename it to '{near}', {keep}",
            )
        if kept(self.ctx, dotted):
            return None
        return self.finding(
            "W-SCHEMA-UNKNOWN",
            dotted,
            f"not a key {name} declares nor one NeMo-RL's example configs set here in NeMo-RL"
            f" {self.version}; NeMo-RL keeps it, but likely nothing reads it"
            f"{_hint(leaf, declared)}",
            f"fix the spelling, remove the key, {keep}",
            warn=True,
        )


@rule("nemo_rl_schema")
def nemo_rl_schema(ctx: PreflightContext) -> Iterable[Finding]:
    """Required keys, types and enabled unions of the running NeMo-RL's MasterConfig."""
    algo = algorithm(ctx)
    if algo is None:
        return []
    found = run_schema(ctx, algo)
    if found is None:
        return [
            Finding(
                "W-SCHEMA-MISSING",
                f"no NeMo-RL schema for algorithm {algo!r}",
                fix="pass --nemo-rl <checkout> so the schema is derived from its source",
                severity=WARNING,
            )
        ]
    gone = set(missing_sections(ctx))  # required_sections reports those, once
    return [
        f
        for f in SchemaChecker(found.doc, ctx).check_root(ctx.config)
        if (f.key or "").split(".", 1)[0] not in gone
    ]


@rule("generation_backend")
def generation_backend(ctx: PreflightContext) -> Iterable[Finding]:
    """E-GEN-BACKEND: a known generation backend whose own config keys are all present."""
    algo = algorithm(ctx)
    gen = generation(ctx)
    if algo != "grpo" or not gen or gen.get("backend") in (None, UNRESOLVED):
        return []
    backend = gen["backend"]
    version = ctx.nemo_rl_version
    known = [b for b, (_, since) in GENERATION_BACKENDS.items() if in_range(version, since)]
    if backend not in known:
        since = GENERATION_BACKENDS.get(backend, (None, ""))[1]
        newer = f" it needs NeMo-RL {pin_version().label} or newer;" if since == "pin" else ""
        return [
            Finding(
                "E-GEN-BACKEND",
                f"policy.generation.backend: unknown backend {backend!r}{newer} this run's "
                f"NeMo-RL is {version.label if version else 'the pin'}"
                f"{_hint(str(backend), known)}",
                config_location(ctx),
                fix=f"use one of {', '.join(known)}",
                key="policy.generation.backend",
            )
        ]
    cls = GENERATION_BACKENDS[backend][0]
    found = run_schema(ctx, algo)
    schema = found.doc if found else None
    if cls is None or schema is None or cls not in schema["classes"]:
        return []
    checker = SchemaChecker(schema, ctx)
    base = schema["classes"].get("GenerationConfig", {}).get("fields", {})
    kept = []
    for f in checker.check_class(gen, cls, "policy.generation"):
        name = (f.key or "").removeprefix("policy.generation.")
        if f.code != "E-SCHEMA-KEY" or "." in name or name in base:
            continue  # GRPO writes model_name; GenerationConfig's own keys are nemo_rl_schema's
        kept.append(f)
    said = f"{backend} needs this key"
    return [  # file:line only for what is reported
        replace(f, code="E-GEN-BACKEND", message=f.message.replace("required key is missing", said))
        for f in checker.located(kept)
    ]
