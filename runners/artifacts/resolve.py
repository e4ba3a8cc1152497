"""`--input PORT=NAME[:ALIAS|:vN]`: a reference becomes the path of the version it names, from the
registry, else W&B (docs/running.md, "Artifacts by name"), refused when its type is unrelated to
the port's, its content changed (E-ARTIFACT-DIGEST), or it is not ready (E-ARTIFACT-PENDING)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catalog.errors import StepsError
from catalog.record_file import exists_as
from runners.artifacts.names import Ref, Resolved, parse_ref

if TYPE_CHECKING:  # the registry's models are built only when a reference is looked up
    from runners.artifacts.registry import RegistryFile, Version
    from runners.artifacts.wandb_log import WandbSettings


def _is_ref(value: str, ref: Ref, known: Callable[[], set[str]], cwd: Path) -> bool:
    if exists_as(cwd / value):
        return False
    return ref.tagged or "Artifact" in ref.name or ref.name in known()


def resolve_inputs(
    inputs: dict[str, str],
    port_types: dict[str, str],
    root: Path,
    cwd: Path,
    graph: Any = None,
    wandb: Callable[[], WandbSettings | None] = lambda: None,
) -> tuple[dict[str, str], list[Resolved]]:
    """`inputs` with each reference replaced by its path, and what each resolved to."""
    from runners.digest import DigestMemo

    out, found = dict(inputs), []
    reg = None
    memo = DigestMemo()

    def registry() -> RegistryFile:
        from runners.artifacts.pending import settled
        from runners.artifacts.registry import load

        nonlocal reg
        reg = reg if reg is not None else settled(root, load(root))
        return reg

    def known() -> set[str]:  # a plain name is looked up only in a registry that reads
        try:
            return set(registry().artifacts)
        except StepsError:
            return set()

    for port, value in inputs.items():
        ref = parse_ref(value)
        if ref is None or port not in port_types or not _is_ref(value, ref, known, cwd):
            continue  # a path (an unknown port: bind names it)
        from runners.artifacts.registry import check_content, lookup

        try:
            v = lookup(registry(), ref, root)
        except StepsError:
            settings = wandb()
            if settings is None or settings.offline:
                raise
            from runners.artifacts.wandb_log import fetch

            hit = fetch(settings, ref, root / "wandb-artifacts")
            hit.port = port
        else:
            refuse_unready(v, ref, port, registry())
            check_content(ref.name, v, memo)
            hit = Resolved(port, ref, v.path, v.type, "registry", v.label)
        check_type(hit, port_types[port], graph)
        out[port] = hit.path
        found.append(hit)
    memo.save()
    return out, found


def refuse_unready(v: Version, ref: Ref, port: str, reg: RegistryFile) -> None:
    """E-ARTIFACT-PENDING for a version whose run has not ended, or ended without it."""
    if v.state == "ready":
        return
    ready = [x for x in reg.artifacts[ref.name].versions if x.state == "ready"]
    other = f"name a ready version ({ref.name}:{ready[-1].label}), or " if ready else ""
    run = v.made_by.run_dir or "its run"
    if v.state == "pending":
        why = f"is pending: the {v.made_by.step} run that makes it ({run}) has not ended"
        fix = (f"wait for it (`python -m steps status {run}` records how it ended), then run "
               f"again; or {other or 'run it without this input'}")  # fmt: skip
    else:
        why = f"failed: {v.reason or 'its run did not end well'}"
        fix = f"{other}run {v.made_by.step} again (`python -m steps diagnose {run}` says why)"
    raise StepsError(
        "E-ARTIFACT-PENDING",
        f"--input {port}={ref}: {ref.name}:{v.label} {why}",
        path=v.path,
        fix=fix,
        exit_code=2,
    )


def check_type(hit: Resolved, port_type: str, graph: Any) -> None:
    """Refuse an artifact whose type is unrelated to the port's."""
    if hit.type == port_type:
        return
    known = graph is not None and hit.type in graph and port_type in graph
    if known and (graph.is_a(hit.type, port_type) or graph.is_a(port_type, hit.type)):
        return
    raise StepsError(
        "E-ARTIFACT-TYPE",
        f"--input {hit.port}={hit.ref}: {hit.ref.name}:{hit.version} is a {hit.type}, "
        f"the port takes a {port_type}",
        path=hit.path,
        fix=f"give port {hit.port} an artifact of type {port_type} (or a subtype; "
        "`python -m steps show STEP` lists the ports)",
        exit_code=2,
    )


def resolve_named_inputs(plan: Any, pf: Any, root: Path, graph: Any = None) -> list[Resolved]:
    """A pipeline's inputs given by name (`path: NAME:latest`) replaced by their versions' paths,
    in the plan's inputs and every stage bound to them; what each resolved to."""
    from catalog.pipeline import UNSET

    found: list[Resolved] = []
    for name, spec in pf.model.inputs.items():
        bound = plan.inputs.get(name)
        if bound is None or bound.hub or spec.path == UNSET or os.path.exists(bound.value):
            continue
        paths, hits = resolve_inputs({name: spec.path}, {name: spec.type}, root, pf.folder, graph)
        if not hits:
            continue
        bound.value = paths[name]
        for stage in plan.stages:
            for b in stage.inputs.values():
                if b.source == f"inputs.{name}":
                    b.value = paths[name]
        plan.findings = [
            f
            for f in plan.findings
            if not (f.code == "W-PIPELINE-INPUT-PATH" and f.message.startswith(f"input '{name}'"))
        ]
        found.extend(hits)
    return found
