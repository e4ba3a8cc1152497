"""The NeMo-RL that will run decides the schema, the overlays, the rules and the script name."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from nemo_rl_trees import git_commit, nemo_rl_tree, toy_step, write
from preflight_fixtures import context_for, grpo_config, run_rules

from catalog.errors import StepsError
from catalog.nemo_rl_version import check_range, parse_version
from catalog.upstream import NEMO_RL_OLDEST, NEMO_RL_STEP_RELEASES
from runners.nemo_rl import checkout as nemo_rl
from runners.nemo_rl.schema import store
from runners.preflight import PreflightContext, load_rules, preflight
from steps.cli import main

ROOT = Path(__file__).resolve().parents[1]
STEPS = ROOT / "steps" / "rl" / "nemo_rl"
SHIPPED = sorted(STEPS.glob("*/config/*.yaml"))
SUPPORTED = [*NEMO_RL_STEP_RELEASES, "pin"]  # the versions our steps' configs run on
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STEPS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NEMO_RL_HOME", raising=False)
    store.cached_schema_for.cache_clear()
    return tmp_path / "cache"


def _schema_findings(step: Path, tree: Path, config: Path | None = None) -> list:
    """The schema findings of a config compiled for the NeMo-RL at `tree`, as `run` does."""
    target = nemo_rl.resolve_target(tree, {})
    config = config or step / "config" / "default.yaml"
    compiled = nemo_rl.compile_for(target, "grpo", config, [])
    ctx = PreflightContext(
        step_id="rl/toy_grpo",
        manifest=None,
        config=compiled.resolved(),
        config_file=config,
        nemo_rl_dir=tree,
        compiled=compiled,
        nemo_rl_version=target.version,
    )
    return [f for f in preflight(ctx) if f.code.startswith(("E-SCHEMA", "W-SCHEMA"))]


def test_version_comes_from_package_info_without_importing_nemo_rl(tmp_path: Path) -> None:
    version = nemo_rl.detect_version(nemo_rl_tree(tmp_path / "rl", "0.6.0"))
    assert (version.label, version.source, version.commit) == (
        "0.6.0",
        "nemo_rl/package_info.py",
        None,
    )
    assert "nemo_rl" not in sys.modules


@needs_git
def test_version_comes_from_the_git_tag_then_counts_commits_after_it(tmp_path: Path) -> None:
    tree = nemo_rl_tree(tmp_path / "rl", "0.7.0")
    sha = git_commit(tree, tag="v0.7.0")
    tagged = nemo_rl.detect_version(tree)
    assert (tagged.label, tagged.source, tagged.commit) == ("0.7.0", "git tag v0.7.0", sha)
    write(tree / "nemo_rl/package_info.py", 'MAJOR = 0\nMINOR = 6\nPATCH = 0\nPRE_RELEASE = ""\n')
    later = git_commit(tree)  # main's package_info.py lags the tags: the tag still wins
    after = nemo_rl.detect_version(tree)
    assert (after.label, after.commit) == ("0.7.0+", later)
    assert after.key > tagged.key and not after.shipped


def test_an_explicit_version_wins_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    tree = nemo_rl_tree(tmp_path / "rl", "0.6.0")
    assert nemo_rl.detect_version(tree, "v0.7.0").label == "0.7.0"
    assert nemo_rl.detect_version(None, "pin").label.startswith("main@7ea279ab")
    assert nemo_rl.detect_version(None) is None
    with pytest.raises(StepsError) as err:
        nemo_rl.detect_version(None, "seven")
    assert err.value.finding.code == "E-NEMO-RL-VERSION" and err.value.exit_code == 2


def test_schema_is_derived_once_per_checkout_then_read_from_the_cache(
    tmp_path: Path, _cache: Path
) -> None:
    tree = nemo_rl_tree(tmp_path / "rl", "0.7.0")
    version = nemo_rl.detect_version(tree)
    first = store.schema_for("grpo", tree, version)
    assert first.origin.startswith(f"derived from {tree.resolve()} now")
    assert "val_temperature" in first.doc["classes"]["GenerationConfig"]["fields"]
    assert len(list(_cache.rglob("*.json"))) == 1  # every algorithm the tree has, at once
    again = store.schema_for("grpo", tree, version)
    assert again.origin.startswith("derived, cached at") and again.doc == first.doc
    gen = tree / "nemo_rl/models/generation/__init__.py"
    write(gen, gen.read_text() + "    val_top_p: float\n")  # an edited checkout is derived anew
    edited = store.schema_for("grpo", tree, version)
    assert "derived from" in edited.origin
    assert "val_top_p" in edited.doc["classes"]["GenerationConfig"]["fields"]
    assert "nemo_rl" not in sys.modules


def test_a_shipped_schema_is_parsed_once_per_content_and_read_anew_when_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "NEMO_RL_SCHEMA_DIR", tmp_path)
    doc = tmp_path / "9.9.9" / "grpo.json"
    write(doc, json.dumps({"classes": {"A": {}}}))
    first = store.shipped_schema("9.9.9", "grpo")
    assert store.shipped_schema("9.9.9", "grpo") is first  # one document for every reader
    write(doc, json.dumps({"classes": {"B": {}}}))  # the same size, maybe the same mtime tick
    assert store.shipped_schema("9.9.9", "grpo") == {"classes": {"B": {}}}
    assert store.shipped_schema("9.9.9", "dpo") is None


def test_a_version_given_by_name_uses_its_shipped_schema_even_beside_a_checkout(
    tmp_path: Path,
) -> None:
    tree = nemo_rl_tree(tmp_path / "rl", "0.7.0")  # e.g. a login node's copy of another release
    target = nemo_rl.resolve_target(tree, {}, "0.6.0")
    assert (target.version.label, target.version.source) == ("0.6.0", "nemo_rl_version given")
    assert target.describe("grpo").endswith("; schema shipped for 0.6.0")
    assert (
        nemo_rl.resolve_target(None, {}, "0.8.0")
        .describe("grpo")
        .endswith("schema no schema ships for 0.8.0; shipped for main@7ea279ab (the pin)")
    )


def test_a_key_one_version_declares_is_judged_per_version(tmp_path: Path) -> None:
    step = toy_step(tmp_path / "catalog")
    mine = write(
        tmp_path / "mine.yaml",
        f"defaults: {step / 'config' / 'default.yaml'}\n"
        "policy:\n  generation:\n    val_temperature: 0.5\n",
    )
    old = nemo_rl_tree(tmp_path / "old", "0.6.0")
    new = nemo_rl_tree(tmp_path / "new", "0.7.0")
    found = _schema_findings(step, old, mine)
    assert [(f.code, f.key, f.line) for f in found] == [
        ("W-SCHEMA-UNKNOWN", "policy.generation.val_temperature", 4)
    ]
    assert "in NeMo-RL 0.6.0" in found[0].message
    assert _schema_findings(step, new, mine) == []


def test_overlay_keys_reach_only_the_versions_that_know_them(tmp_path: Path) -> None:
    step = toy_step(tmp_path / "catalog")
    default = step / "config" / "default.yaml"
    old = nemo_rl.resolve_target(nemo_rl_tree(tmp_path / "old", "0.6.0"), {})
    new = nemo_rl.resolve_target(nemo_rl_tree(tmp_path / "new", "0.7.0"), {})
    assert (
        "val_temperature"
        not in nemo_rl.compile_for(old, "grpo", default, []).resolved()["policy"]["generation"]
    )
    compiled = nemo_rl.compile_for(new, "grpo", default, ["policy.generation.val_temperature=0.9"])
    generation = compiled.resolved()["policy"]["generation"]
    assert generation["val_temperature"] == 0.9  # added before the overrides, which may set it
    where = compiled.locate("policy.generation.val_temperature")[0]
    assert where == "override 'policy.generation.val_temperature=0.9'"  # set last by the override
    plain = nemo_rl.compile_for(new, "grpo", default, [])
    assert plain.locate("policy.generation.val_temperature")[0].endswith("overlays/default.yaml")
    assert "checkpoint" not in compiled.resolved()["policy"]  # never half a section (no layout)
    overlay = step / "config/overlays/default.yaml"
    write(overlay, overlay.read_text().replace("true\n", "true\n    layout: x\n", 1))
    assert nemo_rl.compile_for(new, "grpo", default, []).resolved()["policy"]["checkpoint"] == {
        "async_save": True,
        "layout": "x",
    }
    assert _schema_findings(step, new.checkout) == []
    assert _schema_findings(step, old.checkout) == []


def test_a_null_is_accepted_only_where_that_versions_examples_set_it(tmp_path: Path) -> None:
    step = toy_step(tmp_path / "catalog")
    old = nemo_rl_tree(tmp_path / "old", "0.6.0")
    nulls = write(
        tmp_path / "nulls.yaml",
        f"defaults: {step / 'config' / 'default.yaml'}\n"
        "grpo:\n  max_val_samples: null\n  num_prompts_per_step: null\n",
    )
    found = _schema_findings(step, old, nulls)
    assert [(f.code, f.key) for f in found] == [("E-SCHEMA-TYPE", "grpo.num_prompts_per_step")]


def test_an_old_checkout_gets_one_error_naming_its_version_and_the_oldest(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    toy_step(tmp_path / "catalog")
    old = nemo_rl_tree(tmp_path / "rl", "0.3.1", script="examples/run_grpo_math.py")
    argv = ["run", "rl/toy_grpo", "--catalog", str(tmp_path / "catalog"), "--nemo-rl", str(old)]
    code = main([*argv, "--runs-dir", str(tmp_path / "runs"), "--dry-run"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and re.findall(r"\bE-[A-Z][A-Z-]+", err) == ["E-NEMO-RL-VERSION"]
    assert err.startswith("E-NEMO-RL-VERSION NeMo-RL 0.3.1 at ")
    assert f"oldest supported version, {NEMO_RL_OLDEST}" in err and "NOT-FOUND" not in err


def test_the_script_name_comes_from_the_version() -> None:
    spec = type("Run", (), {"script": "examples/run_grpo.py", "gym_script": None})()
    assert nemo_rl.choose_script(spec, {}, parse_version("0.4.0")) == "examples/run_grpo_math.py"
    assert nemo_rl.choose_script(spec, {}, parse_version("0.6.0")) == "examples/run_grpo.py"
    assert nemo_rl.choose_script(spec, {}, None) == "examples/run_grpo.py"


def test_dry_run_shows_the_version_and_run_json_records_it(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    toy_step(tmp_path / "catalog")
    tree = nemo_rl_tree(tmp_path / "rl", "0.7.0")
    argv = ["run", "rl/toy_grpo", "--catalog", str(tmp_path / "catalog"), "--nemo-rl", str(tree)]
    main([*argv, "--runs-dir", str(tmp_path / "runs"), "--dry-run", "--keep"])
    shown = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("nemo-rl: ")]
    assert len(shown) == 1 and shown[0].startswith("nemo-rl: 0.7.0 (nemo_rl/package_info.py); ")
    assert f"schema derived from {tree.resolve()} now, cached at " in shown[0]
    record = json.loads(next((tmp_path / "runs").rglob("run.json")).read_text())
    assert record["nemo_rl_version"] == {
        "version": "0.7.0",
        "commit": None,
        "source": "nemo_rl/package_info.py",
    }


@pytest.mark.parametrize("version", SUPPORTED)
@pytest.mark.parametrize("config", SHIPPED, ids=[f"{p.parts[-3]}/{p.stem}" for p in SHIPPED])
def test_shipped_configs_are_clean_on_every_supported_version(config: Path, version: str) -> None:
    assert {"dpo", "rlvr", "rlhf"} <= {p.parts[-3] for p in SHIPPED}
    ctx = context_for(config, config.parents[1], version)
    user_gives = re.compile(r"^data\.(train|validation)\.data_path$")  # `???` in default.yaml
    problems = [
        f.render()
        for f in preflight(ctx)
        if (f.is_error and not (f.code == "E-CONFIG-UNRESOLVED" and user_gives.match(f.key)))
        or f.code.startswith("W-SCHEMA")
    ]
    assert problems == []
    if config.parts[-3] != "dpo":  # the overlay: val_temperature is required from the pin on
        assert ("val_temperature" in ctx.config["policy"]["generation"]) == (version == "pin")


@pytest.mark.parametrize("version", SUPPORTED)
def test_a_typo_is_an_error_with_did_you_mean_on_every_version(
    tmp_path: Path, version: str
) -> None:
    rlvr = STEPS / "rlvr"
    mine = write(
        tmp_path / "mine.yaml",
        f"defaults: {rlvr / 'config/tiny.yaml'}\ngrpo:\n  normalise_rewards: true\n",
    )
    found = [
        f
        for f in preflight(context_for(mine, rlvr, version))
        if f.code.startswith("W-SCHEMA") or f.code == "E-SCHEMA-TYPO"
    ]
    assert [f.key for f in found] == ["grpo.normalise_rewards"]
    assert "did you mean 'normalize_rewards'" in found[0].message and found[0].is_error


def test_rules_that_mirror_newer_asserts_skip_older_versions(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    cfg["policy"]["megatron_cfg"]["use_fused_linear_logprobs"] = True
    cfg["policy"]["generation"]["top_k"] = 20

    def fused(version: str | None) -> bool:
        found = run_rules(cfg, nemo_rl_version=parse_version(version) if version else None)
        return any(f.code == "E-FUSED-LOGPROBS" for f in found)

    assert (fused("pin"), fused("0.7.0"), fused(None)) == (True, False, True)


def test_preflight_md_states_the_versions_of_every_rule() -> None:
    versions = {r: spec.versions for r, spec in load_rules().items()}
    documented: dict[str, str] = {}
    for line in (ROOT / "PREFLIGHT.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) > 2 and cells[0] in versions:
            documented.setdefault(cells[0], cells[-1].strip("`"))
    assert all(check_range(spec) for spec in versions.values())
    mirrored = {r: v for r, v in versions.items() if r in documented}
    assert documented == mirrored and len(documented) >= 25


@pytest.mark.parametrize("version", ["0.4.0", "0.5.0"])
@pytest.mark.parametrize("config", SHIPPED, ids=[f"{p.parts[-3]}/{p.stem}" for p in SHIPPED])
def test_shipped_configs_on_an_older_release_get_one_finding_naming_the_layout(
    config: Path, version: str
) -> None:
    """Issue 40 item 16: 23 findings each at 0.5.0 where one cause was meant."""
    ctx = context_for(config, config.parents[1], version)
    user_gives = re.compile(r"^data\.(train|validation)\.data_path$")  # `???` in default.yaml
    found = [
        f
        for f in preflight(ctx)
        if not (f.code == "E-CONFIG-UNRESOLVED" and user_gives.match(f.key))
        and f.code != "W-GYM-ROOT"
    ]
    gym = ctx.get("env.should_use_nemo_gym") is True
    want = "E-GYM-SCRIPT" if gym and version == "0.4.0" else "E-NEMO-RL-LAYOUT"
    assert [f.code for f in found] == [want]
    if want == "E-NEMO-RL-LAYOUT":
        first = "data.train_jsonl_fpath" if gym else "data.dataset_name"
        assert f"First failure there: {first}: required key is missing" in found[0].message
        assert found[0].key == "data.train" and str(found[0].path).endswith(".yaml")
