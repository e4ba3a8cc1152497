"""A typo in the user's own YAML is an error with did-you-mean; a far extra key stays a warning.

As the user met it: `grpo.num_promts_per_step: 32` in their config was a warning (rc 0) and the
run would have drawn 64 prompts; the same typo as an override was already an error."""

from __future__ import annotations

from run_fixtures import dry_run

from catalog.did_you_mean import edits, typo_of

STEP = "rl/nemo_rl/rlvr"
BASE = "defaults: rl/nemo_rl/rlvr:tiny\n"


def _by_code(doc: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for f in doc["findings"]:
        out.setdefault(f["code"], []).append(f)
    return out


def test_a_key_an_edit_or_two_from_a_declared_one_is_an_error_at_its_line(
    tmp_path, monkeypatch, capsys
):
    text = BASE + "grpo:\n  num_promts_per_step: 32\npolicy:\n  generation:\n    temperture: 0.8\n"
    doc = dry_run(monkeypatch, capsys, tmp_path, STEP, text)
    typos = _by_code(doc)["E-SCHEMA-TYPO"]
    assert doc["ok"] is False
    assert [(f["line"], f["key"]) for f in sorted(typos, key=lambda f: f["line"])] == [
        (3, "grpo.num_promts_per_step"),
        (6, "policy.generation.temperture"),
    ]
    assert "did you mean 'num_prompts_per_step'?" in typos[0]["message"] + typos[1]["message"]
    assert all(f["severity"] == "error" and "run.keep_keys" in f["fix"] for f in typos)


def test_a_key_far_from_every_declared_key_stays_a_warning(tmp_path, monkeypatch, capsys):
    doc = dry_run(monkeypatch, capsys, tmp_path, STEP, BASE + "grpo:\n  my_own_knob: 1\n")
    codes = _by_code(doc)
    assert "E-SCHEMA-TYPO" not in codes
    assert [f["severity"] for f in codes["W-SCHEMA-UNKNOWN"]] == ["warning"]


def test_run_keep_keys_keeps_a_deliberate_key_without_a_finding(tmp_path, monkeypatch, capsys):
    text = BASE + "grpo:\n  num_promts_per_step: 32\n  my_own_knob: 1\n"
    text += "run:\n  keep_keys: [grpo.num_promts_per_step, grpo.my_own_knob]\n"
    codes = _by_code(dry_run(monkeypatch, capsys, tmp_path, STEP, text))
    assert "E-SCHEMA-TYPO" not in codes and "W-SCHEMA-UNKNOWN" not in codes


def test_an_added_override_is_deliberate_and_not_a_typo(tmp_path, monkeypatch, capsys):
    from run_fixtures import clean_env, fake_checkout, steps_cli

    (tmp_path / "cfg.yaml").write_text(BASE)
    checkout = fake_checkout(tmp_path / "nemo-rl")
    proc = steps_cli(monkeypatch, capsys, "run", STEP, "-c", str(tmp_path / "cfg.yaml"),
                     "+grpo.num_promts_per_step=3", "--nemo-rl", str(checkout), "--dry-run",
                     cwd=tmp_path, env=clean_env(tmp_path))  # fmt: skip
    assert "E-SCHEMA-TYPO" not in proc.stdout + proc.stderr


def test_typo_of_takes_one_near_option_only():
    assert edits("max_num_stesp", "max_num_steps") == 1  # two neighbours swapped
    assert typo_of("max_num_stesp", ["max_num_steps", "max_num_epochs"]) == "max_num_steps"
    assert typo_of("lr", ["lt"]) == "lt" and typo_of("lrx", ["lt"]) is None
    assert typo_of("my_own_knob", ["max_num_steps"]) is None
    assert typo_of("cfg_a", ["cfg_b", "cfg_c"]) is None  # two equally near: no guess
