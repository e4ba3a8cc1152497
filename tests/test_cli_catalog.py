"""`list`, `show` and id resolution, extra catalog roots, and what the light commands import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from steps.cli import main

REPO = Path(__file__).resolve().parent.parent
DPO = "rl/nemo_rl/dpo"
HEAVY = ("torch", "ray", "vllm", "wandb", "nemo_rl", "megatron")


def steps_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """`python -m steps ARGV` in-process: (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def listed(capsys, *argv: str) -> list[str]:
    code, out, err = steps_cli(capsys, "list", "--json", *argv)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["ok"] is True and doc["findings"] == []
    return [s["id"] for s in doc["steps"]]


def _extra_root(tmp_path: Path, sid: str, manifest: str | None = None) -> Path:
    root = tmp_path / "mine"
    (root / sid).mkdir(parents=True)
    text = manifest or (
        f'[step]\nid = "{sid}"\nname = "Mine"\ncategory = "{sid.split("/")[0]}"\n'
        'description = "A user step."\nversion = "0.1.0"\n\n'
        '[[consumes]]\nname = "data"\ntype = "nemo_gym_jsonl"\ndescription = "rows"\n'
        'config_keys = ["data.path"]\n'
    )
    (root / sid / "step.toml").write_text(text, encoding="utf-8")
    return root


def test_list_prints_each_consumed_type_once(capsys):
    code, out, err = steps_cli(capsys, "list")
    assert code == 0, err
    line = next(ln for ln in out.splitlines() if ln.startswith(DPO + " "))
    ins = line.split()[1].split(",")
    assert ins.count("preference_jsonl") == 1
    assert len(ins) == len(set(ins))


def test_list_type_filters_follow_is_a(capsys):
    assert DPO in listed(capsys, "--consumes", "preference_jsonl")
    assert DPO in listed(capsys, "--consumes", "training_jsonl")  # preference is_a training
    assert DPO in listed(capsys, "--produces", "megatron_checkpoint")  # on the Megatron backend
    assert DPO in listed(capsys, "--produces", "nemo_rl_dcp_checkpoint")  # on DTensor
    assert DPO not in listed(capsys, "--consumes", "nemo_gym_jsonl")
    rl = listed(capsys, "--category", "rl")
    assert rl and all(i.startswith("rl/") for i in rl)


def test_list_json_reports_required_and_optional_ports_as_booleans(capsys):
    _, out, _ = steps_cli(capsys, "list", "--json")
    rlvr = next(s for s in json.loads(out)["steps"] if s["id"] == "rl/nemo_rl/rlvr")
    required = {p["name"]: p["required"] for p in rlvr["consumes"]}
    assert required == {"train": True, "validation": False, "policy": True}


def test_list_unknown_type_gives_did_you_mean_and_exit_2(capsys):
    code, _, err = steps_cli(capsys, "list", "--consumes", "preference_jsonll")
    assert code == 2
    assert "E-TYPE-UNKNOWN" in err and "did you mean preference_jsonl" in err


def test_list_types_names_every_artifact_type_validate_accepts(capsys):
    from catalog.types import load_types

    code, out, err = steps_cli(capsys, "list", "--types", "--json")
    assert code == 0, err
    types = {t["name"]: t for t in json.loads(out)["types"]}
    assert set(types) == set(load_types().types)
    assert types["preference_jsonl"]["contract"] == "preference_rows"
    assert types["preference_jsonl"]["is_a"] == ["training_jsonl"]
    code, out, _ = steps_cli(capsys, "list", "--types")
    assert code == 0
    assert [ln.split()[0] for ln in out.splitlines() if not ln.startswith(" ")] == sorted(types)


def test_list_types_with_a_step_filter_is_a_usage_error(capsys):
    code, out, err = steps_cli(capsys, "list", "--types", "--category", "rl")
    assert (code, out) == (2, "")
    assert "E-USAGE" in err


def test_show_resolves_a_unique_tail_and_lists_config_paths(capsys):
    code, out, err = steps_cli(capsys, "show", "dpo", "--json")
    assert code == 0, err
    shown = json.loads(out)["step"]
    assert shown["id"] == DPO
    assert {"default", "tiny"} <= set(shown["configs"])
    assert all(Path(p).is_file() for p in shown["configs"].values())
    assert shown["step"]["category"] == "rl" and shown["consumes"]


def test_show_text_names_ports_configs_and_errors(capsys):
    code, out, err = steps_cli(capsys, "show", "nemo_rl/dpo")
    assert code == 0, err
    assert out.startswith(DPO)
    assert "consumes:" in out and "data.train.data_path" in out
    assert "default (default):" in out and "tiny:" in out
    assert "E-DPO-ROW" in out


@pytest.mark.parametrize("argv", [["list"], ["list", "--types"], ["show", "rlvr"]])
def test_text_output_wraps_at_80_columns_off_a_terminal(argv, capsys):
    code, out, _ = steps_cli(capsys, *argv)
    assert code == 0
    long = [ln for ln in out.splitlines() if len(ln) > 80]
    assert all(len(ln.split()) == 1 for ln in long), long  # only an unbreakable path or id


def test_text_output_follows_columns(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    _, narrow, _ = steps_cli(capsys, "show", "rlvr")
    monkeypatch.setenv("COLUMNS", "200")
    _, wide, _ = steps_cli(capsys, "show", "rlvr")
    assert all(len(ln) <= 60 or len(ln.split()) == 1 for ln in narrow.splitlines())
    assert max(len(ln) for ln in wide.splitlines()) > 80
    assert len(wide.splitlines()) < len(narrow.splitlines())


def test_unknown_step_gives_did_you_mean_and_exit_2(capsys):
    code, _, err = steps_cli(capsys, "show", "dpoo")
    assert code == 2
    assert "E-STEP-UNKNOWN" in err
    assert f"did you mean {DPO}" in err
    assert "Traceback" not in err


def test_ambiguous_tail_across_roots_exits_2_naming_both(tmp_path, capsys):
    root = _extra_root(tmp_path, "mine/dpo")
    code, _, err = steps_cli(capsys, "show", "dpo", "--catalog", str(root))
    assert code == 2
    assert "E-STEP-AMBIGUOUS" in err
    assert DPO in err and "mine/dpo" in err


def test_extra_roots_come_from_catalog_option_and_steps_path(tmp_path, capsys, monkeypatch):
    root = _extra_root(tmp_path, "mine/gym_thing")
    assert "mine/gym_thing" in listed(capsys, "--catalog", str(root))
    assert "mine/gym_thing" in listed(
        capsys, "--consumes", "training_jsonl", "--catalog", str(root)
    )
    monkeypatch.setenv("STEPS_PATH", str(root))
    assert "mine/gym_thing" in listed(capsys)


@pytest.mark.parametrize("category", ["data", "config", "cli", "patterns"])
def test_a_category_folder_may_have_any_name(category, tmp_path, capsys):
    root = _extra_root(tmp_path, f"{category}/dedup")
    assert f"{category}/dedup" in listed(capsys, "--catalog", str(root))
    code, out, _ = steps_cli(capsys, "show", f"{category}/dedup", "--json", "--catalog", str(root))
    assert code == 0 and json.loads(out)["step"]["id"] == f"{category}/dedup"


def test_a_steps_own_folders_and_hidden_folders_hold_no_steps(tmp_path, capsys):
    root = _extra_root(tmp_path, "mine/outer")
    (root / "mine/outer/config").mkdir()
    (root / "mine/outer/config/tiny.yaml").write_text("a: 1\n", encoding="utf-8")
    hidden = root / ".git/objects"
    hidden.mkdir(parents=True)
    (hidden / "step.toml").write_text('[step]\nid = "hidden"\n', encoding="utf-8")
    ids = [i for i in listed(capsys, "--catalog", str(root)) if not i.startswith(("rl/", "data_"))]
    assert [i for i in ids if not i.startswith("convert/")] == ["mine/outer"]


def test_missing_catalog_root_is_an_error_not_a_traceback(tmp_path, capsys):
    code, _, err = steps_cli(capsys, "list", "--catalog", str(tmp_path / "nope"))
    assert code == 2
    assert "E-CATALOG-ROOT" in err and "Traceback" not in err


def test_malformed_manifest_in_list_names_file_and_line_and_exits_2(tmp_path, capsys):
    root = _extra_root(tmp_path, "mine/bad", manifest='[step]\nid = "mine/bad"\nname = \n')
    code, out, err = steps_cli(capsys, "list", "--catalog", str(root))
    assert (code, out) == (2, "")
    assert err.startswith(f"{root / 'mine/bad/step.toml'}:3: E-MANIFEST-TOML")
    assert "Traceback" not in err


def test_non_utf8_manifest_is_a_setup_error_not_a_traceback(tmp_path, capsys):
    root = _extra_root(tmp_path, "mine/latin")
    (root / "mine/latin/step.toml").write_bytes(b'[step]\nid = "caf\xe9"\n')
    code, _, err = steps_cli(capsys, "show", "mine/latin", "--catalog", str(root))
    assert code == 2
    assert "E-MANIFEST-TOML not UTF-8" in err


def test_edited_manifest_is_reread_despite_the_cache(tmp_path, capsys):
    root = _extra_root(tmp_path, "mine/thing")
    _, first, _ = steps_cli(capsys, "list", "--json", "--catalog", str(root))
    assert "A user step." in first
    manifest = root / "mine/thing/step.toml"
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace("A user step.", "Edited."), encoding="utf-8"
    )
    _, second, _ = steps_cli(capsys, "list", "--json", "--catalog", str(root))
    assert "Edited." in second and "A user step." not in second


def _root_cache(sandbox: Path, root: Path) -> Path:
    """The one manifest cache file that holds `root`'s manifests, and only those."""
    found = []
    for cache in (sandbox / "steps-cache").rglob("manifests-*/*.json"):
        keys = json.loads(cache.read_text(encoding="utf-8"))["entries"]
        if keys and all(key.startswith(f"{root}/") for key in keys):
            found.append(cache)
    (cache,) = found
    return cache


def test_the_manifest_cache_is_json_any_interpreter_can_read(tmp_path, capsys, sandbox):
    root = _extra_root(tmp_path, "mine/thing")
    steps_cli(capsys, "list", "--catalog", str(root))
    cache = _root_cache(sandbox, root)
    doc = json.loads(cache.read_text(encoding="utf-8"))
    entry = doc["entries"][str(root / "mine/thing/step.toml")]
    assert entry[1]["step"]["description"] == "A user step."
    assert not list(cache.parent.glob("*.marshal"))


def test_each_catalog_root_has_its_own_manifest_cache(tmp_path, capsys, sandbox):
    """`list` reads only the caches of the roots it lists, however many were listed before."""
    roots = [_extra_root(tmp_path / name, "mine/thing") for name in ("a", "b")]
    for root in roots:
        steps_cli(capsys, "list", "--catalog", str(root))
    assert len({_root_cache(sandbox, root) for root in roots}) == 2


def test_a_corrupt_cache_is_ignored_and_rewritten(tmp_path, capsys, sandbox):
    root = _extra_root(tmp_path, "mine/thing")
    steps_cli(capsys, "list", "--catalog", str(root))
    cache = _root_cache(sandbox, root)
    cache.write_bytes(b"\x00not json")
    assert "mine/thing" in listed(capsys, "--catalog", str(root))
    assert json.loads(cache.read_text(encoding="utf-8"))["entries"]


PROBE = """
import json, runpy, sys
before = set(sys.modules)
sys.argv = {argv!r}
code = 0
if sys.argv == ["import"]:
    import steps
else:
    try:
        runpy.run_module("steps", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
added = sorted(m for m in set(sys.modules) - before)
print(json.dumps({{"code": code, "added": added}}))
"""


def imported_by(argv: list[str], cache: Path) -> tuple[int, set[str]]:
    """Modules a command imports on top of what the interpreter (and any sitecustomize) had."""
    env = dict(os.environ, STEPS_CACHE_DIR=str(cache))
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out["code"], {m.split(".")[0] for m in out["added"]}


@pytest.mark.parametrize(
    "argv",
    [
        ["import"],
        ["steps", "list"],
        ["steps", "show", "dpo"],
        ["steps", "check"],
        ["steps", "explain", "E-DPO-ROW"],
    ],
    ids=["import steps", "list", "show", "check", "explain"],
)
def test_light_commands_import_no_heavy_stack(argv, tmp_path):
    code, added = imported_by(argv, tmp_path)
    assert code in (0, 1, None)  # check may find problems; it must not crash
    assert sorted(added & set(HEAVY)) == []


@pytest.mark.parametrize(
    "argv", [["steps", "list"], ["steps", "show", "dpo"]], ids=["list", "show"]
)
def test_list_and_show_import_no_validation_libraries(argv, tmp_path):
    """Once the manifest cache is warm, not even the TOML parser or dataclasses load."""
    imported_by(argv, tmp_path)
    code, added = imported_by(argv, tmp_path)
    assert "tomllib" not in added and "tomli" not in added
    assert code in (0, None)
    assert sorted(added & {"pydantic", "yaml", "omegaconf", "hydra", "dataclasses"}) == []
