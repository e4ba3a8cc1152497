"""Contract options from a step's compiled config: row keys, Gym agents, the default agent_ref,
the judging Gym.

One place knows which config keys feed which contract option, so `validate --step` and the
preflight rule agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from catalog.config_values import dotted_get


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


def gym_agent_names(config: dict, gym_root: Path | None) -> list[str] | None:
    """Agent instance keys the Gym configs define, or None when any config cannot be read."""
    gym = dotted_get(config, "env.nemo_gym")
    if not isinstance(gym, dict):
        return None
    names = [k for k, v in gym.items() if isinstance(v, dict) and "responses_api_agents" in v]
    paths = gym.get("config_paths") or []
    if paths and gym_root is None:
        return None
    import yaml

    for rel in paths:
        try:
            data = yaml.safe_load((Path(gym_root) / str(rel)).read_text())  # type: ignore[arg-type]
        except (OSError, yaml.YAMLError):
            return None
        if isinstance(data, dict):
            names += [
                k for k, v in data.items() if isinstance(v, dict) and "responses_api_agents" in v
            ]
    return sorted(set(names)) if names else None


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
        return {
            "default_agent_ref": dotted_get(config, "run.default_agent_ref"),
            "agent_names": gym_agent_names(config, gym_root),
            "gym_version": gym_version_for(config, gym_root),
        }
    if contract == "preference_rows":
        keys = ("prompt_key", "chosen_key", "rejected_key")
    elif contract == "verifiable_prompt_rows":
        keys = ("input_key", "output_key")
    else:
        return {}
    return {k: _data_key(config, split, k) for k in keys}
