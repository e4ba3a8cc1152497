"""Each data block as NeMo-RL's loader opens it (catalog.contracts.loader_formats): a local file
by its extension (no `subset`, only the `train` split); a dotted `dataset_name` (0.7.0+) is a
user class, looked up on the launch's Python path by path only, never imported here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from importlib.machinery import PathFinder
from pathlib import Path

from catalog.contracts.loader_formats import (
    LOCAL_SPLIT,
    USER_CLASS,
    USER_CLASS_FIX,
    DataOpen,
    data_blocks,
    data_open,
    loader_release,
    user_class_message,
)
from catalog.errors import Finding
from runners.preflight import PreflightContext, rule
from runners.preflight.topology import finding, warning

CLASS_CODE = "E-DATA-CLASS"
SPLIT_CODE = "E-DATA-SPLIT"
FORMAT_CODE = "E-DATA-FORMAT"


def user_class_blocks(ctx: PreflightContext) -> set[str]:
    """The data blocks whose dataset_name is a user class (their rows are the class's)."""
    return {k for k in data_blocks(ctx.config) if _open(ctx, k).reader == "class"}


def _open(ctx: PreflightContext, key: str) -> DataOpen:
    return data_open(ctx.config, key, ctx.nemo_rl_version)


def search_path(ctx: PreflightContext) -> list[str] | None:
    """Where the launch's interpreter finds modules (PYTHONPATH, the script's folder, the
    checkout, site-packages and their .pth folders); None when it is not known here."""
    launch = ctx.local_launch
    if launch is None:
        return None
    from runners.launch.local import ProbeFailure

    found = launch.probe()
    if isinstance(found, ProbeFailure):
        return None
    env_path = launch.env.get("PYTHONPATH", "")
    run = ctx.manifest.run if ctx.manifest is not None else None
    scripts = [s for s in (run.script, run.gym_script) if s] if run is not None else []
    checkout = Path(launch.checkout)  # the launch's working directory: relative entries
    paths = [str(checkout / p) for p in env_path.split(os.pathsep) if p]  # (absolute stay)
    paths += [str(checkout / os.path.dirname(s)) for s in scripts]
    paths.append(str(launch.checkout))
    for site in found.sites:
        added = _pth_dirs(Path(site))
        if added is None:
            return None  # a .pth import we cannot follow: the path is not known here
        paths += [site, *added]
    return paths


def _pth_dirs(site: Path) -> list[str] | None:
    """The folders a site's .pth files (and setuptools editable finders) add; None when a .pth
    runs an import we cannot read."""
    out: list[str] = []
    try:
        pths = sorted(site.glob("*.pth"))
    except OSError:
        return out
    for pth in pths:
        try:
            lines = pth.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in (ln.strip() for ln in lines):
            if not line or line.startswith("#"):
                continue
            if not line.startswith("import"):
                out.append(str(site / line))  # relative to the site folder
            elif "_distutils_hack" in line:
                continue  # setuptools' shim: adds no module
            elif "__editable__" in line:
                mapped = _editable_mapping(site, line)
                if mapped is None:
                    return None
                out += mapped
            else:
                return None
    return out


def _editable_mapping(site: Path, line: str) -> list[str] | None:
    """Parent folders of the packages a setuptools editable finder maps (its MAPPING)."""
    import ast
    import re

    found = re.search(r"import (__editable__\w+)", line)
    try:
        text = (site / f"{found.group(1)}.py").read_text(encoding="utf-8") if found else ""
        match = re.search(r"^MAPPING[^=]*=\s*(\{.*\})\s*$", text, re.M)
        mapping = ast.literal_eval(match.group(1)) if match else None
    except (OSError, ValueError, SyntaxError):
        return None
    if not isinstance(mapping, dict):
        return None
    return sorted({str(Path(str(v)).parent) for v in mapping.values()})


def module_found(module: str, paths: list[str]) -> str | None:
    """Where dotted `module` is on `paths` (its file or folder), found without importing."""
    where: list[str] | None = paths
    name = ""
    for part in module.split("."):
        name = f"{name}.{part}" if name else part
        try:
            spec = PathFinder.find_spec(name, where)
        except (ImportError, ValueError, OSError):
            return None
        if spec is None:
            return None
        where = list(spec.submodule_search_locations or [])
    return spec.origin or where[0]


def _class_findings(ctx: PreflightContext, opened: DataOpen) -> Iterator[Finding]:
    key = f"{opened.key}.dataset_name"
    name = opened.dataset_name or ""
    release = loader_release(ctx.nemo_rl_version)
    if not release.dotted_classes:
        yield finding(
            ctx,
            CLASS_CODE,
            key,
            f"{name!r} is a dotted class path; NeMo-RL {release.label} takes only its built-in "
            "dataset names (user dataset classes came in 0.7.0)",
            "use a built-in dataset (ResponseDataset, BinaryPreferenceDataset...) or run "
            "NeMo-RL 0.7.0 or newer",
        )
        return
    module = name.rpartition(".")[0]
    paths = search_path(ctx)
    if paths is not None and not module_found(module, paths):
        yield finding(
            ctx,
            CLASS_CODE,
            key,
            f"module {module!r} of the dataset class {name!r} is not on the launch's Python "
            "path (PYTHONPATH, the checkout, the interpreter's site-packages); NeMo-RL "
            "fails with 'Could not import module'",
            "put the module's folder on PYTHONPATH (env.toml or the launch environment), or "
            "install its package into NeMo-RL's environment",
        )
        return
    yield warning(ctx, USER_CLASS, key, user_class_message(opened), USER_CLASS_FIX)


def _format_findings(ctx: PreflightContext, opened: DataOpen) -> Iterator[Finding]:
    """A local file whose extension has no builder: NeMo-RL takes it as a hub name."""
    key = f"{opened.key}.data_path"
    bound = [a for a in ctx.inputs if a.config_key == key and a.is_path]
    if opened.reader != "path" or opened.builder is not None or not bound:
        return
    if not os.path.isfile(bound[0].value):
        return
    release = loader_release(ctx.nemo_rl_version)
    known = ", ".join(sorted(release.suffixes))
    yield finding(
        ctx,
        FORMAT_CODE,
        key,
        f"{bound[0].value} is a file, but NeMo-RL {release.label} opens a data file by its "
        f"extension ({known}, exactly as written) and has no builder for "
        f"{os.path.splitext(bound[0].value)[1] or 'a name without one'}: it takes the path as "
        "a hub name or a folder, and loading fails",
        f"rename the file to one of {known}",
    )


def _split_findings(ctx: PreflightContext, opened: DataOpen) -> Iterator[Finding]:
    if opened.reader != "path" or opened.builder is None:
        return
    what = f"{opened.data_path} is a local .{opened.builder} file"
    if opened.subset is not None:
        yield finding(
            ctx,
            SPLIT_CODE,
            f"{opened.key}.subset",
            f"{what}; NeMo-RL asserts subset is unset for a local file (subsets are for hub "
            "datasets)",
            f"remove {opened.key}.subset",
        )
    if opened.split is not None and opened.split != LOCAL_SPLIT:
        yield finding(
            ctx,
            SPLIT_CODE,
            f"{opened.key}.split",
            f"{what}, whose only split is {LOCAL_SPLIT!r}; split {opened.split!r} fails with "
            "a KeyError when NeMo-RL loads it",
            f"remove {opened.key}.split (or set it to {LOCAL_SPLIT}), or give this split's "
            "own file",
        )


@rule("data_loader", versions="0.6.0+")
def data_loader(ctx: PreflightContext) -> Iterator[Finding]:
    """E-DATA-FORMAT, -SPLIT, -CLASS, W-DATA-CLASS: each data block as NeMo-RL opens it."""
    for key in data_blocks(ctx.config):
        opened = _open(ctx, key)
        if opened.reader == "class":
            yield from _class_findings(ctx, opened)
        else:
            yield from _format_findings(ctx, opened)
            yield from _split_findings(ctx, opened)
