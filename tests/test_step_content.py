"""The catalog content is true to itself and to NeMo-RL: every config compiles and resolves,
every manifest validates and names keys that exist, RL configs carry what NeMo-RL's
MasterConfig requires, batch sizes divide, and the tiny data follows its row contract."""

from __future__ import annotations

import ast
import copy
import json
import os
import re
from pathlib import Path

import pytest
import yaml

from catalog.codes import registry
from catalog.discovery import BUILTIN_ROOT, StepEntry, discover
from catalog.manifest import StepManifest
from catalog.patterns import parse_pattern
from catalog.tomlfile import load_toml
from catalog.types import load_types
from runners.config.compiler import load_config
from runners.nemo_rl import checkout as nemo_rl
from runners.preflight import load_rules

STEPS = discover()
STEP_IDS = [e.id for e in STEPS]
# The steps whose content this file specifies in detail; the generic checks cover every step.
CONTENT_IDS = ("rl/nemo_rl/dpo", "rl/nemo_rl/rlvr", "rl/nemo_rl/rlhf", "convert/megatron_to_hf")
CONTENT = [e for e in STEPS if e.id in CONTENT_IDS]
RL_STEPS = [e for e in STEPS if e.data.get("run", {}).get("runner") == "nemo_rl"]
CONFIGS = [(e, name) for e in STEPS for name in e.config_names()]
RL_CONFIGS = [(e, name) for e in RL_STEPS for name in e.config_names()]
PATTERN_DIR = BUILTIN_ROOT / "patterns"
PATTERNS = sorted(PATTERN_DIR.glob("*.md"))
OUTPUT_ENV = "${oc.env:STEPS_OUTPUT,/tmp/steps-output}"

# What NeMo-RL's MasterConfig (pinned commit) requires, section by section.
MASTER_SECTIONS = {
    "grpo": ["policy", "loss_fn", "env", "data", "grpo", "logger", "cluster", "checkpointing"],
    "dpo": ["policy", "data", "dpo", "logger", "cluster", "checkpointing"],
}
POLICY_KEYS = [
    "model_name",
    "tokenizer.name",
    "train_global_batch_size",
    "train_micro_batch_size",
    "precision",
    "dtensor_cfg.enabled",
    "dynamic_batching.enabled",
    "sequence_packing.enabled",
    "make_sequence_length_divisible_by",
    "max_total_sequence_length",
]
GENERATION_KEYS = [
    "backend",
    "max_new_tokens",
    "temperature",
    "top_p",
    "top_k",
    "val_temperature",
    "val_top_p",
    "val_top_k",
    "stop_token_ids",
    "stop_strings",
]
VLLM_KEYS = [
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "expert_parallel_size",
    "gpu_memory_utilization",
    "max_model_len",
    "async_engine",
    "kv_cache_dtype",
    "precision",
]
MEGATRON_KEYS = [
    "empty_unused_memory_level",
    "activation_checkpointing",
    "tensor_model_parallel_size",
    "pipeline_model_parallel_size",
    "num_layers_in_first_pipeline_stage",
    "num_layers_in_last_pipeline_stage",
    "context_parallel_size",
    "pipeline_dtype",
    "sequence_parallel",
    "freeze_moe_router",
    "expert_tensor_parallel_size",
    "expert_model_parallel_size",
    "apply_rope_fusion",
    "bias_activation_fusion",
    "moe_per_layer_logging",
    "moe_enable_deepep",
    "moe_token_dispatcher_type",
    "moe_shared_expert_overlap",
    "moe_router_dtype",
    "moe_router_load_balancing_type",
    "moe_router_bias_update_rate",
    "moe_permute_fusion",
    "defer_fp32_logits",
    "peft.enabled",
    "fp8_cfg.enabled",
    "optimizer.optimizer",
    "optimizer.lr",
    "optimizer.min_lr",
    "optimizer.weight_decay",
    "optimizer.bf16",
    "optimizer.fp16",
    "optimizer.params_dtype",
    "optimizer.adam_beta1",
    "optimizer.adam_beta2",
    "optimizer.adam_eps",
    "optimizer.sgd_momentum",
    "optimizer.use_distributed_optimizer",
    "optimizer.use_precision_aware_optimizer",
    "optimizer.clip_grad",
    "optimizer.optimizer_cpu_offload",
    "optimizer.optimizer_offload_fraction",
    "scheduler.start_weight_decay",
    "scheduler.end_weight_decay",
    "scheduler.weight_decay_incr_style",
    "scheduler.lr_decay_style",
    "scheduler.lr_warmup_iters",
    "scheduler.lr_warmup_init",
    "distributed_data_parallel_config.grad_reduce_in_fp32",
    "distributed_data_parallel_config.overlap_grad_reduce",
    "distributed_data_parallel_config.overlap_param_gather",
    "distributed_data_parallel_config.use_custom_fsdp",
    "distributed_data_parallel_config.data_parallel_sharding_strategy",
]
LOGGER_KEYS = [
    "log_dir",
    "wandb_enabled",
    "swanlab_enabled",
    "tensorboard_enabled",
    "mlflow_enabled",
    "wandb",
    "monitor_gpus",
    "gpu_monitoring.collection_interval",
    "gpu_monitoring.flush_interval",
]
CHECKPOINT_KEYS = [
    "enabled",
    "checkpoint_dir",
    "metric_name",
    "higher_is_better",
    "save_period",
    "keep_top_k",
    "save_optimizer",
]
CONVERT_KEYS = [
    "megatron_path",
    "hf_model_id",
    "hf_path",
    "megatron_bridge.root",
    "megatron_bridge.script",
    "distributed.enabled",
    "distributed.nproc_per_node",
    "parallel.tp",
    "parallel.pp",
    "parallel.ep",
    "parallel.etp",
    "strict",
    "show_progress",
    "trust_remote_code",
    "torch_dtype",
]
GYM_CONFIG_PATH = r"(resources_servers|responses_api_models)/\w+/configs/\w+\.yaml"
_MISSING = object()


def get(cfg: dict, dotted: str, default=_MISSING):
    """A dotted key of a resolved config; `default` when absent (or raise KeyError)."""
    node = cfg
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            if default is _MISSING:
                raise KeyError(dotted)
            return default
        node = node[part]
    return node


def _present(cfg: dict, dotted: str) -> bool:
    try:
        get(cfg, dotted)
    except KeyError:
        return False
    return True


def config_file(entry: StepEntry, name: str) -> Path:
    return entry.config_path(name)


def resolved(entry: StepEntry, name: str, monkeypatch: pytest.MonkeyPatch) -> dict:
    """Compile and resolve a step config exactly as the runner does, with no env vars set (for
    a NeMo-RL step: with the version overlays of the pin, what an unknown version gets)."""
    for path in entry.config_dir.glob("*.yaml"):
        for var in re.findall(r"oc\.env:([A-Za-z_][A-Za-z0-9_]*)", path.read_text()):
            monkeypatch.delenv(var, raising=False)
    algorithm = manifest(entry).run.algorithm
    path = config_file(entry, name)
    if algorithm:
        compiled = nemo_rl.compile_for(nemo_rl.Target(None, None), algorithm, path, [])
    else:
        compiled = load_config(path)
    return copy.deepcopy(_RESOLVED.get(_resolution_key(compiled), compiled))


class _Resolutions(dict):
    """Resolved configs of this module, by their files' content and the variables they read:
    a dozen tests judge each shipped config, resolved once (the test may change its copy)."""

    def get(self, key: tuple, compiled) -> dict:  # type: ignore[override]
        if key not in self:
            self[key] = compiled.resolved()
        return self[key]


_RESOLVED = _Resolutions()


def _resolution_key(compiled) -> tuple:
    texts = tuple((str(p), p.read_bytes()) for p in compiled.sources)
    names = sorted({v for _, t in texts for v in re.findall(rb"oc\.env:([A-Za-z_]\w*)", t)})
    env = tuple((n, os.environ.get(n.decode())) for n in names)
    return (texts, env)


def manifest(entry: StepEntry) -> StepManifest:
    return StepManifest.model_validate(load_toml(entry.manifest_path))


def own_keys(path: Path) -> dict:
    """The YAML file itself, without its `defaults:` parents."""
    return yaml.safe_load(path.read_text()) or {}


def ids(pairs):
    return [f"{e.id}:{n}" for e, n in pairs]


def test_catalog_has_the_four_content_steps():
    assert [e.id for e in CONTENT] == sorted(CONTENT_IDS)


# --- every step -----------------------------------------------------------------------------


@pytest.mark.parametrize("entry", STEPS, ids=STEP_IDS)
def test_manifest_validates_against_the_schema(entry):
    m = manifest(entry)
    assert m.step.id == entry.folder_id
    assert m.step.category == entry.folder_id.split("/")[0]


@pytest.mark.parametrize("entry", STEPS, ids=STEP_IDS)
def test_manifest_types_are_in_the_type_graph(entry):
    graph = load_types()
    m = manifest(entry)
    for port in [*m.consumes, *m.produces]:
        assert port.type in graph, f"{port.name}: unknown type {port.type}"


@pytest.mark.parametrize("entry", CONTENT, ids=[e.id for e in CONTENT])
def test_step_has_default_and_tiny_configs(entry):
    names = entry.config_names()
    assert manifest(entry).run.default_config in names
    assert "tiny" in names
    assert own_keys(entry.config_path("tiny")).get("defaults") == "default.yaml"


@pytest.mark.parametrize(("entry", "name"), CONFIGS, ids=ids(CONFIGS))
def test_every_config_resolves_without_environment_variables(entry, name, monkeypatch):
    cfg = resolved(entry, name, monkeypatch)
    assert isinstance(cfg, dict) and cfg


@pytest.mark.parametrize("entry", CONTENT, ids=[e.id for e in CONTENT])
def test_content_steps_declare_4_to_10_parameters(entry):
    assert 4 <= len(manifest(entry).parameters) <= 10


@pytest.mark.parametrize("entry", STEPS, ids=STEP_IDS)
def test_parameters_exist_in_default_config_with_their_default(entry, monkeypatch):
    m = manifest(entry)
    cfg = resolved(entry, m.run.default_config, monkeypatch)
    for p in m.parameters:
        assert _present(cfg, p.name), f"parameter {p.name} is not a key of the default config"
        assert get(cfg, p.name) == p.default, f"{p.name}: manifest says {p.default!r}"


@pytest.mark.parametrize("entry", STEPS, ids=STEP_IDS)
def test_port_config_keys_exist_in_default_config(entry, monkeypatch):
    m = manifest(entry)
    cfg = resolved(entry, m.run.default_config, monkeypatch)
    for port in [*m.consumes, *m.produces]:
        for key in port.config_keys:
            assert _present(cfg, key), f"{port.name}: {key} is not in the default config"
        if port.type_key:
            assert _present(cfg, port.type_key)


@pytest.mark.parametrize("entry", CONTENT, ids=[e.id for e in CONTENT])
def test_strategies_and_errors_are_real_and_use_known_codes(entry):
    m = manifest(entry)
    assert 2 <= len(m.strategies) <= 5
    assert m.errors
    rules = set(load_rules())
    for spec in m.error_specs:
        resolved = m.error(spec.name)
        assert spec.name in registry(), f"unregistered error code {spec.name}"
        assert resolved.description and resolved.recovery
        assert resolved.check is None or resolved.check in rules, f"{spec.name}: {resolved.check}"


@pytest.mark.parametrize("entry", STEPS, ids=STEP_IDS)
def test_local_references_exist(entry):
    ref = manifest(entry).reference
    if entry.id in CONTENT_IDS:
        assert ref.upstream and ref.local
    for rel in ref.local:
        assert (entry.dir / rel).exists(), f"[reference] local {rel} does not exist"


@pytest.mark.parametrize("entry", STEPS, ids=STEP_IDS)
def test_step_py_is_the_shared_runner_call(entry):
    text = (entry.dir / "step.py").read_text()
    tree = ast.parse(text)
    imports = [n for n in tree.body if isinstance(n, ast.ImportFrom)]
    runner = ("steps.cli.run_cmd", "main_for_step")
    assert any((n.module, n.names[0].name) == runner for n in imports)
    assert "main(Path(__file__).resolve().parent, sys.argv[1:])" in text
    assert f"steps/{entry.id}/step.py" in text
    assert len(text.splitlines()) <= 15


@pytest.mark.parametrize("entry", CONTENT, ids=[e.id for e in CONTENT])
def test_readme_names_the_step_and_its_smoke_command(entry):
    text = (entry.dir / "README.md").read_text()
    assert entry.id in text
    assert f"python -m steps run {entry.id} -c tiny --dry-run" in text
    for heading in ("## Inputs", "## Outputs", "## Guardrails"):
        assert heading in text, f"README lacks {heading}"
    cited = re.findall(r"patterns/([a-z0-9-]+)\.md", text)
    assert cited, "README cites no pattern"
    for pid in cited:
        assert (PATTERN_DIR / f"{pid}.md").is_file(), f"README cites missing pattern {pid}"


@pytest.mark.parametrize("entry", CONTENT, ids=[e.id for e in CONTENT])
def test_tiny_config_points_at_shipped_files_relative_to_its_folder(entry):
    tiny = entry.config_path("tiny")
    text = tiny.read_text()
    for rel in re.findall(r"data_path: (\.\./data/\S+)", text):
        assert (tiny.parent / rel).is_file(), f"{rel} does not exist beside {tiny}"


# --- NeMo-RL steps ---------------------------------------------------------------------------


@pytest.mark.parametrize(("entry", "name"), RL_CONFIGS, ids=ids(RL_CONFIGS))
def test_rl_config_has_every_section_the_master_config_requires(entry, name, monkeypatch):
    cfg = resolved(entry, name, monkeypatch)
    algorithm = manifest(entry).run.algorithm
    for section in MASTER_SECTIONS[algorithm]:
        assert isinstance(cfg.get(section), dict), f"missing section {section}"
    for key in POLICY_KEYS:
        assert _present(cfg["policy"], key), f"policy.{key}"
    for key in LOGGER_KEYS:
        assert _present(cfg["logger"], key), f"logger.{key}"
    assert _present(cfg["logger"], "num_val_samples_to_print")
    for key in CHECKPOINT_KEYS:
        assert _present(cfg["checkpointing"], key), f"checkpointing.{key}"
    for key in ("gpus_per_node", "num_nodes"):
        assert isinstance(cfg["cluster"][key], int)
    for key in ("max_input_seq_length", "shuffle", "train"):
        assert _present(cfg["data"], key), f"data.{key}"
    if algorithm == "grpo":
        gen = cfg["policy"]["generation"]
        for key in GENERATION_KEYS:
            assert _present(gen, key), f"policy.generation.{key}"
        for key in VLLM_KEYS:
            assert _present(gen["vllm_cfg"], key), f"policy.generation.vllm_cfg.{key}"


@pytest.mark.parametrize(("entry", "name"), RL_CONFIGS, ids=ids(RL_CONFIGS))
def test_rl_config_uses_the_megatron_backend_with_all_its_keys(entry, name, monkeypatch):
    policy = resolved(entry, name, monkeypatch)["policy"]
    meg = policy["megatron_cfg"]
    for key in MEGATRON_KEYS:
        assert _present(meg, key), f"policy.megatron_cfg.{key}"
    if name.endswith("_dtensor"):  # the one-GPU smoke without Megatron (tests/test_dtensor_backend)
        assert policy["dtensor_cfg"]["enabled"] is True and meg["enabled"] is False
        return
    assert policy["dtensor_cfg"] == {"enabled": False}
    assert meg["enabled"] is True


@pytest.mark.parametrize(("entry", "name"), RL_CONFIGS, ids=ids(RL_CONFIGS))
def test_rl_batch_sizes_divide_by_the_data_parallel_size(entry, name, monkeypatch):
    cfg = resolved(entry, name, monkeypatch)
    meg = cfg["policy"]["megatron_cfg"]
    world = cfg["cluster"]["num_nodes"] * cfg["cluster"]["gpus_per_node"]
    model_parallel = (
        meg["tensor_model_parallel_size"]
        * meg["pipeline_model_parallel_size"]
        * meg["context_parallel_size"]
    )
    assert world % model_parallel == 0, f"TPxPPxCP={model_parallel} does not divide {world} GPUs"
    assert meg["tensor_model_parallel_size"] <= cfg["cluster"]["gpus_per_node"]
    dp = world // model_parallel
    gbs, mbs = cfg["policy"]["train_global_batch_size"], cfg["policy"]["train_micro_batch_size"]
    assert gbs % (dp * mbs) == 0, f"train_global_batch_size {gbs} vs DP {dp} x micro {mbs}"
    if "grpo" in cfg:
        rollouts = cfg["grpo"]["num_prompts_per_step"] * cfg["grpo"]["num_generations_per_prompt"]
        assert rollouts % dp == 0, f"rollout batch {rollouts} vs DP {dp}"
        assert rollouts % gbs == 0, f"rollout batch {rollouts} is not whole train batches of {gbs}"
    else:
        assert cfg["dpo"]["val_global_batch_size"] % (dp * cfg["dpo"]["val_micro_batch_size"]) == 0
    ep = meg["expert_model_parallel_size"] * meg["expert_tensor_parallel_size"]
    assert world % (ep * meg["pipeline_model_parallel_size"]) == 0


@pytest.mark.parametrize(("entry", "name"), RL_CONFIGS, ids=ids(RL_CONFIGS))
def test_rl_sequence_padding_satisfies_megatron(entry, name, monkeypatch):
    policy = resolved(entry, name, monkeypatch)["policy"]
    meg = policy["megatron_cfg"]
    factor = 1
    if meg["context_parallel_size"] > 1:
        factor *= 2 * meg["context_parallel_size"]
    if meg["tensor_model_parallel_size"] > 1 and meg["sequence_parallel"]:
        factor *= meg["tensor_model_parallel_size"]
    assert policy["make_sequence_length_divisible_by"] % factor == 0


def _tiny(name: str) -> bool:
    """tiny, nemo_gym_tiny, tiny_dtensor: the smoke configs."""
    return "tiny" in name.split("_")


@pytest.mark.parametrize(("entry", "name"), RL_CONFIGS, ids=ids(RL_CONFIGS))
def test_rl_output_dirs_follow_the_convention(entry, name, monkeypatch):
    cfg = resolved(entry, name, monkeypatch)
    short = entry.id.rsplit("/", 1)[-1]
    ckpt, logs = cfg["checkpointing"]["checkpoint_dir"], cfg["logger"]["log_dir"]
    if _tiny(name):
        assert ckpt.startswith(f"/tmp/steps-output/{short}")
        assert logs.startswith(f"/tmp/steps-output/{short}")
        raw = config_file(entry, name).read_text()
        assert f"{OUTPUT_ENV}/{short}" in raw
    else:
        assert ckpt.startswith(f"results/{short}") and not ckpt.startswith("/")
        assert logs.startswith(f"results/{short}")


@pytest.mark.parametrize(("entry", "name"), RL_CONFIGS, ids=ids(RL_CONFIGS))
def test_tiny_rl_configs_are_one_gpu_and_a_few_steps(entry, name, monkeypatch):
    if not _tiny(name):
        pytest.skip("production config")
    cfg = resolved(entry, name, monkeypatch)
    assert cfg["cluster"] == {"gpus_per_node": 1, "num_nodes": 1} or (
        cfg["cluster"]["gpus_per_node"] == 1 and cfg["cluster"]["num_nodes"] == 1
    )
    algo = cfg.get("grpo") or cfg.get("dpo")
    assert algo["max_num_steps"] <= 5
    assert cfg["policy"]["model_name"] == "Qwen/Qwen3-0.6B"


@pytest.mark.parametrize(("entry", "name"), RL_CONFIGS, ids=ids(RL_CONFIGS))
def test_gym_flag_matches_the_data_and_scripts(entry, name, monkeypatch):
    cfg = resolved(entry, name, monkeypatch)
    if "grpo" not in cfg:
        assert "env" not in cfg or not cfg["env"].get("should_use_nemo_gym")
        return
    gym = cfg["env"].get("should_use_nemo_gym", False)
    default = cfg["data"].get("default") or {}
    if gym:
        assert manifest(entry).run.gym_script == "examples/nemo_gym/run_grpo_nemo_gym.py"
        assert default["dataset_name"] == "NemoGymDataset"
        assert default["processor"] == "nemo_gym_data_processor"
        assert default["env_name"] == "nemo_gym"
        assert cfg["grpo"]["max_val_samples"] is None
        assert cfg["grpo"]["val_batch_size"] is None
        assert cfg["grpo"]["async_grpo"]["enabled"] is False
        paths = cfg["env"]["nemo_gym"]["config_paths"]
        assert paths[0] == "responses_api_models/vllm_model/configs/vllm_model_for_training.yaml"
        for p in paths:
            assert re.fullmatch(
                r"(resources_servers|responses_api_models)/\w+/configs/\w+\.yaml", p
            )
        ref = cfg["run"]["default_agent_ref"]
        assert ref["type"] == "responses_api_agents" and ref["name"]
        vllm = cfg["policy"]["generation"]["vllm_cfg"]
        assert vllm["async_engine"] is True and vllm["expose_http_server"] is True
    else:
        assert default["env_name"] in cfg["env"], "data.default.env_name must be a key of env"
        assert default["dataset_name"] == "ResponseDataset"


# --- tiny data follows its contract --------------------------------------------------------


def _rows(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _tiny_data(entry: StepEntry, name: str) -> list[tuple[str, Path]]:
    text = entry.config_path(name).read_text()
    home = r"\$\{oc\.env:STEPS_HOME\}/(\S+)"  # NeMo-RL opens relative paths from its checkout
    found = re.findall(r"(train|validation):\s*\n\s*data_path: " + home, text)
    return [(split, BUILTIN_ROOT.parent / rel) for split, rel in found]


TINY_RL = [(e, n) for e, n in RL_CONFIGS if n.endswith("tiny")]


@pytest.mark.parametrize(("entry", "name"), TINY_RL, ids=ids(TINY_RL))
def test_tiny_rows_follow_the_row_contract_the_config_selects(entry, name, monkeypatch):
    cfg = resolved(entry, name, monkeypatch)
    data = _tiny_data(entry, name)
    assert {s for s, _ in data} == {"train", "validation"}
    default = cfg["data"].get("default") or {}
    for _split, path in data:
        rows = _rows(path)
        assert 8 <= len(rows) <= 20, f"{path.name}: {len(rows)} rows"
        for i, row in enumerate(rows, 1):
            where = f"{path.name}:{i}"
            if "dpo" in cfg:
                for key in (default["prompt_key"], default["chosen_key"], default["rejected_key"]):
                    assert row.get(key), f"{where}: empty {key}"
                assert row[default["chosen_key"]] != row[default["rejected_key"]], where
            elif cfg["env"].get("should_use_nemo_gym"):
                rcp = row["responses_create_params"]
                assert isinstance(rcp["input"], list) and rcp["input"], where
                for msg in rcp["input"]:
                    assert msg["role"] in {"system", "developer", "user", "assistant"}, where
                    assert isinstance(msg["content"], str) and msg["content"].strip(), where
                assert row["agent_ref"] == cfg["run"]["default_agent_ref"], where
            else:
                assert str(row[default["input_key"]]).strip(), where
                assert str(row[default["output_key"]]).strip(), where
        if "dpo" not in cfg and cfg["env"].get("should_use_nemo_gym"):
            agent = cfg["run"]["default_agent_ref"]["name"]
            if agent.startswith("math_with_judge"):
                assert all(r["question"] and r["expected_answer"] for r in rows)


def test_rlhf_genrm_cohort_matches_the_group_size(monkeypatch):
    entry = next(e for e in STEPS if e.id == "rl/nemo_rl/rlhf")
    for name in entry.config_names():
        cfg = resolved(entry, name, monkeypatch)
        server = cfg["env"]["nemo_gym"]["genrm_compare_resources_server"]["resources_servers"]
        genrm = server["genrm_compare"]
        group = cfg["grpo"]["num_generations_per_prompt"]
        assert genrm["num_rollouts_per_prompt"] == group, name
        assert cfg["grpo"]["val_num_generations_per_prompt"] == group, name
        assert genrm["comparison_strategy"] == "circular"
        assert (
            "resources_servers/genrm_compare/configs/genrm_compare.yaml"
            in (cfg["env"]["nemo_gym"]["config_paths"])
        )
        model = cfg["env"]["nemo_gym"]["genrm_model"]["responses_api_models"]["genrm_model"]
        assert model["model"], name
    default = resolved(entry, "default", monkeypatch)
    assert default["grpo"]["num_prompts_per_step"] == 128
    assert default["grpo"]["num_generations_per_prompt"] == 16
    genrm = default["env"]["nemo_gym"]["genrm_compare_resources_server"]["resources_servers"]
    assert genrm["genrm_compare"]["reasoning_bonus"] == 0.5
    assert genrm["genrm_compare"]["answer_bonus"] == 0.5


def test_rlvr_defaults_match_the_brief(monkeypatch):
    entry = next(e for e in STEPS if e.id == "rl/nemo_rl/rlvr")
    cfg = resolved(entry, "default", monkeypatch)
    assert cfg["grpo"]["num_generations_per_prompt"] == 8
    assert cfg["grpo"]["normalize_rewards"] is True
    assert cfg["env"]["should_use_nemo_gym"] is False
    gym = resolved(entry, "nemo_gym", monkeypatch)
    assert gym["env"]["should_use_nemo_gym"] is True
    assert any("math_with_judge" in p for p in gym["env"]["nemo_gym"]["config_paths"])


# --- the converter --------------------------------------------------------------------------

CONVERT = [e for e in STEPS if e.data.get("run", {}).get("runner") == "megatron_to_hf"]


@pytest.mark.parametrize("entry", CONVERT, ids=[e.id for e in CONVERT])
def test_convert_configs_carry_exactly_the_keys_the_runner_reads(entry, monkeypatch):
    for name in entry.config_names():
        cfg = resolved(entry, name, monkeypatch)
        for key in CONVERT_KEYS:
            assert _present(cfg, key), f"{name}: {key}"
        assert cfg["torch_dtype"] in {"bfloat16", "float16", "float32"}
        assert cfg["megatron_bridge"]["script"].endswith(".py")
        assert not cfg["megatron_bridge"]["script"].startswith("/")
        assert cfg["megatron_bridge"]["root"] == "/opt/Megatron-Bridge"
        par = cfg["parallel"]
        world = cfg["distributed"]["nproc_per_node"] if cfg["distributed"]["enabled"] else 1
        assert world % (par["tp"] * par["pp"]) == 0
        assert world % (par["etp"] * par["ep"] * par["pp"]) == 0
    tiny = resolved(entry, "tiny", monkeypatch)
    assert tiny["distributed"]["enabled"] is False or tiny["distributed"]["nproc_per_node"] == 1
    assert tiny["hf_path"].startswith("/tmp/steps-output/megatron_to_hf")


# --- patterns -------------------------------------------------------------------------------

REQUIRED_PATTERNS = {
    "validate-rewards-before-scaling",
    "check-preference-pair-order",
    "gym-rows-need-agent-ref",
    "prepared-data-is-tokenizer-locked",
    "convert-at-artifact-boundaries",
    "fresh-checkpoint-dir-for-fresh-run",
    "batch-divisibility",
}


@pytest.mark.parametrize("path", PATTERNS, ids=[p.stem for p in PATTERNS])
def test_pattern_passes_the_catalog_pattern_check(path):
    pattern, findings = parse_pattern(path, set(STEP_IDS))
    assert pattern is not None
    assert [f.render() for f in findings] == []
    assert pattern.steps, f"{path.name} names no step"


def test_required_patterns_exist():
    missing = REQUIRED_PATTERNS - {p.stem for p in PATTERNS}
    assert not missing, f"missing patterns: {sorted(missing)}"


def test_manifests_and_readmes_cite_only_existing_patterns():
    names = {p.stem for p in PATTERNS}
    for entry in CONTENT:
        text = entry.manifest_path.read_text() + (entry.dir / "README.md").read_text()
        for pid in re.findall(r"pattern ([a-z0-9]+(?:-[a-z0-9]+)+)", text):
            assert pid in names, f"{entry.id} cites missing pattern {pid}"
