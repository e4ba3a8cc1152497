"""Upstream's own GRPO and DPO example configs compile as NeMo-RL compiles them and get no error
from preflight but the paths that do not exist on this machine (issue 29 item 4).

The corpus is `examples/configs/` of every NeMo-RL release from v0.4.0 and the pin, unmodified
(`../shared/fixtures/nemo-rl/configs/<version>/`). Each file is compiled by `steps` for its own
version (shipped schema, overlays, one override) and by a reference of NeMo-RL's
`load_config` + `parse_hydra_overrides` written here from upstream's rules; both must resolve
to the same dict. Preflight then runs as a dry run does, without a launch or a step of ours.
"""

from __future__ import annotations

import copy
import os
from functools import cache
from pathlib import Path

import pytest
import yaml
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf
from preflight_fixtures import error_codes, grpo_config, gym_config, run_rules

from catalog.nemo_rl_version import parse_version
from catalog.upstream import NEMO_RL_RELEASES
from runners.nemo_rl import checkout as nemo_rl
from runners.preflight import PreflightContext, preflight
from runners.preflight.gym import gym_generation
from runners.preflight.topology import training_gpus

REPO = Path(__file__).resolve().parents[1]
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
OVERRIDES = ["++logger.wandb_enabled=false"]  # what an offline try of a recipe sets
# What a path that exists on the cluster but not here gives (data, model, Gym configs).
PATH_CODES = {"E-INPUT-MISSING", "E-TOKENIZER-PATH", "E-GYM-CONFIG-PATH"}
# True findings on upstream's own files: the code each gets, and why it is right.
TP_ESCAPE = (
    "E-TP-LOGPROB-BATCH",
    "TP >= 4 with train_micro_batch_size != logprob_batch_size: upstream runs it only with "
    "NRL_IGNORE_TP_ACCURACY_CHECK=1 (tests/test_suites/llm/*.sh export it; v0.7.0 "
    "tests/unit/test_config_validation.py:168-179 skips these files)",
)
BATCH_MULTIPLIER = (
    "E-GRPO-SAMPLING",
    "inherits grpo.batch_multiplier 1.5 from prorlv2 and sets use_dynamic_sampling false: "
    "grpo.py asserts batch_multiplier == 1 (v0.6.0 :292-294, v0.7.0 :343-345, pin :571-573)",
)
KNOWN = {
    "recipes/llm/grpo-gemma3-27b-it-8n4g-fsdp2tp4-actckpt-long.yaml": TP_ESCAPE,
    "recipes/llm/grpo-gemma3-27b-it-8n8g-fsdp2tp8-actckpt-long.yaml": TP_ESCAPE,
    "recipes/llm/grpo-qwen3-30ba3b-8n8g-megatron.yaml": TP_ESCAPE,
    "recipes/llm/performance/grpo-qwen3-30ba3b-4n8g-40K.yaml": TP_ESCAPE,
    "recipes/llm/performance/grpo-qwen3-32b-4n8g.yaml": TP_ESCAPE,  # v0.6.0: TP 4, lbs 2
    "recipes/llm/performance/grpo-qwen3-32b-8n8g-async-1off.yaml": TP_ESCAPE,  # v0.6.0
    "prorlv2_1_moe.yaml": BATCH_MULTIPLIER,
    "prorlv2_1_moe.v2.yaml": BATCH_MULTIPLIER,
}
REFERENCE_RESOLVERS = {
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "max": lambda a, b: max(a, b),
    "add": lambda a, b: a + b,
}
ENV = {"HF_HOME": "/nonexistent/hf_home"}  # upstream's mopd recipes read ${oc.env:HF_HOME}


def corpus_root() -> Path | None:
    for shared in (REPO / "shared", REPO.parent / "shared"):
        if (shared / "fixtures" / "nemo-rl" / "configs").is_dir():
            return shared / "fixtures" / "nemo-rl" / "configs"
    return None


def version_name(folder: str) -> str:
    return "pin" if folder.startswith("pin") else folder.removeprefix("v")


@cache
def _yaml(path: Path) -> dict:
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=LOADER)
    return data if isinstance(data, dict) else {}


def _parents(path: Path) -> list[Path]:
    found = _yaml(path).get("defaults") or []
    return [path.parent / str(p) for p in ([found] if isinstance(found, str) else found)]


def chain_outside(path: Path, root: Path) -> Path | None:
    """The first parent in the `defaults:` chain that is not in the corpus (upstream keeps it
    outside examples/configs/, e.g. examples/nemo_gym/), else None."""
    for parent in _parents(path):
        if not parent.is_file():
            return parent
        missing = chain_outside(parent, root)
        if missing is not None:
            return missing
    return None


def algorithm_of(path: Path) -> str | None:
    """`grpo` or `dpo` when the file or a parent has that section (what selects the script);
    with a parent outside the corpus, upstream's recipe name says (`grpo-...`, `dpo-...`)."""
    keys = set(_yaml(path))
    for parent in _parents(path):
        keys.add((algorithm_of(parent) if parent.is_file() else _named(path)) or "")
    return next((a for a in ("grpo", "dpo") if a in keys), None)


def _named(path: Path) -> str | None:
    return next((a for a in ("grpo", "dpo") if path.name.startswith((a, f"vlm_{a}"))), None)


def corpus() -> list[tuple[str, str, str]]:
    """(version folder, path relative to it, algorithm) of every GRPO and DPO file."""
    root = corpus_root()
    if root is None:
        return []
    out = []
    for folder in sorted(p.name for p in root.iterdir() if p.is_dir()):
        for path in sorted((root / folder).rglob("*.yaml")):
            algo = algorithm_of(path)
            if algo is not None:
                out.append((folder, path.relative_to(root / folder).as_posix(), algo))
    return out


CORPUS = corpus()


def _merge_marked(base: DictConfig, child: DictConfig) -> DictConfig:
    """A top-level section marked `_override_: true` replaces the parent's (upstream's
    merge_with_override); deeper markers stay as written."""
    for key in list(child.keys()):
        section = child[key]
        if isinstance(section, DictConfig) and section.get("_override_", False):
            section.pop("_override_")
            if key in base:
                base.pop(key)
    return OmegaConf.merge(base, child)  # type: ignore[return-value]


def reference_load(path: Path) -> DictConfig:
    """NeMo-RL's load_config: OmegaConf.load, then parents (a name or a list, relative to the
    file's folder) merged in order, depth first, and the file itself last."""
    return OmegaConf.create(_reference_loaded(path.resolve()))


@cache
def _reference_loaded(path: Path) -> dict:
    """`reference_load` of one file, unresolved, computed once (parents are shared widely)."""
    config = OmegaConf.load(path)
    assert isinstance(config, DictConfig)
    if "defaults" in config:
        parents = config.pop("defaults")
        names = [parents] if isinstance(parents, str) else [str(p) for p in parents]
        merged: DictConfig = OmegaConf.create({})
        for name in names:
            merged = _merge_marked(merged, reference_load(path.parent / name))
        config = _merge_marked(merged, config)
    return OmegaConf.to_container(config, resolve=False)  # type: ignore[return-value]


def reference_compile(path: Path, overrides: list[str]) -> dict:
    """load_config, parse_hydra_overrides (struct mode, Hydra's own parser and applier), and
    the resolvers NeMo-RL's utils/config.py registers (mul, div, max; the pin adds add)."""
    for name, fn in REFERENCE_RESOLVERS.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)
    config = reference_load(path)
    OmegaConf.set_struct(config, True)
    parsed = OverridesParser.create().parse_overrides(overrides=overrides)
    ConfigLoaderImpl._apply_overrides_to_config(overrides=parsed, cfg=config)
    OmegaConf.set_struct(config, False)
    return OmegaConf.to_container(config, resolve=True)  # type: ignore[return-value]


def _id(case: tuple[str, str, str]) -> str:
    return f"{case[0]}/{case[1]}"


@pytest.mark.slow  # ~600 compiles, each twice, and dry runs: 1.5 min on two busy cores
@pytest.mark.parametrize(("folder", "rel", "algo"), CORPUS, ids=map(_id, CORPUS))
def test_upstream_config_compiles_as_nemo_rl_and_gets_no_false_error(
    folder: str, rel: str, algo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = corpus_root()
    assert root is not None
    path = root / folder / rel
    outside = chain_outside(path, root)
    if outside is not None:
        where = Path(os.path.relpath(outside, root / folder)).as_posix()
        pytest.skip(f"parent {where} lives outside examples/configs/ (not in the corpus)")
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    version = parse_version(version_name(folder), source="corpus", named=True)
    compiled = nemo_rl.compile_for(nemo_rl.Target(None, version), algo, path, OVERRIDES)
    resolved = compiled.resolved()
    assert resolved == reference_compile(path, OVERRIDES)
    ctx = PreflightContext(
        step_id=f"upstream/{algo}",
        manifest=None,
        config=resolved,
        config_file=path,
        compiled=compiled,
        nemo_rl_version=version,
    )
    errors = {f.code: f.message for f in preflight(ctx) if f.is_error}
    unexpected = {c: m for c, m in errors.items() if c not in PATH_CODES}
    known = KNOWN.get(rel)
    if known is not None and known[0] in unexpected:
        unexpected.pop(known[0])
    assert unexpected == {}, f"{folder}/{rel}"


def test_the_corpus_covers_every_grpo_and_dpo_file_of_every_release() -> None:
    if not CORPUS:
        pytest.skip("no shared/fixtures/nemo-rl/configs next to this checkout")
    folders = {case[0] for case in CORPUS}
    assert {version_name(f) for f in folders} == {*NEMO_RL_RELEASES, "pin"}
    counts = {f: sum(1 for c in CORPUS if c[0] == f) for f in sorted(folders)}
    print("upstream GRPO/DPO configs per corpus folder:", counts)
    assert all(n >= 20 for n in counts.values()), counts


PIN, V070, V060 = (parse_version(v) for v in ("pin", "0.7.0", "0.6.0"))


def _ctx(config: dict, version=PIN) -> PreflightContext:
    return PreflightContext("rl/test/grpo", None, copy.deepcopy(config), nemo_rl_version=version)


def test_nodes_of_non_colocated_teachers_do_not_train() -> None:
    """pin grpo.py:782-801 (v0.7.0 :543-557): 10 nodes = 8 train + 1 generate + 1 teacher;
    two agents sharing one teacher checkpoint reserve one node (deduplicated)."""
    config = {
        "grpo": {},
        "cluster": {"num_nodes": 10, "gpus_per_node": 8},
        "policy": {"generation": {"colocated": {"enabled": False, "resources": {"num_nodes": 1}}}},
        "on_policy_distillation": {
            "enabled": True,
            "teacher_model_by_agent_name": {"a": "teacher", "b": "teacher"},
            "non_colocated_teachers": {"enabled": True, "default_teacher_cfg": {}},
        },
    }
    gpus, how = training_gpus(_ctx(config))
    assert gpus == 64 and how.startswith("training (8 of 10 nodes; 1 generate")
    config["on_policy_distillation"]["deduplicate_shared_teacher_checkpoints"] = False
    assert training_gpus(_ctx(config))[0] == 56
    config["on_policy_distillation"]["non_colocated_teachers"]["enabled"] = False
    assert training_gpus(_ctx(config))[0] == 72


def test_gym_runs_on_trtllm_and_dynamo_generation_from_the_pin(tmp_path: Path) -> None:
    """pin nemo_gym.py:95-110 takes vllm, megatron, trtllm and dynamo; v0.7.0 vllm, megatron."""
    config = gym_config(tmp_path)
    for backend in ("trtllm", "dynamo"):
        config["policy"]["generation"]["backend"] = backend
        assert list(gym_generation(_ctx(config, PIN))) == []
        assert [f.code for f in gym_generation(_ctx(config, V070))] == ["E-GYM-GENERATION"]


def test_vllm_env_var_values_may_be_numbers_as_upstream_str_s_them(tmp_path: Path) -> None:
    """vllm_generation.py (v0.7.0 :206-207, pin :217-218) passes each value through str()."""
    config = grpo_config(tmp_path)
    config["policy"]["generation"]["vllm_cfg"]["env_vars"] = {"VLLM_FLAG": 1, "RATIO": 0.5}
    found = run_rules(config, nemo_rl_version=PIN)
    assert [f.key for f in found if f.code.startswith("E-SCHEMA")] == []


def test_a_val_metric_without_validation_is_a_warning_as_nemo_rl_trains_on(
    tmp_path: Path,
) -> None:
    """grpo.py warns at each checkpoint that no val metric was collected (v0.7.0 :2911-2918)."""
    config = grpo_config(tmp_path)
    config["grpo"].update({"val_period": 0, "val_at_start": False, "val_at_end": False})
    config["data"]["validation"] = None
    config["checkpointing"]["metric_name"] = "val:accuracy"
    found = run_rules(config, nemo_rl_version=V070)
    assert "E-VALIDATION-SETTINGS" not in error_codes(found)
    warned = [f for f in found if f.code == "W-VALIDATION-SETTINGS"]
    assert [f.key for f in warned] == ["checkpointing.metric_name"]
    assert "grpo.py:2911-2918" in warned[0].message


V050 = parse_version("0.5.0")


def test_0_4_and_0_5_are_supported_with_their_own_shipped_schema() -> None:
    for number in ("0.4.0", "0.5.0"):
        version = parse_version(number)
        assert version.supported and version.shipped == number
        target = nemo_rl.resolve_target(None, {}, number)
        assert target.describe("grpo").endswith(f"schema shipped for {number}")


def test_before_0_6_one_dataset_may_bring_its_own_validation_split(tmp_path: Path) -> None:
    """v0.5.0 examples/run_grpo.py:103-113 validates on the dataset's own split: a hub dataset
    (its name only) is not refused; a path-based one without val_data_path is."""
    config = grpo_config(tmp_path)
    config["data"] = {"dataset_name": "OpenMathInstruct-2", "shuffle": True, "num_workers": 1}
    assert "E-VALIDATION-SETTINGS" not in error_codes(run_rules(config, nemo_rl_version=V050))
    config["data"].update(dataset_name="ResponseDataset", train_data_path="/data/train.jsonl")
    assert "E-VALIDATION-SETTINGS" in error_codes(run_rules(config, nemo_rl_version=V050))


def test_asserts_that_arrive_in_0_6_are_not_applied_to_0_5(tmp_path: Path) -> None:
    """0.5.0 has no TP >= 4 logprob assert (lm_policy.py), no Megatron packing pad assert (it
    pads by TP/CP itself, megatron/common.py:259-264), reads save_optimizer and
    use_multiple_dataloader with .get or not at all."""
    config = grpo_config(tmp_path)
    meg = config["policy"]["megatron_cfg"]
    meg.update(tensor_model_parallel_size=4, context_parallel_size=2, sequence_parallel=True)
    config["policy"].update(train_micro_batch_size=1, logprob_batch_size=2)
    config["policy"]["make_sequence_length_divisible_by"] = 4
    config["policy"]["sequence_packing"] = {"enabled": True}
    config["cluster"].update(num_nodes=1, gpus_per_node=8)
    del config["checkpointing"]["save_optimizer"]
    config["data"].pop("use_multiple_dataloader", None)
    watched = {
        ("E-TP-LOGPROB-BATCH", "policy.logprob_batch_size"),
        ("E-SEQ-DIVISIBLE", "policy.make_sequence_length_divisible_by"),
        ("E-SETUP-KEY", "checkpointing.save_optimizer"),
    }

    def found(version) -> set:
        return {(f.code, f.key) for f in run_rules(config, nemo_rl_version=version)} & watched

    assert found(V060) == watched and found(V050) == set()


def test_our_step_config_on_0_5_is_told_its_data_section_has_the_newer_shape() -> None:
    from preflight_fixtures import context_for

    rlvr = REPO / "steps" / "rl" / "nemo_rl" / "rlvr"
    ctx = context_for(rlvr / "config" / "default.yaml", rlvr, "0.5.0")
    found = [f for f in preflight(ctx) if f.code == "E-SCHEMA-KEY"]
    assert [f.key for f in found] == ["data.dataset_name"]
    assert "0.6.0+ shape" in str(found[0].fix) and "NeMo-RL 0.5.0 reads one dataset" in str(
        found[0].fix
    )
