"""Contract options from a step's compiled config: row keys, Gym agents, the default agent_ref,
the judging Gym.

One place knows which config keys feed which contract option, so `validate --step` and the
preflight rule agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from catalog.config_values import dotted_get

if TYPE_CHECKING:
    from catalog.contracts.gym_routes import GymRoutes


def row_contract_for(type_contract: str, config: dict) -> str:
    """`training_jsonl` narrowed by the config: Gym rows when env.should_use_nemo_gym is true."""
    if type_contract != "jsonl":
        return type_contract
    if dotted_get(config, "env.should_use_nemo_gym") is True:
        return "nemo_gym_rows"
    if dotted_get(config, "dpo") is not None:
        return "preference_rows"
    if dotted_get(config, "grpo") is not None:
        return "verifiable_prompt_rows"
    return "jsonl"


def _data_key(config: dict, split: str, key: str) -> Any:
    """A data option as NeMo-RL reads it: the split's own value, else data.default's."""
    own = dotted_get(config, f"data.{split}")
    if isinstance(own, dict) and own.get(key) is not None:
        return own[key]
    return dotted_get(config, f"data.default.{key}")


def gym_tree_for(config: dict, gym_root: Path | None = None) -> Path | None:
    """The Gym tree whose configs and resource servers route the rows: `gym_root` (the dry
    run's checkout, or `validate --gym-version DIR`; a Gym or a NeMo-RL checkout), else the
    config's run.gym_root, else an installed nemo_gym, else the Gym submodule of $NEMO_RL_HOME
    or of the container's NeMo-RL (the checkout the dry run would use); None when none is
    there. Only configs and server sources are read, so a tree without nemo_gym/ will do."""
    from catalog.contracts.gym_facts import detect_gym
    from catalog.upstream import GYM_SUBDIR

    configured = dotted_get(config, "run.gym_root")
    for root in (
        gym_root,
        Path(configured).expanduser() if isinstance(configured, str) and configured else None,
    ):
        if root is not None and Path(root).is_dir():
            inner = Path(root) / GYM_SUBDIR
            return inner if inner.is_dir() else Path(root)
    found = detect_gym(tree_only=True)
    return Path(found) if found else None


def gym_routes_for(config: dict, gym_root: Path | None = None) -> GymRoutes | None:
    """The agents env.nemo_gym loads and the server fields of each (gym_routes.py); None
    when the config is not a Gym one, or names config files and no Gym tree is at hand."""
    from catalog.contracts.gym_routes import read_routes

    gym = dotted_get(config, "env.nemo_gym")
    if not isinstance(gym, dict):
        return None
    return read_routes(gym_tree_for(config, gym_root), gym)


def gym_version_for(config: dict, gym_root: Path | None = None) -> str | None:
    """The Gym that will run, as a `gym_version` option: the Gym checkout at `gym_root` (or the
    config's run.gym_root), else the config's run.gym_version, else an installed nemo_gym or
    the Gym submodule of $NEMO_RL_HOME / the container's NeMo-RL; None means the pin."""
    from catalog.contracts.gym_facts import detect_gym
    from catalog.contracts.gym_source import gym_root_of

    configured = dotted_get(config, "run.gym_root")
    for root in (gym_root, Path(configured).expanduser() if isinstance(configured, str) else None):
        if root is not None and gym_root_of(Path(root)) is not None:
            return str(root)
    version = dotted_get(config, "run.gym_version")
    if isinstance(version, (str, int, float)) and str(version):
        return str(version)
    return detect_gym()


def contract_options(
    contract: str, config: dict, *, split: str = "train", gym_root: Path | None = None
) -> dict[str, Any]:
    """The options of row contract `contract` that the config sets (absent ones left out)."""
    if contract == "nemo_gym_rows":
        routes = gym_routes_for(config, gym_root)
        paths = dotted_get(config, "env.nemo_gym.config_paths")
        known = routes is not None and not routes.unreadable and (routes.agents or paths)
        return {
            "default_agent_ref": dotted_get(config, "run.default_agent_ref"),
            "agent_names": sorted(routes.agents) if known else None,  # type: ignore[union-attr]
            "gym_version": gym_version_for(config, gym_root),
            "routes": routes.option() if routes is not None else None,
        }
    if contract == "preference_rows":
        keys = ("prompt_key", "chosen_key", "rejected_key")
        return {k: _data_key(config, split, k) for k in keys}
    if contract == "verifiable_prompt_rows":
        found = {k: _data_key(config, split, k) for k in ("input_key", "output_key")}
        return {**found, "text_answer": text_answer(config, split)}
    return {}


# Processors that hand the answer to the environment as loaded (v0.7.0 processors.py:392, the
# registry's "default"), and the environments whose verifiers concatenate it as text
# (environments/utils.py ENV_REGISTRY: MathEnvironment, MathMultiRewardEnvironment).
RAW_ANSWER_PROCESSORS = frozenset({"default", "math_hf_data_processor"})
MATH_ENVS = frozenset({"math", "math_default", "math_multi_reward"})


def text_answer(config: dict, split: str = "train") -> bool:
    """Whether the config sends a verifiable row's answer, as loaded, to a math verifier that
    needs text (nemo_rl_rows.py): the processor passes it raw and env_name is a math one."""
    processor = _data_key(config, split, "processor") or "default"
    return processor in RAW_ANSWER_PROCESSORS and _data_key(config, split, "env_name") in MATH_ENVS


# The artifact type that names each row contract, for reports of a narrowed `training_jsonl`.
ROW_TYPES = {
    "nemo_gym_rows": "nemo_gym_jsonl",
    "preference_rows": "preference_jsonl",
    "verifiable_prompt_rows": "verifiable_prompt_jsonl",
}


def step_contract(
    type_name: str,
    contract: str,
    config: dict,
    *,
    split: str = "train",
    gym_root: Path | None = None,
) -> tuple[str, str, dict[str, Any]]:
    """The type, contract and options a step's compiled config judges rows of `type_name` by.

    The one judge of rows against a step: `validate TYPE PATH --step S -c CFG` and the dry
    run's artifact_contracts both call it, so they give the same verdict on the same rows.
    """
    narrowed = row_contract_for(contract, config)
    if narrowed != contract:
        type_name, contract = ROW_TYPES.get(narrowed, type_name), narrowed
    options = contract_options(contract, config, split=split, gym_root=gym_root)
    return type_name, contract, {k: v for k, v in options.items() if v is not None}
