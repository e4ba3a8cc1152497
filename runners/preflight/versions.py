"""Which NeMo-RL versions each preflight rule applies to (PREFLIGHT.md's "versions" column).

A rule that mirrors an upstream assert applies where that assert exists; checked against the
source of v0.6.0, v0.7.0 and the pin, and for 0.4.0/0.5.0 as far as upstream's own configs of
those releases reach (tests/upstream_corpus.py). Ranges: `all`, `0.7.0+`, `pin` (the pin
and newer), `<0.6.0` (the rule mirrors a bug fixed upstream in 0.6.0). A rule
whose sub-checks differ by version states its oldest part here and the rest in PREFLIGHT.md;
those sub-checks read keys that only exist where the check does. An unknown version (no
checkout, no profile) runs every rule.
"""

from __future__ import annotations

from typing import TypeVar

from catalog.nemo_rl_version import NemoRLVersion, in_range

T = TypeVar("T")

RULE_VERSIONS: dict[str, str] = {
    # our own checks and the schema (itself per version)
    "unresolved_values": "all",
    "shell_variables": "all",  # OmegaConf never expands $NAME
    "config_resolvers": "all",  # the resolver table per version: RESOLVER_VERSIONS
    # the example script's driver before the GPU (runners/preflight/driver_setup.py)
    "tokenizer_path": "all",
    "logger_backends": "all",
    "wandb_credentials": "all",
    "mlflow_store": "0.7.0+",  # MLflow >= 3.13 (refuses the file store) locked from 0.7.0
    "megatron_arch_list": "0.5.0+",  # lm_policy.py raises from v0.5.0 (:97); v0.4.0 does not
    "required_sections": "all",
    "inputs_exist": "all",
    "relative_inputs": "all",  # every version opens data paths from its working directory
    "data_loader": "0.6.0+",  # data.train / data.validation blocks (older: one dataset)
    "output_dirs_under_file": "all",
    "output_dirs_writable": "all",
    "local_gpus": "all",  # placement needs the GPUs in every version
    "zero_divisors": "all",  # the same modulo in every version (cited per version)
    "grpo_train_rows": "all",  # drop_last=True in every version
    "artifact_contracts": "all",
    "rl_prep_config": "all",  # rl_prep's own options, no NeMo-RL involved
    "nemo_rl_schema": "all",
    "generation_backend": "all",  # backends per version: GENERATION_BACKENDS in schema.py
    # upstream asserts present in v0.6.0, v0.7.0 and the pin
    "batch_divisibility": "all",
    "parallel_fit": "all",
    "tp_logprob_batch": "all",  # the assert: 0.6.0+ (SINCE in parallelism.py)
    "sequence_divisibility": "all",  # both its asserts: 0.6.0+ (SINCE in parallelism.py)
    "training_backend": "all",  # dp_replicate_size: 0.7.0+
    "backend_sections": "all",
    "batching_modes": "all",
    "vllm_settings": "all",
    "async_grpo_features": "all",
    "validation_settings": "all",
    "checkpoint_metric_name": "all",
    "resume_checkpoint": "all",  # the state's keys per version: STATE_FAILS in resume.py
    "setup_indexed_keys": "all",
    "grpo_sampling_settings": "all",  # val sampling, val_num_generations, early stop: pin
    "grpo_loss_settings": "all",
    "prompt_files": "all",  # what is read: entries from 0.6.0, data.* (GRPO) before
    "dataset_names": "all",  # registries per release: catalog/nemo_rl_registries.py
    "loss_function": "all",  # TIS switch, type, ratio_min and CISPO per version: loss_function.py
    "math_verify_impl": "all",  # multi-reward env: 0.6.0+ (its section name only exists there)
    "multiple_dataloaders": "all",
    "colocated_resources": "all",
    "env_name_exists": "all",
    "gym_script": "all",  # the schema's `gym` entry says whether the version has the script
    "bound_input_read": "0.6.0+",  # the data.train / validation entries arrive in 0.6.0
    "gym_max_val_samples": "all",
    "gym_config_paths": "all",
    "gym_agents_defined": "all",
    "gym_flag_matches_data": "all",
    "gym_generation": "all",
    # cluster launch (runners/preflight/remote.py): ray.sub and the scripts as every version has
    "remote_allocation": "all",
    "remote_mounts": "all",
    "remote_nemo_rl": "all",  # the example script under its name in the profile's version
    "remote_environment": "all",
    "remote_inputs": "all",
    "remote_ray": "all",
    "remote_stage": "all",
    "remote_megatron_bridge": "all",
    # ray.sub's header and srun steps (runners/preflight/remote_slurm.py), probed in the checkout
    "remote_cpus": "all",
    "remote_sbatch_defaults": "all",
    # local launch (runners/preflight/interpreter.py): pins read from the checkout itself
    "local_interpreter": "all",
    "upstream_judge": "all",  # the interpreter's own NeMo-RL; pydantic validation 0.7.0+
    # NeMo-RL's convert_dcp_to_hf.py: the same three options in v0.6.0, v0.7.0 and the pin
    "dcp_export": "all",
    # asserts only the pin has (added on main after the r0.7.0 branch point)
    "fused_linear_logprobs": "pin",
    "reward_penalties_need_gym": "pin",
    # RL#2163: Gym rollouts carry `truncated` since f11f99c7 (2026-02-21), before v0.6.0
    "gym_overlong_filtering": "<0.6.0",
}


def applies(rule_id: str, version: NemoRLVersion | None) -> bool:
    """Whether a rule runs for this NeMo-RL; a rule missing from the table runs everywhere."""
    return in_range(version, RULE_VERSIONS.get(rule_id, "all"))


def cite(version: NemoRLVersion | None, places: dict[str, T]) -> T:
    """The upstream `file:line` of the version that runs. `places` maps the oldest version a
    location holds from ("0.6.0", "0.7.0", "pin") to it; an unknown version gets the newest,
    one older than every entry the oldest (0.4/0.5 against a table that starts at 0.6.0)."""
    chosen = places[list(places)[-1]]
    if version is None:
        return chosen
    chosen = places[next(iter(places))]
    for since, place in places.items():
        if in_range(version, since if since == "pin" else f"{since}+"):
            chosen = place
    return chosen
