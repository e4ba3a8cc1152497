"""NeMo-Gym rules: the Gym script's own checks, its config paths and agents, and the row type."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache, partial
from pathlib import Path

from catalog.did_you_mean import close_matches
from catalog.errors import Finding
from catalog.nemo_rl_version import in_range
from catalog.upstream import GYM_SUBDIR
from runners.preflight import PreflightContext, rule
from runners.preflight.data_files import bound_file, first_row
from runners.preflight.schema import run_schema
from runners.preflight.topology import algorithm, cite, finding, generation, uses_gym, warning

CONFIG_PATHS = "env.nemo_gym.config_paths"
GYM_SCRIPT = "examples/nemo_gym/run_grpo_nemo_gym.py"
GYM_ROW_KEY = "responses_create_params"


@rule("gym_script")
def gym_script(ctx: PreflightContext) -> Iterator[Finding]:
    """E-GYM-SCRIPT: the running NeMo-RL has a NeMo-Gym script (0.4.0 has none: the schema's
    `gym` entry, derived from the checkout or shipped for the release, says)."""
    if not uses_gym(ctx) or algorithm(ctx) != "grpo":
        return
    found = run_schema(ctx, "grpo")
    gym = found.doc.get("gym") if found else None
    if gym is None or gym.get("script"):
        return
    version = found.doc.get("upstream", {}).get("version") or "this NeMo-RL"  # type: ignore[union-attr]
    yield finding(
        ctx,
        "E-GYM-SCRIPT",
        "env.should_use_nemo_gym",
        f"is true, but NeMo-RL {version} has no NeMo-Gym script ({GYM_SCRIPT} first ships in "
        "0.5.0): nothing in it can run this config",
        "run NeMo-RL 0.5.0 or newer (this catalog's steps: 0.6.0 or newer), or train on plain "
        "prompt rows with env.should_use_nemo_gym=false",
    )


@rule("gym_max_val_samples")
def gym_max_val_samples(ctx: PreflightContext) -> Iterator[Finding]:
    """E-GYM-MAX-VAL: run_grpo_nemo_gym.py:206 raises on a non-null grpo.max_val_samples."""
    if uses_gym(ctx) and ctx.get("grpo.max_val_samples") is not None:
        yield finding(
            ctx,
            "E-GYM-MAX-VAL",
            "grpo.max_val_samples",
            f"is {ctx.get('grpo.max_val_samples')!r}; the NeMo-Gym script accepts only null "
            "(it uses the whole validation file)",
            "set grpo.max_val_samples=null grpo.val_batch_size=null",
        )


def gym_root(ctx: PreflightContext) -> Path | None:
    """The Gym checkout: ctx.gym_root, config run.gym_root, or <nemo_rl>/3rdparty/.../Gym."""
    if ctx.gym_root is not None:
        return Path(ctx.gym_root)
    configured = ctx.get("run.gym_root")
    if isinstance(configured, str) and configured:
        return Path(configured).expanduser()
    if ctx.nemo_rl_dir is not None:
        return Path(ctx.nemo_rl_dir) / GYM_SUBDIR
    return None


@cache
def _yaml_files(root: Path) -> tuple[str, ...]:
    """Config files a Gym checkout ships (<kind>/<name>/configs/*.yaml), relative to its root."""
    return tuple(sorted(p.relative_to(root).as_posix() for p in root.glob("*/*/configs/*.yaml")))


def empty_root(root: Path) -> bool:
    """A Gym folder with nothing in it: NeMo-RL's submodule, not checked out."""
    return next(root.iterdir(), None) is None


@rule("gym_config_paths")
def gym_config_paths(ctx: PreflightContext) -> Iterator[Finding]:
    """E-GYM-CONFIG-PATH: config_paths is a list of files under the Gym root, model config first."""
    err = partial(finding, ctx, "E-GYM-CONFIG-PATH")
    if not uses_gym(ctx):
        return
    value = ctx.get(CONFIG_PATHS)
    if not isinstance(value, list) or not value:
        yield err(
            CONFIG_PATHS,
            f"must be a non-empty list of Gym config files, got {value!r}",
            f'write a YAML list, or on the command line "{CONFIG_PATHS}=[responses_api_models/'
            "vllm_model/configs/vllm_model_for_training.yaml,resources_servers/math_with_judge/"
            'configs/math_with_judge.yaml]" (quoted, no spaces)',
        )
        return
    first = value[0]
    if not (
        isinstance(first, str)
        and first.startswith("responses_api_models/")
        and first.endswith("_for_training.yaml")
    ):
        yield err(
            f"{CONFIG_PATHS}[0]",
            f"{first!r} is not a responses_api_models/*_for_training.yaml model config; NeMo-RL "
            "serves the policy through it",
            "put responses_api_models/vllm_model/configs/vllm_model_for_training.yaml first",
        )
    root = gym_root(ctx)
    if root is None or not root.is_dir():
        needed = str(root) if root else f"<nemo-rl>/{GYM_SUBDIR}"
        yield warning(
            ctx,
            "W-GYM-ROOT",
            CONFIG_PATHS,
            f"cannot check the entries: no NeMo-Gym checkout at {needed}",
            "pass --nemo-rl DIR (with its Gym submodule) or set run.gym_root",
        )
        return
    if empty_root(root):  # a clone without --recursive: one cause, not one per entry
        yield (finding if ctx.remote is None else warning)(
            ctx,
            "E-GYM-CONFIG-PATH" if ctx.remote is None else "W-GYM-ROOT",
            CONFIG_PATHS,
            f"the Gym root {root} is empty (the NeMo-Gym git submodule is not checked out), so "
            "none of these entries exists there and NeMo-RL cannot start Gym from it",
            f"git -C {root.parents[2]} submodule update --init {GYM_SUBDIR}"
            if len(root.parents) > 2
            else "check out the NeMo-Gym submodule",
        )
        return
    for i, entry in enumerate(value):
        key = f"{CONFIG_PATHS}[{i}]"
        if not isinstance(entry, str) or not entry:
            yield err(key, f"{entry!r} is not a path", "use a path string")
            continue
        path = Path(entry) if Path(entry).is_absolute() else root / entry
        if path.is_file():
            continue
        near = close_matches(entry, _yaml_files(root))
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        yield err(
            key,
            f"{entry} does not exist under the Gym root {root}{hint}",
            "use a path relative to the Gym checkout, e.g. "
            "resources_servers/math_with_judge/configs/math_with_judge.yaml",
        )


@rule("gym_agents_defined")
def gym_agents_defined(ctx: PreflightContext) -> Iterator[Finding]:
    """W-GYM-AGENT-UNCHECKED / W-GYM-SERVER-UNDERIVED: what the row contract (E-GYM-AGENT,
    E-GYM-TASK-FIELD) cannot know, said once per run."""
    from catalog.contracts.gym_routes import UNDERIVED, UNDERIVED_FIX, underived_message
    from catalog.contracts.options import gym_routes_for

    entries, root = ctx.get(CONFIG_PATHS), gym_root(ctx)
    if not uses_gym(ctx) or not isinstance(entries, list) or not entries or root is None:
        return  # gym_config_paths reports the shape and the missing or empty root
    if not root.is_dir() or empty_root(root):
        return
    routes = gym_routes_for(ctx.config, root)
    if routes is None:
        return
    if routes.unreadable:
        yield warning(
            ctx,
            "W-GYM-AGENT-UNCHECKED",
            CONFIG_PATHS,
            f"could not read {', '.join(routes.unreadable)}; agents they define are not known",
            "fix the paths (see E-GYM-CONFIG-PATH)",
        )
    underived = routes.underived()
    if underived:
        yield warning(ctx, UNDERIVED, CONFIG_PATHS, underived_message(underived), UNDERIVED_FIX)


@rule("gym_flag_matches_data")
def gym_flag_matches_data(ctx: PreflightContext) -> Iterator[Finding]:
    """E-GYM-DATA-MISMATCH: env.should_use_nemo_gym agrees with the train rows' type."""
    if ctx.get("env") is None or ctx.get("grpo") is None:
        return
    path = bound_file(ctx, "data.train.data_path")
    if path is None:
        return
    if not path.is_file():
        yield warning(
            ctx,
            "W-PREFLIGHT-UNCHECKED",
            "data.train.data_path",
            f"cannot compare env.should_use_nemo_gym with the rows: {path} is not a file",
            "fix data.train.data_path",
        )
        return
    row = first_row(path)
    if row is None:
        return  # empty or malformed: the artifact contract reports it
    gym_rows, flag = GYM_ROW_KEY in row, uses_gym(ctx)
    if gym_rows != flag:
        what = "NeMo-Gym rows (responses_create_params)" if gym_rows else "plain prompt rows"
        yield finding(
            ctx,
            "E-GYM-DATA-MISMATCH",
            "env.should_use_nemo_gym",
            f"is {flag} but {path} holds {what}",
            "use the Gym config (-c nemo_gym) for Gym rows and the default config for "
            "plain rows; do not flip env.should_use_nemo_gym alone",
        )


@rule("gym_overlong_filtering", versions="<0.6.0")
def gym_overlong_filtering(ctx: PreflightContext) -> Iterator[Finding]:
    """E-OVERLONG-GYM: overlong_filtering reads `truncated`, which Gym rollouts lack (RL#2163)."""
    if uses_gym(ctx) and ctx.get("grpo.overlong_filtering"):
        yield finding(
            ctx,
            "E-OVERLONG-GYM",
            "grpo.overlong_filtering",
            "is not supported with NeMo-Gym rollouts (KeyError 'truncated' at the first step)",
            "set grpo.overlong_filtering=false",
        )


GYM_HTTP_SETUP = {"0.6.0": "nemo_gym.py:276", "0.7.0": "nemo_gym.py:481", "pin": "nemo_gym.py:1116"}
GYM_BACKENDS = (  # newest first: the generation backends should_use_nemo_gym accepts
    ("pin", ("vllm", "megatron", "trtllm", "dynamo")),
    ("0.7.0+", ("vllm", "megatron")),
    ("all", ("vllm",)),
)


@rule("gym_generation")
def gym_generation(ctx: PreflightContext) -> Iterator[Finding]:
    """E-GYM-GENERATION: Gym rollouts need a generation HTTP server (GYM_BACKENDS,
    nemo_gym.py:95-110 at the pin); the Gym script writes into vllm_cfg either way."""
    err = partial(finding, ctx, "E-GYM-GENERATION")
    if not uses_gym(ctx):
        return
    gen = generation(ctx)
    backends = next(b for since, b in GYM_BACKENDS if in_range(ctx.nemo_rl_version, since))
    version = ctx.nemo_rl_version.label if ctx.nemo_rl_version else "this NeMo-RL"
    if gen.get("backend") not in backends:
        yield err(
            "policy.generation.backend",
            f"NeMo-Gym runs on {version} need a {' or '.join(backends)} generation backend, "
            f"got {gen.get('backend')!r}",
            f"set policy.generation.backend={backends[0]}",
        )
    elif not isinstance(gen.get("vllm_cfg"), dict):
        yield err(
            "policy.generation.vllm_cfg",
            "the NeMo-Gym script sets vllm_cfg.async_engine and expose_http_server "
            f"({cite(ctx.nemo_rl_version, GYM_HTTP_SETUP)}), so the section must exist",
            "keep a policy.generation.vllm_cfg section",
        )


@rule("reward_penalties_need_gym", versions="pin")
def reward_penalties_need_gym(ctx: PreflightContext) -> Iterator[Finding]:
    """E-REWARD-PENALTIES: reward_penalties only work on the Gym path (grpo.py:1966)."""
    err = partial(finding, ctx, "E-REWARD-PENALTIES")
    penalties = ctx.get("reward_penalties")
    if uses_gym(ctx) or not isinstance(penalties, dict):
        return
    on = [k for k, v in penalties.items() if k.startswith("penalize_") and v]
    if on:
        yield err(
            f"reward_penalties.{on[0]}",
            "reward penalties need env.should_use_nemo_gym=true",
            "turn the penalties off or use the NeMo-Gym config",
        )
    if penalties.get("penalize_unwanted_tokens") and not (
        isinstance(penalties.get("token_ids"), dict) and penalties["token_ids"].get("unwanted")
    ):
        yield err(
            "reward_penalties.token_ids.unwanted",
            "must be set when penalize_unwanted_tokens is true (grpo.py:222)",
            "list the token ids, or set penalize_unwanted_tokens=false",
        )
