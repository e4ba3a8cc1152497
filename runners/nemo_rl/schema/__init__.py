"""NeMo-RL's config schema (its `MasterConfig`, a pydantic model from v0.7.0, a TypedDict before,
and the classes it nests), derived from a checkout's source with `ast`: importing it pulls in
torch, ray and transformers. Added: what upstream's examples prove (`shipped`), what its code
reads (`key_reads`) and what the NeMo-Gym script reads (`gym_script`). `store` caches it per
commit; `runners.preflight.schema` checks configs against it.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from catalog.errors import StepsError
from catalog.upstream import NEMO_RL_REPO
from runners.nemo_rl.schema.builder import SchemaBuilder
from runners.nemo_rl.schema.code_reads import CodeReads, reachable
from runners.nemo_rl.schema.gym_script import gym_entry
from runners.nemo_rl.schema.key_reads import gated_required, key_tables
from runners.nemo_rl.schema.shipped import load_examples, resolved_example, shipped_keys
from runners.nemo_rl.schema.source import SourceIndex

ROOTS = {
    "grpo": ("nemo_rl.algorithms.grpo", "MasterConfig"),
    "dpo": ("nemo_rl.algorithms.dpo", "MasterConfig"),
}
# The example script each algorithm runs: it reads the config too (`policy["draft"]` at
# examples/run_grpo.py:104 in v0.7.0), after the same validation.
SCRIPTS = {"grpo": "examples.run_grpo", "dpo": "examples.run_dpo"}
GENERATOR = "runners.nemo_rl.schema"


def has_source(checkout: Path | None, algorithm: str) -> bool:
    """Whether a folder holds the module a schema for `algorithm` is derived from."""
    if checkout is None or algorithm not in ROOTS:
        return False
    return (checkout / (ROOTS[algorithm][0].replace(".", "/") + ".py")).is_file()


def derive(
    checkout: Path,
    algorithms: tuple[str, ...] = tuple(ROOTS),
    upstream: dict | None = None,
) -> dict[str, dict]:
    """The schema document of each algorithm's MasterConfig; `upstream` describes the source
    (commit, version) and is recorded as given. Raises E-SCHEMA-DERIVE when a root is absent."""
    checkout = checkout.resolve()
    index = SourceIndex(checkout)
    docs = load_examples(checkout)
    generated = dt.datetime.now(dt.timezone.utc).date().isoformat()
    out = {}
    for algorithm in algorithms:
        modname, cls = ROOTS[algorithm]
        mod = index.module(modname)
        if mod is None or cls not in mod.classes:
            raise StepsError(
                "E-SCHEMA-DERIVE",
                f"{checkout}: {modname}.{cls} not found; is this a NeMo-RL checkout?",
                path=str(checkout),
                fix="point --nemo-rl at the root of a NeMo-RL checkout (it holds nemo_rl/)",
                exit_code=2,
            )
        builder = SchemaBuilder(index)
        root = builder.class_key(modname, cls)
        builder.drain()
        builder.add_subclasses()
        classes = dict(sorted(builder.classes.items()))
        shipped, nulls = shipped_keys(checkout, docs, algorithm, classes, root)
        facts = CodeReads(builder)
        for name in [*reachable(index, modname), SCRIPTS[algorithm]]:
            found = index.module(name)
            if found is not None:
                rel = found.path.relative_to(checkout).as_posix()
                facts.module(found, rel, script=name == SCRIPTS[algorithm])
        examples = [e for e in (resolved_example(p, docs) for p in docs) if algorithm in e]
        reads, none_ok = key_tables(facts, classes, root, algorithm, examples)
        gated = gated_required(facts, classes, root, algorithm, examples)
        out[algorithm] = {
            "algorithm": algorithm,
            "root": root,
            "upstream": {
                "repo": NEMO_RL_REPO,
                **(upstream or {}),
                "generated": generated,
                "generator": GENERATOR,
            },
            "validated": classes[root]["kind"] == "model",
            "classes": classes,
            "shipped": shipped,
            "shipped_null": nulls,
            "reads": reads,
            "none_ok": none_ok,
            "gated": gated,
        }
        if algorithm == "grpo":
            out[algorithm]["gym"] = gym_entry(checkout, facts, classes, root)
    return out
