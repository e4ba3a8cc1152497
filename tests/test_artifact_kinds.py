"""GRPO rows and DPO pairs are registered under names of what they are for, so `:latest` of one
never hands over the other (as the user met it: `DataBlendsArtifact-rl:latest` flipped to DPO
pairs after a preference prep, and the GRPO dry run caught it only by its rows)."""

from __future__ import annotations

import json

from run_fixtures import clean_env, steps_cli


def test_dpo_pairs_and_grpo_rows_get_their_own_names_and_types(tmp_path, monkeypatch, capsys):
    env = clean_env(tmp_path)
    runs = str(tmp_path / "runs")

    def prep(config: str) -> dict:
        proc = steps_cli(monkeypatch, capsys, "run", "data_prep/rl_prep", "-c", config,
                         f"output_dir={tmp_path / config}", "--runs-dir", runs, "--json",
                         cwd=tmp_path, env=env)  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return json.loads(proc.stdout)

    prep("tiny")
    prep("tiny_dpo")  # the newer one: before, it became DataBlendsArtifact-rl:latest
    registry = json.loads((tmp_path / "runs" / "artifacts.json").read_text())
    text = json.dumps(registry)
    assert "DataBlendsArtifact-dpo" in text and "preference_jsonl" in text
    proc = steps_cli(monkeypatch, capsys, "lineage", "DataBlendsArtifact-rl:latest", "--json",
                     "--runs-dir", runs, cwd=tmp_path, env=env)  # fmt: skip
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and str(tmp_path / "tiny") in json.dumps(doc)
    assert "nemo_gym_jsonl" in json.dumps(doc)
