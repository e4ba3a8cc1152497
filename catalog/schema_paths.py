"""Questions about a NeMo-RL schema document (`catalog/schema/nemo_rl/`) by dotted config path,
e.g. `policy.generation.top_k`: pure lookups the schema rules and the version overlays share."""

from __future__ import annotations

ANY = {"t": "any"}
RECORD_KINDS = {"typeddict", "model"}


def _fields(doc: dict, name: str) -> dict:
    """A class's fields and those its subclasses add (VllmConfig's under GenerationConfig)."""
    cls = doc["classes"].get(name, {})
    fields = dict(cls.get("fields", {}))
    for sub in cls.get("subclasses", []):
        for fname, spec in doc["classes"].get(sub, {}).get("fields", {}).items():
            fields.setdefault(fname, spec)
    return fields


def refs(doc: dict, t: dict) -> list[str]:
    """The record classes a type may be (each branch of a union)."""
    options = t["options"] if t["t"] == "union" else [t]
    return [
        o["name"]
        for o in options
        if o["t"] == "ref" and doc["classes"].get(o["name"], {}).get("kind") in RECORD_KINDS
    ]


def type_at(doc: dict, dotted: str) -> dict | None:
    """The declared type at a path, `any` where upstream's examples set an undeclared key (or
    below one, or inside a free-form dict), None where NeMo-RL knows no such key."""
    t: dict = {"t": "ref", "name": doc["root"]}
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        if t["t"] == "any":
            return ANY
        options = t["options"] if t["t"] == "union" else [t]
        found = None
        for name in refs(doc, t):
            spec = _fields(doc, name).get(part)
            if spec is not None:
                found = spec["type"]
                break
        if found is None:
            dicts = [o for o in options if o["t"] == "dict"]
            if dicts:
                found = dicts[0]["value"]
            elif part in doc.get("shipped", {}).get(".".join(parts[:i]), {}):
                return ANY
            else:
                return None
        t = found
    return t


def complete(doc: dict, t: dict, value: dict) -> bool:
    """Whether a mapping has every required key of some record class `t` may be."""
    names = refs(doc, t)
    if not names:
        return True
    for name in names:
        fields = doc["classes"][name].get("fields", {})
        required = {f for f, spec in fields.items() if spec["required"]}
        if required <= set(value):
            return True
    return False
