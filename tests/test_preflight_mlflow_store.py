"""MLflow with a file-store tracking URI (issue 38 item 8): the MLflow NeMo-RL locks from 0.7.0
(>= 3.13) raises MlflowException when the Logger looks up the experiment."""

from __future__ import annotations

import pytest
from user_configs import cli_dry_run, judged, on


def _mlflow(uri: str) -> str:
    return (
        "logger:\n  mlflow_enabled: true\n  mlflow:\n    experiment_name: dpo-dev\n"
        f"    run_name: tiny\n    tracking_uri: {uri}\n"
    )


@pytest.mark.parametrize("uri", ["file:///scratch/me/mlruns", "./mlruns", "/scratch/me/mlruns"])
def test_a_file_store_is_refused_at_0_7_0(tmp_path, uri) -> None:
    [error] = on(judged(tmp_path, "dpo", _mlflow(uri), "0.7.0"), "E-MLFLOW-STORE")
    assert error.key == "logger.mlflow.tracking_uri" and error.line == 7
    assert "nemo_rl/utils/logger.py:852" in error.message and "3.14.0" in error.message
    assert "sqlite:///" in error.fix and "MLFLOW_ALLOW_FILE_STORE=true" in error.fix


def test_before_0_7_0_mlflow_only_warns_about_the_file_store(tmp_path) -> None:
    assert on(judged(tmp_path, "dpo", _mlflow("file:///x/mlruns"), "0.6.0"), "E-MLFLOW-STORE") == []


@pytest.mark.parametrize("uri", ["sqlite:////scratch/me/mlflow.db", "http://localhost:5000"])
def test_a_database_or_a_server_is_clean(tmp_path, uri) -> None:
    assert on(judged(tmp_path, "dpo", _mlflow(uri), "pin"), "E-MLFLOW-STORE") == []


def test_dry_run_refuses_it_and_the_opt_out_variable_keeps_it(
    tmp_path, monkeypatch, capsys
) -> None:
    text = _mlflow("file:///tmp/mlruns")
    code, out = cli_dry_run(monkeypatch, capsys, tmp_path / "a", "dpo", text, "0.7.0")
    assert code == 1 and "E-MLFLOW-STORE" in [f["code"] for f in out["findings"]]
    env = {"MLFLOW_ALLOW_FILE_STORE": "true"}
    _, out = cli_dry_run(monkeypatch, capsys, tmp_path / "b", "dpo", text, "0.7.0", env=env)
    assert "E-MLFLOW-STORE" not in [f["code"] for f in out["findings"]]


def test_the_environments_tracking_uri_counts_when_the_config_sets_none(
    tmp_path, monkeypatch, capsys
) -> None:
    text = _mlflow("null")
    env = {"MLFLOW_TRACKING_URI": "file:///tmp/mlruns"}
    _, out = cli_dry_run(monkeypatch, capsys, tmp_path, "dpo", text, "0.7.0", env=env)
    [error] = [f for f in out["findings"] if f["code"] == "E-MLFLOW-STORE"]
    assert error["key"] == "logger.mlflow_enabled" and "MLFLOW_TRACKING_URI" in error["message"]
