"""Where NeMo-RL can judge, it is asked (issue 29): the launch interpreter's own NeMo-RL builds its
MasterConfig from the compiled config in one bounded, cached subprocess.

Real components: `steps run --dry-run` on a step folder, the run tests' stand-in checkout, and
this Python as the launcher, importing tests/upstream_standin's `nemo_rl` (a stand-in of
upstream's interface, copied into the checkout as NeMo-RL's source sits in a real one).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from run_fixtures import clean_env, dpo_step, fake_checkout, steps_cli

from runners.preflight.upstream_judge import config_key

STANDIN = Path(__file__).resolve().parent / "upstream_standin" / "nemo_rl"
UPSTREAM_CODES = {"E-UPSTREAM-CONFIG", "E-UPSTREAM-TOKENIZER", "W-UPSTREAM-JUDGE"}


def _setup(tmp_path: Path, with_nemo_rl: bool = True, **env: str):
    catalog = tmp_path / "catalog"
    step = dpo_step(catalog)
    checkout = fake_checkout(tmp_path / "nemo-rl")
    if with_nemo_rl:
        shutil.copytree(STANDIN, checkout / "nemo_rl")
    work = tmp_path / "work"
    work.mkdir()
    counter = tmp_path / "imports.txt"
    return step, checkout, work, clean_env(tmp_path, STANDIN_COUNTER=str(counter), **env)


def _dry_run(monkeypatch, capsys, tmp_path: Path, checkout: Path, work: Path, env, *more: str):
    argv = ["rl/fake_dpo", "--catalog", str(tmp_path / "catalog"), "--nemo-rl", str(checkout),
            "--runs-dir", str(tmp_path / "runs"), "--launcher", sys.executable, "--dry-run",
            "--json", *more]  # fmt: skip
    result = steps_cli(monkeypatch, capsys, "run", *argv, cwd=work, env=env)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)["findings"]


def _imports(tmp_path: Path) -> int:
    counter = tmp_path / "imports.txt"
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def test_a_value_upstreams_master_config_refuses_is_one_error_at_its_line(
    tmp_path, monkeypatch, capsys
):
    step, checkout, work, env = _setup(tmp_path)
    tiny = step / "config" / "tiny.yaml"
    tiny.write_text(tiny.read_text() + "cluster:\n  num_nodes: two\n", encoding="utf-8")
    findings = _dry_run(monkeypatch, capsys, tmp_path, checkout, work, env)
    at_key = [f for f in findings if f["key"] == "cluster.num_nodes" and f["severity"] == "error"]
    assert [f["code"] for f in at_key] == ["E-UPSTREAM-CONFIG"]  # ours folded into upstream's
    found = at_key[0]
    assert found["path"] == str(tiny) and found["line"] == len(tiny.read_text().splitlines())
    assert "NeMo-RL 0.7.0's own MasterConfig (dpo.py)" in found["message"]
    assert "valid integer" in found["message"]
    assert found["fix"] and "MasterConfig declares" not in found["fix"]  # our fix, not generic


def test_a_clean_config_gets_nothing_from_upstream(tmp_path, monkeypatch, capsys):
    _, checkout, work, env = _setup(tmp_path)
    findings = _dry_run(monkeypatch, capsys, tmp_path, checkout, work, env)
    assert {f["code"] for f in findings} & UPSTREAM_CODES == set()
    assert _imports(tmp_path) == 1  # upstream was asked


def test_the_same_config_is_judged_once_a_changed_one_again(tmp_path, monkeypatch, capsys):
    _, checkout, work, env = _setup(tmp_path)
    for _ in range(2):
        _dry_run(monkeypatch, capsys, tmp_path, checkout, work, env)
    assert _imports(tmp_path) == 1
    _dry_run(monkeypatch, capsys, tmp_path, checkout, work, env, "dpo.max_num_steps=4")
    assert _imports(tmp_path) == 2


def test_an_upstream_that_hangs_is_stopped_at_the_timeout_as_a_warning(
    tmp_path, monkeypatch, capsys
):
    pid_file = tmp_path / "hung.pid"
    _, checkout, work, env = _setup(
        tmp_path, STANDIN_HANG=str(pid_file), STEPS_UPSTREAM_JUDGE_SECONDS="3"
    )
    findings = _dry_run(monkeypatch, capsys, tmp_path, checkout, work, env)
    judged = [f for f in findings if f["code"] in UPSTREAM_CODES]
    assert [(f["code"], f["severity"]) for f in judged] == [("W-UPSTREAM-JUDGE", "warning")]
    assert "no answer within 3 s" in judged[0]["message"]
    pid = int(pid_file.read_text())
    try:  # killed with its session; a zombie is reaped by now, so the pid is gone
        os.kill(pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive


def test_an_upstream_that_wants_more_memory_than_the_cap_is_a_warning(
    tmp_path, monkeypatch, capsys
):
    from runners.preflight import upstream_judge

    monkeypatch.setattr(upstream_judge, "MEMORY_BYTES", 2 << 30)  # a cap this machine can test
    _, checkout, work, env = _setup(tmp_path, STANDIN_GREEDY="4")  # fine without a cap
    findings = _dry_run(monkeypatch, capsys, tmp_path, checkout, work, env)
    judged = [f for f in findings if f["code"] in UPSTREAM_CODES]
    assert [(f["code"], f["severity"]) for f in judged] == [("W-UPSTREAM-JUDGE", "warning")]
    assert "MemoryError" in judged[0]["message"]


def test_an_interpreter_without_nemo_rl_gets_no_upstream_finding(tmp_path, monkeypatch, capsys):
    step, checkout, work, env = _setup(tmp_path, with_nemo_rl=False)
    tiny = step / "config" / "tiny.yaml"
    tiny.write_text(tiny.read_text() + "cluster:\n  num_nodes: two\n", encoding="utf-8")
    findings = _dry_run(monkeypatch, capsys, tmp_path, checkout, work, env)
    assert {f["code"] for f in findings} & UPSTREAM_CODES == set()
    assert any(f["key"] == "cluster.num_nodes" for f in findings)  # the derived schema still


def test_an_interpreter_without_nemo_rl_is_not_asked_twice(tmp_path, monkeypatch, capsys):
    """The launcher probe already looked for `nemo_rl` there: no judge subprocess is started
    (none answered, so none was cached), until the checkout holds one."""
    from runners.preflight.upstream_judge import cache_dir

    _, checkout, work, env = _setup(tmp_path, with_nemo_rl=False)
    _dry_run(monkeypatch, capsys, tmp_path, checkout, work, env)
    answers = cache_dir(env)
    assert not answers.is_dir() or not any(answers.iterdir())
    shutil.copytree(STANDIN, checkout / "nemo_rl")
    _dry_run(monkeypatch, capsys, tmp_path, checkout, work, env)
    assert _imports(tmp_path) == 1 and any(answers.iterdir())


def test_a_tokenizer_without_a_chat_template_is_refused_by_upstreams_loader(
    tmp_path, monkeypatch, capsys
):
    _, checkout, work, env = _setup(tmp_path)
    tok = tmp_path / "tok"
    tok.mkdir()
    (tok / "tokenizer_config.json").write_text("{}", encoding="utf-8")
    findings = _dry_run(
        monkeypatch, capsys, tmp_path, checkout, work, env, f"policy.tokenizer.name={tok}"
    )
    found = [f for f in findings if f["code"] == "E-UPSTREAM-TOKENIZER"]
    assert [f["key"] for f in found] == ["policy.tokenizer.chat_template"]
    assert "chat_template is not set" in found[0]["message"]


def test_pydantic_locations_become_our_keys_a_union_at_the_key_that_holds_it():
    config = {"policy": {"dtensor_cfg": {"enabled": True}}, "data": {"train": [{"x": 1}]}}
    union = ["policy", "dtensor_cfg", "DTensorConfig", "tensor_parallel_size"]
    assert config_key(config, union, missing=True) == (
        "policy.dtensor_cfg",
        "DTensorConfig.tensor_parallel_size",
    )
    assert config_key(config, ["policy", "tokenizer"], missing=True) == ("policy.tokenizer", "")
    assert config_key(config, ["data", "train", 0, "x"], missing=False) == ("data.train[0].x", "")


def test_an_edit_of_the_users_dataset_class_asks_upstream_again(tmp_path: Path) -> None:
    from runners.preflight.upstream_judge import inputs_state

    package = tmp_path / "site" / "mydata"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    module = package / "pairs.py"
    module.write_text("class Pairs:\n    pass\n")
    config = {"data": {"train": {"dataset_name": "mydata.pairs.Pairs"}}}
    env = {"PYTHONPATH": str(tmp_path / "site")}
    before = inputs_state(config, env)
    assert str(module) in json.dumps(before)
    module.write_text("class Pairs:\n    columns = ['prompt', 'chosen']\n")
    assert inputs_state(config, env) != before
    assert str(module) not in json.dumps(inputs_state(config, {}))  # not on the path: not read
