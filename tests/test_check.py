"""`check`, the CI contract gate: one test per rule, each planting its defect in a copy of the
catalog under tmp_path and asserting the code and the path of the finding it adds."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from catalog.docs import write_docs
from runners.check import check_catalog
from steps.cli import main

REPO = Path(__file__).resolve().parent.parent
DPO = Path("rl/nemo_rl/dpo")
# The steps the planted defects touch: DPO, and the converter types.toml names. Fewer steps,
# fewer configs to compile per check; findings the other steps' absence causes are baseline.
KEPT_STEPS = (DPO, Path("convert/megatron_to_hf"))


def _copy_catalog(dest: Path) -> Path:
    """Two steps, the patterns, types.toml and generated docs, as a stand-alone root."""
    for step in KEPT_STEPS:
        shutil.copytree(
            REPO / "steps" / step, dest / step, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copytree(REPO / "steps" / "patterns", dest / "patterns")
    shutil.copy(REPO / "catalog" / "types.toml", dest / "types.toml")
    write_docs(dest)
    return dest


def _key(f, root: Path) -> tuple:
    rel = os.path.relpath(f.path, root) if f.path else ""
    return (f.code, rel, f.message.replace(str(root), "<root>"))


@pytest.fixture(scope="session")
def pristine(tmp_path_factory):
    """A pristine copy and the findings it already has (so each test sees only its own)."""
    root = _copy_catalog(tmp_path_factory.mktemp("pristine") / "catalog")
    baseline = {_key(f, root) for f in check_catalog([root], include_builtin=False).findings}
    return root, baseline


@pytest.fixture
def cat(pristine, tmp_path):
    """A fresh copy of the catalog for one test to break."""
    root, _ = pristine
    dest = tmp_path / "catalog"
    shutil.copytree(root, dest)
    return dest


def new_findings(pristine, root: Path, *extra_roots: Path) -> list:
    """Findings that the planted defect added (pre-existing ones are left out)."""
    _, baseline = pristine
    found = check_catalog([root, *extra_roots], include_builtin=False).findings
    return [f for f in found if _key(f, root) not in baseline]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path} no longer contains {old!r}: update the test's plant"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def codes_at(findings, code: str, path: Path) -> list:
    return [f for f in findings if f.code == code and Path(f.path) == path]


def run_check(capsys, root: Path) -> tuple[int, dict]:
    """`python -m steps check --catalog ROOT --no-builtin --json` in-process: (code, document)."""
    code = main(["check", "--catalog", str(root), "--no-builtin", "--json"])
    out, err = capsys.readouterr()
    assert err == ""  # with --json everything is in the one document
    return code, json.loads(out)


# --- manifests -------------------------------------------------------------------------------


def test_manifest_toml_syntax_error_is_a_finding_with_line_and_exit_1(pristine, cat, capsys):
    manifest = cat / DPO / "step.toml"
    edit(manifest, 'category = "rl"', 'category = "rl"\nbroken = = "x"')
    code, out = run_check(capsys, cat)
    assert code == 1
    hits = [f for f in out["findings"] if f["code"] == "E-MANIFEST-TOML"]
    assert [Path(f["path"]) for f in hits] == [manifest]
    assert hits[0]["line"] == 5
    assert out["ok"] is False and out["summary"]["errors"] >= 1


def test_manifest_unknown_key_is_rejected_by_the_schema(pristine, cat):
    manifest = cat / DPO / "step.toml"
    edit(manifest, 'version = "0.1.0"', 'version = "0.1.0"\ncolour = "red"')
    hits = codes_at(new_findings(pristine, cat), "E-MANIFEST-SCHEMA", manifest)
    assert hits and hits[0].key == "step.colour"
    assert hits[0].line == 8


def test_step_ids_must_be_unique_across_roots(pristine, cat, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(cat / DPO, other / DPO)
    found = new_findings(pristine, cat, other)
    assert codes_at(found, "E-STEP-DUPLICATE", other / DPO / "step.toml")


def test_id_must_equal_the_folder_path(pristine, cat):
    shutil.move(cat / DPO, cat / "rl/nemo_rl/dpo_copy")
    manifest = cat / "rl/nemo_rl/dpo_copy/step.toml"
    hits = codes_at(new_findings(pristine, cat), "E-STEP-ID", manifest)
    assert hits and hits[0].line == 2


def test_category_must_equal_the_first_folder(pristine, cat):
    manifest = cat / DPO / "step.toml"
    edit(manifest, 'category = "rl"', 'category = "training"')
    hits = codes_at(new_findings(pristine, cat), "E-STEP-CATEGORY", manifest)
    assert hits and hits[0].line == 4


def test_consumed_type_must_exist_in_the_type_graph(pristine, cat):
    manifest = cat / DPO / "step.toml"
    edit(manifest, 'type = "hf_checkpoint"', 'type = "hf_checkpont"')
    hits = codes_at(new_findings(pristine, cat), "E-TYPE-UNKNOWN", manifest)
    assert hits and "did you mean hf_checkpoint" in hits[0].fix


def test_type_key_must_name_a_config_key(pristine, cat):
    manifest = cat / DPO / "step.toml"
    edit(
        manifest,
        'config_keys = ["policy.model_name"]',
        'config_keys = ["policy.model_name"]\ntype_key = "policy.model_kind"',
    )
    hits = codes_at(new_findings(pristine, cat), "E-TYPE-KEY", manifest)
    assert hits and hits[0].key == "policy.model_kind"


def test_port_config_keys_must_exist_in_the_default_config(pristine, cat):
    manifest = cat / DPO / "step.toml"
    edit(manifest, 'config_keys = ["policy.model_name"]', 'config_keys = ["policy.model_nam"]')
    hits = codes_at(new_findings(pristine, cat), "E-PORT-KEY", manifest)
    assert hits and "policy.model_name" in hits[0].fix


def test_parameter_must_name_a_default_config_key_with_did_you_mean(pristine, cat):
    manifest = cat / DPO / "step.toml"
    edit(manifest, 'name = "dpo.reference_policy_kl_penalty"', 'name = "dpo.reference_kl_penalty"')
    hits = codes_at(new_findings(pristine, cat), "E-PARAM-KEY", manifest)
    assert hits and "did you mean dpo.reference_policy_kl_penalty" in hits[0].fix
    assert hits[0].line is not None


def test_parameter_default_must_match_the_default_config(pristine, cat):
    manifest = cat / DPO / "step.toml"
    edit(manifest, "default = 0.05", "default = 0.5")
    hits = codes_at(new_findings(pristine, cat), "E-PARAM-DEFAULT", manifest)
    assert hits and hits[0].key == "dpo.reference_policy_kl_penalty"


def test_errors_check_must_name_a_registered_preflight_rule(pristine, cat, monkeypatch):
    from runners import preflight

    monkeypatch.setitem(
        preflight.RULES,
        "preference_rows",
        preflight.RuleSpec("preference_rows", lambda ctx: [], frozenset(), "test rule"),
    )
    manifest = cat / DPO / "step.toml"
    edit(manifest, "E-DPO-ROW = {", 'E-DPO-ROW = { check = "preference_row", ')
    hits = codes_at(new_findings(pristine, cat), "W-ERRORS-CHECK", manifest)
    assert hits and hits[0].severity == "warning"
    assert "did you mean preference_rows" in hits[0].fix


def test_errors_must_name_a_registered_code_with_did_you_mean(pristine, cat):
    manifest = cat / DPO / "step.toml"
    edit(manifest, "E-DPO-ROW = {", "E-DPO-ROWS = {")
    [hit] = codes_at(new_findings(pristine, cat), "E-ERRORS-CODE", manifest)
    assert hit.line is not None and "did you mean E-DPO-ROW?" in hit.fix


def test_older_list_of_errors_tables_is_still_read(pristine, cat):
    manifest = cat / DPO / "step.toml"
    text = manifest.read_text(encoding="utf-8")
    start = text.index("[errors]")
    manifest.write_text(
        text[:start] + '[[errors]]\nname = "E-DPO-ROW"\nrecovery = "planted"\n',
        encoding="utf-8",
    )
    assert new_findings(pristine, cat) == []


def test_a_source_code_missing_from_the_registry_is_an_error_at_its_line(tmp_path):
    from catalog.codes import parse_registry
    from runners.check.codes import registry_against_source

    (tmp_path / "runners").mkdir()
    (tmp_path / "runners" / "rule.py").write_text(
        'X = 1\nraise StepsError("E-PLANTED-NEW", "m")\nY = "E-KNOWN"\n', encoding="utf-8"
    )
    codes = tmp_path / "codes.toml"
    codes.write_text(
        '[E-KNOWN]\narea = "run"\nmeaning = "m"\nfix = "f"\n\n'
        '[E-GONE]\narea = "run"\nmeaning = "m"\nfix = "f"\n\n'
        '[E-KEPT]\narea = "run"\nmeaning = "m"\nfix = "f"\ndocumentation_only = "cited by docs"\n',
        encoding="utf-8",
    )
    found = registry_against_source(parse_registry(codes), tmp_path, None)
    assert [(f.code, Path(f.path).name, f.line) for f in found] == [
        ("E-CODE-UNREGISTERED", "rule.py", 2),
        ("E-CODE-UNUSED", "codes.toml", 6),
    ]


def test_the_registry_covers_every_code_in_the_source_and_nothing_else():
    from catalog.codes import registry
    from runners.check.codes import registry_against_source

    assert registry_against_source(registry(), REPO, None) == []


def test_local_reference_must_exist(pristine, cat):
    manifest = cat / DPO / "step.toml"
    if "\nlocal = [" in manifest.read_text(encoding="utf-8"):
        edit(manifest, "\nlocal = [", '\nlocal = ["docs/missing.md", ')
    else:
        edit(manifest, "[reference]", '[reference]\nlocal = ["docs/missing.md"]')
    hits = codes_at(new_findings(pristine, cat), "E-REFERENCE-LOCAL", manifest)
    assert hits and hits[0].line is not None


# --- step folder layout ----------------------------------------------------------------------


def test_step_folder_needs_step_py_and_both_configs(pristine, cat):
    (cat / DPO / "step.py").unlink()
    hits = codes_at(new_findings(pristine, cat), "E-STEP-FILES", cat / DPO / "step.py")
    assert hits


def test_readme_must_exist(pristine, cat):
    (cat / DPO / "README.md").unlink()
    assert codes_at(new_findings(pristine, cat), "E-STEP-FILES", cat / DPO / "README.md")


def test_readme_must_name_the_step_id(pristine, cat):
    readme = cat / DPO / "README.md"
    readme.write_text("# DPO\n\nNo id here.\n", encoding="utf-8")
    assert codes_at(new_findings(pristine, cat), "E-README-ID", readme)


# --- configs ---------------------------------------------------------------------------------


def test_yaml_syntax_error_in_any_config_has_file_and_line(pristine, cat):
    tiny = cat / DPO / "config" / "tiny.yaml"
    tiny.write_text(tiny.read_text(encoding="utf-8") + "broken: [unclosed\n", encoding="utf-8")
    hits = codes_at(new_findings(pristine, cat), "E-CONFIG-YAML", tiny)
    assert hits and hits[0].line is not None


def test_defaults_chain_must_resolve(pristine, cat):
    extra = cat / DPO / "config" / "extra.yaml"
    extra.write_text("defaults: no_such_parent.yaml\ndpo:\n  max_num_steps: 3\n", encoding="utf-8")
    hits = codes_at(new_findings(pristine, cat), "E-CONFIG-DEFAULTS", extra)
    assert hits and hits[0].line == 1


def test_interpolation_to_a_missing_key_is_an_error(pristine, cat):
    extra = cat / DPO / "config" / "extra.yaml"
    extra.write_text("defaults: default.yaml\nplanted: ${dpo.no_such_key}\n", encoding="utf-8")
    hits = codes_at(new_findings(pristine, cat), "E-CONFIG-INTERPOLATION", extra)
    assert hits and hits[0].line == 2 and hits[0].key == "planted"


def test_unset_env_interpolation_without_default_is_only_a_warning(pristine, cat, monkeypatch):
    monkeypatch.delenv("STEPS_TEST_SURELY_UNSET", raising=False)
    extra = cat / DPO / "config" / "extra.yaml"
    extra.write_text(
        "defaults: default.yaml\nplanted: ${oc.env:STEPS_TEST_SURELY_UNSET}\n", encoding="utf-8"
    )
    found = new_findings(pristine, cat)
    hits = codes_at(found, "W-CONFIG-ENV", extra)
    assert hits and hits[0].severity == "warning" and hits[0].line == 2
    assert not [f for f in found if f.is_error]


def test_default_config_named_by_the_manifest_must_exist(pristine, cat):
    manifest = cat / DPO / "step.toml"
    edit(manifest, 'default_config = "default"', 'default_config = "production"')
    assert codes_at(new_findings(pristine, cat), "E-CONFIG-NOT-FOUND", manifest)


# --- the type graph --------------------------------------------------------------------------


def test_types_toml_that_is_not_utf8_is_a_finding_and_the_rest_is_still_checked(
    pristine, cat, capsys
):
    (cat / "types.toml").write_bytes(b'[x]\ndescription = "caf\xe9"\n')
    (cat / DPO / "README.md").unlink()
    code, out = run_check(capsys, cat)
    assert code == 1
    codes = {(f["code"], Path(f["path"]).name) for f in out["findings"]}
    assert ("E-TYPES-TOML", "types.toml") in codes and ("E-STEP-FILES", "README.md") in codes


def test_types_toml_unknown_key_is_a_finding(pristine, cat):
    types = cat / "types.toml"
    edit(types, 'contract = "jsonl"', 'contract = "jsonl"\nshape = "rows"')
    hits = codes_at(new_findings(pristine, cat), "E-TYPES-SCHEMA", types)
    assert hits and hits[0].line is not None


def test_is_a_parent_must_exist(pristine, cat):
    types = cat / "types.toml"
    edit(types, 'is_a = ["training_jsonl"]', 'is_a = ["training_jsonll"]')
    hits = codes_at(new_findings(pristine, cat), "E-TYPES-PARENT", types)
    assert hits and "did you mean training_jsonl" in hits[0].fix


def test_is_a_cycle_is_rejected(pristine, cat):
    types = cat / "types.toml"
    edit(types, 'contract = "jsonl"', 'contract = "jsonl"\nis_a = ["preference_jsonl"]')
    hits = codes_at(new_findings(pristine, cat), "E-TYPES-CYCLE", types)
    assert hits and "training_jsonl" in hits[0].message and "preference_jsonl" in hits[0].message


def test_convert_to_must_name_a_real_step(pristine, cat):
    types = cat / "types.toml"
    edit(types, 'via = "convert/megatron_to_hf"', 'via = "convert/megatron_to_gguf"')
    hits = codes_at(new_findings(pristine, cat), "E-CONVERT-VIA", types)
    assert hits and "convert/megatron_to_gguf" in hits[0].message


def test_convert_to_step_must_consume_the_source_and_produce_the_target(pristine, cat):
    types = cat / "types.toml"
    edit(types, 'via = "convert/megatron_to_hf"', 'via = "rl/nemo_rl/dpo"')
    hits = codes_at(new_findings(pristine, cat), "E-CONVERT-VIA", types)
    messages = " ".join(f.message for f in hits)
    assert "consumes none of the types" in messages
    assert "produces nothing that is_a 'hf_checkpoint'" in messages


# --- generated docs --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ARTIFACTS.md", "PATTERNS.md", "step.schema.json"])
def test_generated_docs_must_be_byte_identical(pristine, cat, name):
    doc = cat / name
    doc.write_bytes(doc.read_bytes() + b"\n")
    hits = codes_at(new_findings(pristine, cat), "E-DOCS-STALE", doc)
    assert hits and "--no-builtin" in hits[0].fix


def test_missing_generated_doc_is_a_finding(pristine, cat):
    (cat / "ARTIFACTS.md").unlink()
    assert codes_at(new_findings(pristine, cat), "E-DOCS-STALE", cat / "ARTIFACTS.md")


# --- pattern files ---------------------------------------------------------------------------

GOOD_PATTERN = """---
id: {id}
title: A planted pattern
tags: [dpo]
triggers: ["preference data arrives"]
steps: [rl/nemo_rl/dpo]
confidence: high
---

## When to apply
x
## What to do
x
## Exceptions
x
## References
x
"""


def plant_pattern(root: Path, name: str, text: str) -> Path:
    path = root / "patterns" / f"{name}.md"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_pattern_malformed_frontmatter_is_a_finding_with_line_not_a_traceback(
    pristine, cat, capsys
):
    path = plant_pattern(cat, "planted", "---\nid: planted\ntitle: [unclosed\n---\nbody\n")
    code, out = run_check(capsys, cat)
    assert code == 1
    hits = [
        f
        for f in out["findings"]
        if f["code"] == "E-PATTERN-FRONTMATTER" and Path(f["path"]) == path
    ]
    assert hits and hits[0]["line"] in (3, 4)


def test_pattern_without_frontmatter_is_a_finding(pristine, cat):
    path = plant_pattern(cat, "planted", "# just markdown\n")
    hits = codes_at(new_findings(pristine, cat), "E-PATTERN-FRONTMATTER", path)
    assert hits and hits[0].line == 1


def test_pattern_id_must_equal_the_file_name(pristine, cat):
    path = plant_pattern(cat, "planted", GOOD_PATTERN.format(id="something_else"))
    hits = codes_at(new_findings(pristine, cat), "E-PATTERN-ID", path)
    assert hits and hits[0].line == 2


def test_pattern_needs_every_field(pristine, cat):
    text = GOOD_PATTERN.format(id="planted").replace("title: A planted pattern\n", "")
    path = plant_pattern(cat, "planted", text)
    hits = codes_at(new_findings(pristine, cat), "E-PATTERN-FIELD", path)
    assert [f.key for f in hits] == ["title"]


def test_pattern_steps_must_exist(pristine, cat):
    text = GOOD_PATTERN.format(id="planted").replace("rl/nemo_rl/dpo]", "rl/nemo_rl/dpoo]")
    path = plant_pattern(cat, "planted", text)
    hits = codes_at(new_findings(pristine, cat), "E-PATTERN-STEP", path)
    assert hits and hits[0].line == 6 and "did you mean rl/nemo_rl/dpo" in hits[0].fix


def test_pattern_confidence_must_be_high_medium_or_experimental(pristine, cat):
    text = GOOD_PATTERN.format(id="planted").replace("confidence: high", "confidence: certain")
    path = plant_pattern(cat, "planted", text)
    hits = codes_at(new_findings(pristine, cat), "E-PATTERN-CONFIDENCE", path)
    assert hits and hits[0].line == 7


def test_valid_pattern_adds_no_finding_once_docs_are_regenerated(pristine, cat):
    plant_pattern(cat, "planted", GOOD_PATTERN.format(id="planted"))
    write_docs(cat)
    assert new_findings(pristine, cat) == []


# --- the real catalog ------------------------------------------------------------------------


def test_the_real_catalog_passes_check_with_exit_0_and_a_summary(capsys):
    code = main(["check"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.splitlines()[-1].startswith("check: 0 error(s)")


def test_check_findings_go_to_stderr_with_fix_on_its_own_line(pristine, cat, capsys):
    manifest = cat / DPO / "step.toml"
    edit(manifest, 'category = "rl"', 'category = "training"')
    assert main(["check", "--catalog", str(cat), "--no-builtin"]) == 1
    out, err = capsys.readouterr()
    lines = err.splitlines()
    at = next(i for i, ln in enumerate(lines) if "E-STEP-CATEGORY" in ln)
    assert lines[at].endswith(
        "E-STEP-CATEGORY category 'training' differs from the first folder 'rl'"
    )
    assert lines[at + 1] == '  Fix: set category = "rl"'
    assert out.splitlines()[-1].startswith("check: ")


def test_a_missing_catalog_root_is_a_usage_error_exit_2(tmp_path, capsys):
    assert main(["check", "--catalog", str(tmp_path / "nope")]) == 2
    assert "E-CATALOG-ROOT" in capsys.readouterr().err
    assert main(["check", "--catalog", str(tmp_path / "nope"), "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and [f["code"] for f in doc["findings"]] == ["E-CATALOG-ROOT"]


def test_no_builtin_without_a_root_is_a_usage_error_exit_2(capsys):
    assert main(["check", "--no-builtin"]) == 2
    assert "E-USAGE" in capsys.readouterr().err


def test_pattern_missing_a_body_section_is_a_warning(pristine, cat):
    text = GOOD_PATTERN.format(id="planted").replace("## Exceptions\n", "")
    path = plant_pattern(cat, "planted", text)
    write_docs(cat)
    found = new_findings(pristine, cat)
    hits = codes_at(found, "W-PATTERN-SECTION", path)
    assert hits and hits[0].severity == "warning" and "Exceptions" in hits[0].message
    assert not [f for f in found if f.is_error]


def test_a_runner_kind_with_no_module_is_an_error_at_its_line(pristine, cat):
    manifest = cat / DPO / "step.toml"
    text = manifest.read_text(encoding="utf-8")
    manifest.write_text(text.replace('runner = "nemo_rl"', 'runner = "nemo_rll"'), encoding="utf-8")
    (found,) = codes_at(new_findings(pristine, cat), "E-RUNNER-KIND", manifest)
    assert found.line == text.splitlines().index('runner = "nemo_rl"') + 1
    assert "did you mean nemo_rl?" in found.fix


def test_every_runner_kind_module_answers_for_its_name():
    from runners.kinds import kind_for, known

    assert known()
    assert [kind_for(name).name for name in known()] == known()


def test_a_bare_error_entry_its_kinds_rules_already_raise_is_a_warning(pristine, cat):
    manifest = cat / DPO / "step.toml"
    edit(manifest, "[errors]\n", "[errors]\nE-BATCH-DIVISIBILITY = {}\n")
    [hit] = codes_at(new_findings(pristine, cat), "W-ERRORS-DERIVED", manifest)
    assert hit.severity == "warning" and hit.key == "errors.E-BATCH-DIVISIBILITY"
    assert "rule `batch_divisibility` raises it" in hit.message
