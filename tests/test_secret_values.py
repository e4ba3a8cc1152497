"""Secret values of any type, under any secret-named key, reach no file, no output, no error
message: only the job, through its environment. Config keys that merely end in `key` are not
secrets. (Audit 2026-11 cases sec-lit-*, sec-bad-override-*, sec-pipeline-secret-overrides-*.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf
from pipeline_toys import REPO, steps_main, write_pipeline
from run_fixtures import clean_env, dpo_step, fake_checkout, steps_run

from runners.config.compiler import apply_overrides
from runners.config.secret_overrides import move_secrets
from runners.secrets import is_secret_key, redact

DROP = ("NEMO_RL_HOME", "STEPS_RUNS_DIR")
RL_PREP = ("run", "data_prep/rl_prep", "-c", "tiny", "--dry-run", "--keep", "--show-config")
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
RLVR = ("run", "rl/nemo_rl/rlvr", "-c", "tiny", "--dry-run")


def upstream_configs() -> Path:
    for shared in (REPO / "shared", REPO.parent / "shared"):
        if (shared / "fixtures" / "nemo-rl" / "configs").is_dir():
            return shared / "fixtures" / "nemo-rl" / "configs"
    pytest.skip("no shared/fixtures/nemo-rl/configs next to this checkout")


def all_keys(files: list[Path]) -> set[str]:
    keys: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            keys.update(str(k) for k in node)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for path in files:
        walk(yaml.load(path.read_text(encoding="utf-8"), Loader=LOADER))
    return keys


def leaked(root: Path, planted: str) -> list[str]:
    """Every file under `root` that holds the planted value."""
    return [str(p) for p in root.rglob("*") if p.is_file() and planted.encode() in p.read_bytes()]


def test_no_key_of_any_upstream_nemo_rl_config_nor_of_our_steps_is_a_secret():
    upstream = sorted(upstream_configs().rglob("*.yaml"))
    ours = sorted((REPO / "steps").rglob("*.yaml")) + sorted((REPO / "pipelines").glob("*.yaml"))
    keys = all_keys(upstream + ours)
    assert len({p.relative_to(upstream_configs()).parts[0] for p in upstream}) >= 4  # versions
    assert len(keys) > 500
    assert {k for k in keys if is_secret_key(k)} == set()


@pytest.mark.parametrize(
    "key",
    ["api_key", "apiKey", "ApiToken", "hf-token", "hf_token", "token", "Password", "passwd",
     "client_secret", "secrets", "credentials", "aws_credentials", "auth", "access_token",
     "private_key", "secret_access_key", "wandb_api_key", "ngc_api_key", "passphrase"],
)  # fmt: skip
def test_credential_names_are_secret_keys(key):
    assert is_secret_key(key)


@pytest.mark.parametrize(
    "key",
    ["key", "my_new_key", "num_keys", "key_prefix", "cache_key", "input_key", "problem_key",
     "pad_token", "eos_token", "stop_token_ids", "max_new_tokens", "tokenizer",
     "http_refit_api_key_env_var", "secret_name", "token_level_loss", "keytab_path"],
)  # fmt: skip
def test_data_fields_named_like_keys_or_tokens_are_not_secret_keys(key):
    assert not is_secret_key(key)


def test_a_secret_keys_value_is_masked_whatever_its_type_and_a_lone_switch_stays():
    config = {
        "hf_token": ["sk-a", 12345678901234567890, True, None],
        "credentials": {"aws": {"id": "x1", "port": 443}},
        "env": {"HF_HUB_DISABLE_TOKEN": 1, "use_auth_token": True},
        "grpo": {"my_new_key": 1, "note": "hf_" + "Ab1" * 11},
    }
    assert redact(config, {}) == {
        "hf_token": ["***", "***", True, None],
        "credentials": {"aws": {"id": "***", "port": "***"}},
        "env": {"HF_HUB_DISABLE_TOKEN": 1, "use_auth_token": True},
        "grpo": {"my_new_key": 1, "note": "***"},
    }


@pytest.mark.parametrize(
    ("override", "planted"),
    [
        ("++hf_token=[sk-PLANTED-L1]", "sk-PLANTED-L1"),  # sec-lit-0
        ("++hf_token={v: sk-PLANTED-L2}", "sk-PLANTED-L2"),  # sec-lit-1
        ("++hf_token=12345678901234567890", "12345678901234567890"),  # sec-lit-7
        ("++credentials.aws=sk-PLANTED-L9", "sk-PLANTED-L9"),  # sec-lit-8
        ("++db.password=[1234567, {pin: 7654321}]", "7654321"),
    ],
)
def test_a_secret_keys_list_mapping_or_number_reaches_no_file_under_runs_and_no_output(
    tmp_path, override, planted
):
    proc = steps_main(*RL_PREP, override, cwd=tmp_path, drop=DROP)
    assert proc.returncode == 1  # rl_prep has no such key: a finding, the run dir is kept
    assert (tmp_path / "runs").is_dir() and list((tmp_path / "runs").rglob("config.yaml"))
    assert leaked(tmp_path / "runs", planted) == []
    assert planted not in proc.stdout + proc.stderr
    assert "'***'" in proc.stdout  # --show-config shows the key, masked


def test_new_keys_that_merely_end_in_key_are_shown_as_set(tmp_path):
    extra = ("+grpo.my_new_key=1", "+grpo.num_keys=2", "+grpo.key_prefix=abc", "+grpo.cache_key=x")
    proc = steps_main(*RLVR, "--show-config", *extra, cwd=tmp_path, drop=DROP)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    resolved = yaml.safe_load(proc.stdout.split("--- resolved config (secrets redacted) ---")[1])
    grpo = resolved["grpo"]
    assert (grpo["my_new_key"], grpo["num_keys"], grpo["key_prefix"]) == (1, 2, "abc")
    assert grpo["cache_key"] == "x"


@pytest.mark.parametrize("debug", [(), ("--debug",)])
@pytest.mark.parametrize(
    ("override", "code"),
    [
        ("logger.wandb.api_key=sk-PLANTED-LIT3", "E-OVERRIDE-KEY"),  # sec-bad-override-echo
        ("logger.wandb.api_key=sk-PLANTED-LIT4[", "E-OVERRIDE-SYNTAX"),  # ...-syntax-echo
        ("++logger.hf_token=[sk-PLANTED-LIT5", "E-OVERRIDE-SYNTAX"),
    ],
)
def test_an_override_error_quotes_a_secret_keys_override_as_stars(tmp_path, debug, override, code):
    proc = steps_main(*debug, *RLVR, override, cwd=tmp_path, drop=DROP)
    out = proc.stdout + proc.stderr  # a run's findings are in its plan (stdout for --dry-run)
    assert proc.returncode == 2
    assert code in out and "=***" in out
    assert "PLANTED" not in out


def test_secret_overrides_of_any_type_reach_a_child_config_through_its_environment():
    tokens = ["++hf_token=[sk-PLANTED-A, 12345678901234567890]", "++credentials.aws={id: k9z8}",
              "++db.password=31415926", "++grpo.seed=7"]  # fmt: skip
    safe, env = move_secrets(tokens, {})
    assert safe[3] == "++grpo.seed=7" and not [t for t in safe if "PLANTED" in t or "k9z8" in t]
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        cfg = OmegaConf.to_container(apply_overrides(OmegaConf.create({}), safe), resolve=True)
    assert cfg == {
        "hf_token": ["sk-PLANTED-A", 12345678901234567890],
        "credentials": {"aws": {"id": "k9z8"}},
        "db": {"password": 31415926},
        "grpo": {"seed": 7},
    }


def test_a_literal_list_secret_reaches_nemo_rl_as_a_list_and_no_file_holds_it(tmp_path):
    catalog, checkout = tmp_path / "catalog", fake_checkout(tmp_path / "nemo-rl")
    dpo_step(catalog)
    seen = tmp_path / "seen.json"
    (checkout / "examples" / "run_dpo.py").write_text(
        "import json, os, sys\n"
        "env = {k: v for k, v in os.environ.items() if k.startswith('STEPS_SECRET_')}\n"
        f"json.dump({{'env': env, 'config': sys.argv[sys.argv.index('--config') + 1]}}, "
        f"open({str(seen)!r}, 'w'))\n",
        encoding="utf-8",
    )
    env = clean_env(tmp_path)
    base = ["rl/fake_dpo", "--catalog", str(catalog), "--nemo-rl", str(checkout)]
    planted = "sk-PLANTED-RUN"
    token = f"++logger.hf_token=[{planted}, 12345678901234567890]"
    proc = steps_run(*base, "--runs-dir", str(tmp_path / "runs"), token, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    job = json.loads(seen.read_text())
    with pytest.MonkeyPatch.context() as mp:
        for name, value in job["env"].items():
            mp.setenv(name, value)
        config = OmegaConf.to_container(OmegaConf.load(job["config"]), resolve=True)
    assert config["logger"]["hf_token"] == [planted, 12345678901234567890]
    assert (
        leaked(tmp_path / "runs", planted) == [] and leaked(tmp_path / "runs", "1234567890") == []
    )
    assert planted not in proc.stdout + proc.stderr


def test_a_pipeline_stages_secret_overrides_reach_no_record_run_dir_or_output(tmp_path):
    blend = REPO / "steps" / "data_prep" / "rl_prep" / "data" / "blend_tiny.yaml"
    overrides = ["++hf_token=[sk-PLANTED-P1]", "++credentials.aws=sk-PLANTED-P2",
                 "++db.password=98765432109876543210"]  # fmt: skip
    file = write_pipeline(
        tmp_path / "ps.yaml",
        f"""\
        name: sp
        inputs:
          blend: {{type: data_blend, path: {blend}}}
        stages:
          - id: prep
            step: data_prep/rl_prep
            config: tiny
            overrides: {json.dumps(overrides)}
            inputs: {{blend: inputs.blend}}
        targets: [prep.data]
        """,
    )
    root = tmp_path / "root"
    runs = [
        ("pipeline", "run", str(file), "--root", str(root)),  # sec-pipeline-secret-overrides-run
        ("--debug", "pipeline", "run", str(file), "--root", str(root), "--force", "prep"),
        ("pipeline", "run", str(file), "--root", str(root), "--dry-run"),
        ("plan", str(file), "--json"),
    ]
    outputs = ""
    for argv in runs:
        proc = steps_main(*argv, cwd=tmp_path, drop=DROP)
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr
        outputs += proc.stdout + proc.stderr
    assert (root / "prep" / "record.json").is_file()
    assert len(list(root.rglob("config.yaml"))) == 2  # both runs wrote their run dir
    for planted in ("sk-PLANTED-P1", "sk-PLANTED-P2", "98765432109876543210"):
        assert leaked(root, planted) == [] and leaked(tmp_path / "runs", planted) == []
        assert planted not in outputs
