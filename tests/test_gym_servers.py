"""Rows every reward environment can score: each resource server's task fields, per row.

The fields come from the Gym source (the server's verify request model, read with `ast`); the
rows are the users' shapes: a DAPO-Math-style set converted to Gym rows that kept `prompt` and
`reward_model.ground_truth` but have no `question`/`expected_answer`, and chat rows routed to
instruction_following. They go through `validate --step` and the GRPO dry run like a user's.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from pipeline_toys import steps_main
from preflight_fixtures import gym_root
from run_fixtures import REPO, fake_checkout

from catalog.contracts.gym_fast import gym_accept
from catalog.contracts.gym_routes import read_routes
from catalog.contracts.gym_servers import derive_server_fields, server_fields
from catalog.upstream import GYM_SUBDIR, NEMO_RL_COMMIT

STEP = "rl/nemo_rl/rlvr"
MATH_AGENT = "math_with_judge_simple_agent"
FOLLOW_AGENT = "instruction_following_simple_agent"
SERVER = """\
from typing import Optional

from pydantic import BaseModel, Field

from nemo_gym.base_resources_server import BaseRunRequest, BaseVerifyRequest


class GradeRunRequest(BaseRunRequest):
    prompt_text: str
    gold: Optional[str]
    attempts: int = 1


class GradeVerifyRequest(GradeRunRequest, BaseVerifyRequest):
    rubric: dict = Field(default_factory=dict)
    weight: float = Field(...)


class GradeServer:
    async def verify(self, body: GradeVerifyRequest):
        return body
"""


def _rcp(text: str) -> dict:
    return {"input": [{"role": "user", "content": text}]}


def dapo_row(i: int) -> dict:
    """A DAPO-Math-style row after conversion to Gym: the answer stayed in reward_model."""
    return {
        "responses_create_params": _rcp(f"Solve {i} + {i}."),
        "agent_ref": {"type": "responses_api_agents", "name": MATH_AGENT},
        "prompt": [{"role": "user", "content": f"Solve {i} + {i}."}],
        "reward_model": {"style": "rule", "ground_truth": str(2 * i)},
        "data_source": "math_dapo",
    }


def chat_row(i: int) -> dict:
    """A chat row routed to instruction_following without the `id` its server requires."""
    return {
        "responses_create_params": _rcp(f"Write {i} fruits in lowercase."),
        "agent_ref": {"type": "responses_api_agents", "name": FOLLOW_AGENT},
        "instruction_id_list": ["change_case:english_lowercase"],
        "kwargs": [{}],
    }


def shards(folder: Path, rows: list[dict], n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(n):
        part = rows[k::n]
        text = "".join(json.dumps(r) + "\n" for r in part)
        (folder / f"shard-{k:05d}.jsonl").write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A NeMo-RL checkout with the tests' Gym tree (math_with_judge, instruction_following)."""
    root = fake_checkout(tmp_path / "nemo-rl")
    gym_root(root / "3rdparty" / "Gym-workspace")
    return root


def validate(tmp_path: Path, checkout: Path, rows: Path, *extra: str) -> dict:
    argv = ["validate", "training_jsonl", str(rows), "--step", STEP, "-c", "nemo_gym_tiny"]
    proc = steps_main(*argv, "--json", *extra, cwd=tmp_path, env={"NEMO_RL_HOME": str(checkout)})
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


# --- deriving a server's fields from its source ------------------------------------------------


def test_task_fields_come_from_the_verify_model_and_its_own_bases_not_gym_s():
    found = derive_server_fields(SERVER, "grade", "resources_servers/grade/app.py")
    assert found.reason is None and found.model == "GradeVerifyRequest"
    required = {k for k, f in found.fields.items() if f.required}
    assert required == {"prompt_text", "gold", "weight"}  # Optional without default: required
    assert found.fields["attempts"].types == ("integer",)
    assert found.fields["gold"].types == ("null", "string")
    assert "responses_create_params" not in found.fields and "response" not in found.fields


def test_a_verify_that_takes_a_raw_request_is_not_derived_and_says_why():
    source = "from fastapi import Request\n\n\nclass S:\n    async def verify(self, r: Request):\n"
    found = derive_server_fields(source + "        pass\n", "raw", "resources_servers/raw/app.py")
    assert found.reason == "its verify model Request: Request comes from fastapi"


def test_a_model_extending_another_server_s_model_is_read_from_the_gym_tree(tmp_path: Path):
    (tmp_path / "resources_servers/grade").mkdir(parents=True)
    (tmp_path / "resources_servers/grade/app.py").write_text(SERVER)
    derived = tmp_path / "resources_servers/regrade/app.py"
    derived.parent.mkdir(parents=True)
    derived.write_text(
        "from resources_servers.grade.app import GradeVerifyRequest\n\n\n"
        "class Again(GradeVerifyRequest):\n    lang: str\n\n\n"
        "class S:\n    async def verify(self, body: Again):\n        pass\n"
    )
    found = server_fields(tmp_path, "regrade")
    assert found.reason is None
    assert {"prompt_text", "gold", "weight", "lang"} <= set(found.fields)


# --- checking rows against the server their agent routes to ------------------------------------


def test_dapo_style_rows_without_question_and_expected_answer_fail_validate_once_for_both(
    tmp_path: Path, checkout: Path
) -> None:
    rows = shards(tmp_path / "prepared", [dapo_row(i) for i in range(40)], 11)
    report = validate(tmp_path, checkout, rows)
    assert not report["ok"] and report["bad_rows"] == 40
    task = [f for f in report["findings"] if f["code"] == "E-GYM-TASK-FIELD"]
    assert [f["key"] for f in task] == ["question, expected_answer"]  # one cause, both named
    assert task[0]["message"].startswith(
        "40 rows in 11 files: question, expected_answer: `question`, `expected_answer` are missing"
    )
    assert f"agent `{MATH_AGENT}`" in task[0]["message"]
    assert "server `math_with_judge`" in task[0]["message"]
    assert task[0]["message"].endswith(
        "first at shard-00000.jsonl:1, shard-00000.jsonl:2, shard-00000.jsonl:3, ..."
    )
    assert report["errors"] == 1


def test_chat_rows_routed_to_instruction_following_need_its_integer_id(
    tmp_path: Path, checkout: Path
) -> None:
    rows = [chat_row(0), {**chat_row(1), "id": "x1"}, {**chat_row(2), "id": 2}]
    folder = shards(tmp_path / "chat", rows, 1)
    report = validate(tmp_path, checkout, folder)
    found = {(f["line"], f["message"].split(":")[0]) for f in report["findings"]}
    assert found == {(1, "id"), (2, "id")}
    [mistyped] = [f for f in report["findings"] if f["line"] == 2]
    assert "`id` must be integer, got string" in mistyped["message"]


def test_rows_routed_to_an_agent_the_config_does_not_load_are_one_error(
    tmp_path: Path, checkout: Path
) -> None:
    lost = {**dapo_row(0), "question": "q", "expected_answer": "0"}
    lost["agent_ref"] = {"type": "responses_api_agents", "name": "code_gen_simple_agent"}
    rows = shards(tmp_path / "lost", [lost] * 20, 11)
    report = validate(tmp_path, checkout, rows)
    assert [f["code"] for f in report["findings"]] == ["E-GYM-AGENT"]
    message = report["findings"][0]["message"]
    assert message.startswith("20 rows in 11 files: agent_ref.name: agent 'code_gen_simple_agent'")
    assert "is not loaded by the config" in message


def test_the_dry_run_rejects_the_same_rows_with_the_same_findings(
    tmp_path: Path, checkout: Path
) -> None:
    rows = shards(tmp_path / "prepared", [dapo_row(i) for i in range(12)], 3)
    proc = steps_main(
        "run", STEP, "-c", "nemo_gym_tiny", "--input", f"train={rows}", "--nemo-rl",
        str(checkout), "--dry-run", "--json", cwd=tmp_path,
    )  # fmt: skip
    task = [f for f in json.loads(proc.stdout)["findings"] if f["code"] == "E-GYM-TASK-FIELD"]
    assert [f["key"] for f in task] == ["question, expected_answer"]
    assert task[0]["message"].startswith("12 rows in 3 files: ")


def test_a_server_whose_fields_cannot_be_derived_is_said_once(
    tmp_path: Path, checkout: Path
) -> None:
    app = checkout / GYM_SUBDIR / "resources_servers/instruction_following/app.py"
    app.write_text("from fastapi import Request\n\n\nclass S:\n    def verify(self, r: Request):\n")
    rows = shards(tmp_path / "chat", [chat_row(i) for i in range(4)], 2)
    report = validate(tmp_path, checkout, rows)
    assert report["ok"]
    [note] = report["findings"]
    assert note["code"] == "W-GYM-SERVER-UNDERIVED" and "instruction_following" in note["message"]


def test_the_fast_path_accepts_only_rows_carrying_their_server_s_fields(tmp_path: Path):
    routes = read_routes(gym_root(tmp_path), {"config_paths": [
        "resources_servers/math_with_judge/configs/math_with_judge.yaml",
    ]}).option()  # fmt: skip
    accept = gym_accept(routes=routes)
    good = {**dapo_row(1), "question": "Solve 1 + 1.", "expected_answer": "2"}
    assert accept(json.dumps(good).encode())
    assert not accept(json.dumps(dapo_row(1)).encode())
    assert not accept(json.dumps({**good, "expected_answer": 2}).encode())


# --- against the real Gym at the pin ------------------------------------------------------------

GYM_GIT = Path(os.environ.get("STEPS_NEMO_GYM_GIT", REPO.parent / ".mirror/NVIDIA-NeMo+Gym/repo"))
RL_GIT = Path(os.environ.get("STEPS_NEMO_RL_GIT", REPO.parent / ".mirror/NVIDIA-NeMo+RL/repo"))


def test_real_gym_math_with_judge_needs_question_and_expected_answer(tmp_path: Path):
    if not (GYM_GIT / "HEAD").is_file() or not (RL_GIT / "HEAD").is_file():
        pytest.skip("needs git mirrors of NeMo-RL and Gym")
    commit = subprocess.run(
        ["git", "-C", str(RL_GIT), "rev-parse", f"{NEMO_RL_COMMIT}:{GYM_SUBDIR}"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    archive = subprocess.run(
        ["git", "-C", str(GYM_GIT), "archive", "--format=tar", commit, "--",
         "resources_servers/math_with_judge", "resources_servers/instruction_following"],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=archive, check=True)
    math = server_fields(tmp_path, "math_with_judge")
    assert {k for k, f in math.fields.items() if f.required} == {"question", "expected_answer"}
    follow = server_fields(tmp_path, "instruction_following")
    assert follow.fields["id"].required and follow.fields["id"].types == ("integer",)


def test_the_fast_path_never_accepts_a_row_the_contract_refuses(tmp_path: Path):
    from catalog.contracts.registry import get_row_contract

    routes = read_routes(gym_root(tmp_path), {"config_paths": [
        "resources_servers/math_with_judge/configs/math_with_judge.yaml",
        "resources_servers/instruction_following/configs/instruction_following.yaml",
    ]}).option()  # fmt: skip
    contract = get_row_contract("nemo_gym_rows", routes=routes)
    values = ["2", 2, 2.0, -1, "x", None, True, [], {}, "-3"]
    rows = []
    for agent, base in ((MATH_AGENT, dapo_row(3)), (FOLLOW_AGENT, chat_row(3))):
        for key in ("question", "expected_answer", "id", "kwargs"):
            for value in values:
                row = {**base, "question": "q", "expected_answer": "6", "id": 1, key: value}
                rows.append({**row, "agent_ref": {"name": agent}})
    assert contract.accept is not None
    accepted = [r for r in rows if contract.accept(json.dumps(r).encode())]
    assert accepted and all(contract(r) == [] for r in accepted)
    assert any(contract(r) == [] for r in rows if r not in accepted)  # the contract decides
