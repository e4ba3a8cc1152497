"""One cause, one finding (issue 40 item 13): a wrong value in the user's own YAML that other keys
interpolate is one finding at the user's line, naming the keys it reaches, first."""

from __future__ import annotations

import json

from pipeline_toys import steps_main


def _errors(tmp_path, text: str) -> list[dict]:
    (tmp_path / "my.yaml").write_text("defaults: rl/nemo_rl/rlhf:tiny\n" + text)
    proc = steps_main("run", "rl/nemo_rl/rlhf", "-c", "my.yaml", "--dry-run", "--json",
                      "--runs-dir", str(tmp_path / "runs"), cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    return [f for f in json.loads(proc.stdout)["findings"] if f["severity"] == "error"]


def test_a_wrong_type_that_other_keys_interpolate_is_one_finding_at_the_users_line(tmp_path):
    [found] = _errors(tmp_path, "policy:\n  max_total_sequence_length: 4k\n")
    assert found["code"] == "E-SCHEMA-TYPE" and found["key"] == "policy.max_total_sequence_length"
    assert (found["path"], found["line"]) == (str(tmp_path / "my.yaml"), 3)
    assert "got '4k'" in found["message"] and "policy.generation.max_new_tokens" in found["message"]


def test_two_wrong_values_with_no_interpolation_between_them_stay_two_findings(tmp_path):
    errors = _errors(tmp_path, "grpo:\n  max_num_steps: abc\n  num_prompts_per_step: xyz\n")
    assert {f["key"] for f in errors} >= {"grpo.max_num_steps", "grpo.num_prompts_per_step"}
