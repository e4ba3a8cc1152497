"""NeMo-RL's own CPU-side setup judges the config (issue 38): data, resume, logger, loss and
environment failures that only running upstream shows are one error each, at the key, before the
GPUs start.

Real components: `steps run --dry-run` on the run tests' DPO step and on the shipped RLVR step,
with this Python as the launcher importing tests/upstream_standin's `nemo_rl`, copied into the
checkout in tmp_path: a stand-in whose setup raises what v0.7.0 raises (same types and words).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from run_fixtures import clean_env, dpo_step, fake_checkout, steps_cli

REPO = Path(__file__).resolve().parent.parent
STANDIN = Path(__file__).resolve().parent / "upstream_standin" / "nemo_rl"
SETUP_CODES = {"E-UPSTREAM-DATA", "E-UPSTREAM-LOSS", "E-UPSTREAM-RESUME", "E-UPSTREAM-LOGGER",
               "E-UPSTREAM-ENV", "W-UPSTREAM-HUB", "W-UPSTREAM-JUDGE"}  # fmt: skip


def _world(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    checkout = fake_checkout(tmp_path / "nemo-rl")
    shutil.copytree(STANDIN, checkout / "nemo_rl")
    cot = checkout / "examples" / "prompts" / "cot.txt"  # the shipped RLVR's prompt_file
    if not cot.is_file():
        cot.parent.mkdir(parents=True, exist_ok=True)
        cot.write_text("Think, then answer: {}\n")
    tok = tmp_path / "tok"
    tok.mkdir()
    template = "{% for m in messages %}{{ m.content }}{% endfor %}"
    (tok / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}))
    (tmp_path / "work").mkdir()
    env = clean_env(tmp_path, STANDIN_COUNTER=str(tmp_path / "imports.txt"),
                    STEPS_OUTPUT=str(tmp_path / "out"))  # fmt: skip
    return checkout, env


def _dry_run(monkeypatch, capsys, tmp_path: Path, step: str, *overrides: str) -> list[dict]:
    checkout, env = _world(tmp_path) if not (tmp_path / "nemo-rl").exists() else (
        tmp_path / "nemo-rl", clean_env(tmp_path, STANDIN_COUNTER=str(tmp_path / "imports.txt"),
                                        STEPS_OUTPUT=str(tmp_path / "out")))  # fmt: skip
    catalog = ["--catalog", str(tmp_path / "catalog")] if step == "rl/fake_dpo" else []
    argv = [step, *catalog, f"policy.tokenizer.name={tmp_path / 'tok'}", *overrides,
            "--nemo-rl", str(checkout), "--runs-dir", str(tmp_path / "runs"),
            "--launcher", sys.executable, "--dry-run", "--json"]  # fmt: skip
    result = steps_cli(monkeypatch, capsys, "run", *argv, cwd=tmp_path / "work", env=env)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)["findings"]


def _dpo(monkeypatch, capsys, tmp_path: Path, *overrides: str) -> list[dict]:
    if not (tmp_path / "catalog").exists():
        dpo_step(tmp_path / "catalog")
    return _dry_run(monkeypatch, capsys, tmp_path, "rl/fake_dpo", *overrides)


def _rlvr(monkeypatch, capsys, tmp_path: Path, *overrides: str) -> list[dict]:
    return _dry_run(monkeypatch, capsys, tmp_path, "rl/nemo_rl/rlvr", "-c", "tiny", *overrides)


def _errors_at(findings: list[dict], key: str) -> list[str]:
    return [f["code"] for f in findings if f["key"] == key and f["severity"] == "error"]


def _setup_codes(findings: list[dict]) -> list[tuple[str, str]]:
    return [(f["code"], f["key"]) for f in findings if f["code"] in SETUP_CODES]


def test_a_clean_dpo_config_passes_upstreams_whole_cpu_setup(tmp_path, monkeypatch, capsys):
    findings = _dpo(monkeypatch, capsys, tmp_path)
    assert _setup_codes(findings) == []
    assert [f for f in findings if f["severity"] == "error"] == []


def test_a_misspelt_dataset_name_is_one_error_at_its_key(tmp_path, monkeypatch, capsys):
    findings = _dpo(
        monkeypatch, capsys, tmp_path, "++data.train.dataset_name=BinaryPreferenceDatset"
    )
    assert _errors_at(findings, "data.train.dataset_name") == ["E-UPSTREAM-DATA"]
    found = next(f for f in findings if f["code"] == "E-UPSTREAM-DATA")
    assert "ValueError: Unsupported dataset_name='BinaryPreferenceDatset'" in found["message"]
    assert "nemo_rl/data/utils.py:" in found["message"]  # upstream's own file:line


def test_a_hub_dataset_not_in_the_cache_is_a_warning_never_a_download(
    tmp_path, monkeypatch, capsys
):
    findings = _rlvr(monkeypatch, capsys, tmp_path, "++data.validation.dataset_name=DAPOMath17K",
                     "~data.validation.data_path")  # fmt: skip
    assert _setup_codes(findings) == [("W-UPSTREAM-HUB", "data.validation.dataset_name")]
    assert [f for f in findings if f["severity"] == "error"] == []


USER_CLASS = """\
import json


class QAPairs:
    columns = ("question", "good", "bad")

    def __init__(self, data_path, **cfg):
        with open(data_path, encoding="utf-8") as fh:
            self.rows = [json.loads(line) for line in fh if line.strip()]
"""


def test_a_users_dataset_class_reads_its_own_columns_and_an_edit_of_it_is_judged_again(
    tmp_path, monkeypatch, capsys
):
    lib = tmp_path / "lib" / "my_pairs"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("")
    (lib / "loader.py").write_text(USER_CLASS)
    rows = tmp_path / "qa.jsonl"
    rows.write_text(json.dumps({"question": "2+2?", "good": "4", "bad": "5"}) + "\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "lib"))
    user = ["++data.train.dataset_name=my_pairs.loader.QAPairs", f"data.train.data_path={rows}"]
    assert _setup_codes(_dpo(monkeypatch, capsys, tmp_path, *user)) == []
    (lib / "loader.py").write_text(USER_CLASS.replace('"bad")', '"worse")'))
    findings = _dpo(monkeypatch, capsys, tmp_path, *user)
    assert _setup_codes(findings) == [("E-UPSTREAM-DATA", "data.train.data_path")]
    assert "KeyError: 'worse'" in next(f["message"] for f in findings
                                       if f["code"] == "E-UPSTREAM-DATA")  # fmt: skip


def test_a_system_prompt_file_that_does_not_exist_is_refused_at_its_key(
    tmp_path, monkeypatch, capsys
):
    missing = tmp_path / "prompts" / "system.txt"
    findings = _dpo(monkeypatch, capsys, tmp_path, f"data.default.system_prompt_file={missing}")
    assert _errors_at(findings, "data.default.system_prompt_file") == ["E-UPSTREAM-DATA"]
    assert "FileNotFoundError" in next(f["message"] for f in findings
                                       if f["code"] == "E-UPSTREAM-DATA")  # fmt: skip


def test_a_row_our_checks_refused_already_is_not_told_twice(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text((json.dumps({"prompt": "2+2?", "chosen": "4"}) + "\n") * 16)  # no "rejected"
    findings = _dpo(monkeypatch, capsys, tmp_path, f"data.train.data_path={bad}")
    errors = [f for f in findings if f["severity"] == "error"]
    assert [f["code"] for f in errors] == ["E-DPO-ROW"]  # ours names the line; upstream folded
    assert (tmp_path / "imports.txt").exists()  # upstream was asked


def test_rows_a_processor_cannot_take_are_one_error_at_the_file_key(tmp_path, monkeypatch, capsys):
    findings = _rlvr(monkeypatch, capsys, tmp_path, "data.default.processor=math_data_processor")
    upstream = [f for f in findings if f["code"] == "E-UPSTREAM-DATA"]
    assert [f["key"] for f in upstream] == ["data.train.data_path"]
    assert "the first rows of " in upstream[0]["message"]
    assert "KeyError: 'problem'" in upstream[0]["message"]


def test_resuming_from_another_algorithms_checkpoint_is_refused(tmp_path, monkeypatch, capsys):
    ckpt = tmp_path / "ckpt"
    (ckpt / "step_3").mkdir(parents=True)
    grpo_info = {"consumed_samples": 12, "current_step": 3, "total_steps": 3, "val_reward": 0.5}
    (ckpt / "step_3" / "training_info.json").write_text(json.dumps(grpo_info))
    findings = _dpo(monkeypatch, capsys, tmp_path, f"checkpointing.checkpoint_dir={ckpt}")
    assert _errors_at(findings, "checkpointing.checkpoint_dir") == ["E-UPSTREAM-RESUME"]
    found = next(f for f in findings if f["code"] == "E-UPSTREAM-RESUME")
    assert "step_3" in found["message"] and "TypeError" in found["message"]


def test_a_step_without_training_info_is_one_error_ours_folded_into_upstreams(
    tmp_path, monkeypatch, capsys
):
    ckpt = tmp_path / "ckpt"
    (ckpt / "step_2").mkdir(parents=True)
    findings = _dpo(monkeypatch, capsys, tmp_path, f"checkpointing.checkpoint_dir={ckpt}")
    assert _errors_at(findings, "checkpointing.checkpoint_dir") == ["E-UPSTREAM-RESUME"]
    assert "training_info.json" in next(f["message"] for f in findings
                                        if f["code"] == "E-UPSTREAM-RESUME")  # fmt: skip


def test_an_mlflow_file_store_is_refused_at_its_tracking_uri(tmp_path, monkeypatch, capsys):
    store = f"file://{tmp_path / 'mlruns'}"
    findings = _dpo(monkeypatch, capsys, tmp_path, "logger.mlflow_enabled=true",
                    f"++logger.mlflow.tracking_uri={store}",
                    "++logger.mlflow.experiment_name=dpo")  # fmt: skip
    assert _errors_at(findings, "logger.mlflow.tracking_uri") == ["E-UPSTREAM-LOGGER"]
    assert "MlflowException" in next(f["message"] for f in findings
                                     if f["code"] == "E-UPSTREAM-LOGGER")  # fmt: skip
    assert not (tmp_path / "mlruns").exists()  # built offline, in a scratch folder


def test_gspo_with_token_level_loss_is_refused_by_upstreams_loss(tmp_path, monkeypatch, capsys):
    findings = _rlvr(monkeypatch, capsys, tmp_path, "loss_fn.sequence_level_importance_ratios=true")
    assert _errors_at(findings, "loss_fn.sequence_level_importance_ratios") == ["E-UPSTREAM-LOSS"]
    found = next(f for f in findings if f["code"] == "E-UPSTREAM-LOSS")
    assert "mutually exclusive with token-level loss" in found["message"]


def test_truncated_importance_sampling_without_its_correction_is_refused(
    tmp_path, monkeypatch, capsys
):
    tis = ["loss_fn.truncated_importance_sampling_type=tis",
           "loss_fn.truncated_importance_sampling_ratio=2.0"]  # fmt: skip
    findings = _rlvr(monkeypatch, capsys, tmp_path, *tis)
    assert _setup_codes(findings) == [
        ("E-UPSTREAM-LOSS", "loss_fn.truncated_importance_sampling_type")
    ]
    found = next(f for f in findings if f["code"] == "E-UPSTREAM-LOSS")
    assert "loss_fn.use_importance_sampling_correction" in found["message"]  # the key it reads


def test_a_misspelt_processor_is_refused_at_its_key(tmp_path, monkeypatch, capsys):
    findings = _rlvr(monkeypatch, capsys, tmp_path, "++data.train.processor=math_hf_processor")
    assert _errors_at(findings, "data.train.processor") == ["E-UPSTREAM-DATA"]


def test_a_math_verify_impl_that_scores_every_answer_zero_is_refused(tmp_path, monkeypatch, capsys):
    findings = _rlvr(monkeypatch, capsys, tmp_path, "++env.math.math_verify_impl=math_verify")
    assert _errors_at(findings, "env.math.math_verify_impl") == ["E-UPSTREAM-ENV"]


def test_an_edited_data_file_is_judged_again_the_same_one_is_not(tmp_path, monkeypatch, capsys):
    data = tmp_path / "pairs.jsonl"
    data.write_text(json.dumps({"prompt": "2+2?", "chosen": "4", "rejected": "5"}) + "\n")
    for _ in range(2):
        assert _setup_codes(_dpo(monkeypatch, capsys, tmp_path, f"data.train.data_path={data}"))\
            == []  # fmt: skip
    counter = tmp_path / "imports.txt"
    assert len(counter.read_text().splitlines()) == 1
    data.write_text(json.dumps({"prompt": "2+2?", "chosen": "4"}) + "\n\n")
    findings = _dpo(monkeypatch, capsys, tmp_path, f"data.train.data_path={data}")
    assert len(counter.read_text().splitlines()) == 2
    errors = [f["code"] for f in findings if f["severity"] == "error"]
    assert "E-DPO-ROW" in errors and "E-UPSTREAM-DATA" not in errors  # one cause, ours
