"""Preflight for data_prep/rl_prep: the run's own config, blend and first-row checks
(`runners.rl_prep`), so `--dry-run` fails exactly where the run would, before any row is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from catalog.errors import Finding, StepsError
from runners.preflight import PreflightContext, rule
from runners.preflight.data_files import bound_file
from runners.preflight.gym import gym_root


def _located(ctx: PreflightContext, f: Finding) -> Finding:
    """A config finding without a file gets the file and line that set its key."""
    if f.path is not None or not f.key or ctx.compiled is None:
        return f
    path, line = ctx.compiled.locate(f.key)
    return replace(f, path=path, line=line)


@rule("rl_prep_config", needs=("rl_prep_blend",))
def rl_prep_config(ctx: PreflightContext) -> Iterator[Finding]:
    """rl_prep's options, its blend, the blend's input files, their first rows and the output
    folder are ones the run accepts (E-CONFIG-VALUE, E-BLEND, E-BLEND-MAP, E-OUTPUT-DIR, ...)."""
    from runners.rl_prep.blend import load_blend
    from runners.rl_prep.first_rows import first_rows_findings
    from runners.rl_prep.options import UNSET, config_problems, read_options
    from runners.rl_prep.output import check_ours
    from runners.rl_prep.prepare import plan_datasets

    model, problems = config_problems(ctx.config)
    for p in problems:
        f = Finding("E-CONFIG-VALUE", f"{p.key}: {p.message}", fix=p.fix, key=p.key)
        yield _located(ctx, f)
    blend_file = bound_file(ctx, "blend_path")
    if blend_file is None or not blend_file.exists():
        return  # unresolved_values / inputs_exist report it
    config_dir = Path(ctx.config_file).parent if ctx.config_file else Path.cwd()
    try:
        blend = load_blend(blend_file.resolve())
        if model is None or ctx.config.get("output_dir") in (None, UNSET):
            return
        opts = read_options(ctx.config, blend, config_dir, force=False)
        planned = plan_datasets(blend, opts)
        check_ours(opts.output_dir.resolve())
    except StepsError as exc:
        yield _located(ctx, exc.finding)
        return
    yield from first_rows_findings(planned, opts, gym_root(ctx))
