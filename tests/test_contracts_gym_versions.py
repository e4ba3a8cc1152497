"""The Gym that will run judges the row: its vocabulary comes from its own source (never
imported), is cached per version, and ships for the pin and 0.7.0; findings name the version."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from catalog.contracts import get_row_contract
from catalog.contracts.gym_facts import detect_gym, gym_facts, pin_version
from catalog.contracts.options import contract_options
from catalog.errors import StepsError
from catalog.upstream import GYM_SUBDIR
from steps.cli import main

ROW = {
    "responses_create_params": {"input": [{"role": "user", "content": "2+2?"}]},
    "agent_ref": {"type": "responses_api_agents", "name": "math_agent"},
}
NEW_IN_0_7 = {
    "context_management",
    "conversation",
    "moderation",
    "prompt_cache_key",
    "prompt_cache_retention",
    "safety_identifier",
    "stream_options",
}

# Two small Gyms written for these tests: 2.0 adds a request field and an item type, and routes
# items with a Discriminator (as 0.7.0 does).
MODELS = """
from typing import Annotated, List, Literal, Optional, Union
from pydantic import BaseModel, ConfigDict, Discriminator, Tag
from openai.types.responses import McpCall
from openai.types.responses.response_create_params import Metadata, ToolChoice


class NeMoGymInputText(BaseModel):
    type: Literal["input_text"] = "input_text"
    text: str


class NeMoGymEasyInputMessage(BaseModel):
    content: Union[str, List[NeMoGymInputText]]
    role: Literal["user", "assistant", "system", "developer"]
    type: Literal["message"] = "message"


class NeMoGymFunctionCall(BaseModel):
    type: Literal["function_call"] = "function_call"
    call_id: str
    name: str
    arguments: str


class NeMoGymHostedCall(McpCall):
    pass
{extra_classes}

NeMoGymResponseInputItem = {union}


class NeMoGymResponseCreateParamsNonStreaming(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input: Union[str, List[NeMoGymResponseInputItem]]
    instructions: Optional[str] = None
    metadata: Optional[Metadata] = None
    parallel_tool_calls: bool = True
    temperature: Optional[float] = None
    tool_choice: ToolChoice = "auto"
    tools: List[dict] = []
    stream: Optional[Literal[False]] = None
{extra_fields}
"""
V1 = MODELS.format(
    extra_classes="",
    union="Union[NeMoGymEasyInputMessage, NeMoGymFunctionCall, NeMoGymHostedCall]",
    extra_fields="",
)
V2 = MODELS.format(
    extra_classes="\n\nclass NeMoGymShellCall(SomeNewSdkItem):\n    pass\n",
    union=(
        "Annotated[Union[Annotated[NeMoGymEasyInputMessage, Tag('message')], "
        "Annotated[NeMoGymFunctionCall, Tag('function_call')], "
        "Annotated[NeMoGymHostedCall, Tag('mcp_call')], "
        "Annotated[NeMoGymShellCall, Tag('shell_call')]], Discriminator(lambda v: v)]"
    ),
    extra_fields="    prompt_cache_key: Optional[str] = None\n",
)


def make_gym(root: Path, version: str, models: str) -> Path:
    """A Gym source tree: nemo_gym/package_info.py and nemo_gym/openai_utils.py."""
    major, minor, patch = version.split(".")
    (root / "nemo_gym").mkdir(parents=True)
    (root / "nemo_gym" / "package_info.py").write_text(
        f"MAJOR = {major}\nMINOR = {minor}\nPATCH = {patch}\nPRE_RELEASE = ''\n"
    )
    (root / "nemo_gym" / "openai_utils.py").write_text(models)
    return root


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """A cache dir of the test's own, and no NeMo-RL checkout in the environment."""
    monkeypatch.setenv("STEPS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NEMO_RL_HOME", raising=False)


def row_with(**request) -> dict:
    return {**ROW, "responses_create_params": {**ROW["responses_create_params"], **request}}


def fields(violations) -> list[str]:
    return [v.field for v in violations]


def test_the_shipped_0_7_0_adds_exactly_the_seven_request_fields_over_the_pin():
    pin, new = gym_facts(), gym_facts("0.7.0")
    assert pin.version == pin_version() == "0.5.1"
    assert set(new.request_fields) - set(pin.request_fields) == NEW_IN_0_7
    assert set(pin.request_fields) <= set(new.request_fields)


def test_a_row_with_0_7_0_fields_passes_0_7_0_and_is_unknown_to_the_pin_naming_it():
    row = row_with(prompt_cache_key="k", safety_identifier="u1", conversation="c1")
    assert get_row_contract("nemo_gym_rows", gym_version="0.7.0")(row) == []
    found = get_row_contract("nemo_gym_rows")(row)
    assert fields(found) == [
        "responses_create_params.prompt_cache_key",
        "responses_create_params.safety_identifier",
        "responses_create_params.conversation",
    ]
    assert all("not a request field of NeMo-Gym 0.5.1" in v.message for v in found)


def test_0_7_0_item_types_are_unknown_to_the_pin():
    row = row_with(input=[{"type": "compaction", "encrypted_content": "x"}])
    assert get_row_contract("nemo_gym_rows", gym_version="v0.7.0")(row) == []
    (v,) = get_row_contract("nemo_gym_rows")(row)
    assert v.field == "responses_create_params.input[0].type" and "NeMo-Gym 0.5.1" in v.message


def test_the_chat_text_part_hint_says_what_is_true_of_each_version():
    row = row_with(input=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    (pin,) = get_row_contract("nemo_gym_rows")(row)
    (new,) = get_row_contract("nemo_gym_rows", gym_version="0.7.0")(row)
    assert "NeMo-Gym 0.5.1 does not reject" in pin.fix and "mcp_list_tools" in pin.fix
    assert "NeMo-Gym 0.7.0 rejects" in new.fix


def test_gym_version_detected_and_fields_derived_from_two_synthetic_checkouts(tmp_path):
    old = make_gym(tmp_path / "gym1", "1.0.0", V1)
    new = make_gym(tmp_path / "gym2", "2.0.0", V2)
    f1, f2 = gym_facts(str(old)), gym_facts(str(new))
    assert (f1.version, f2.version) == ("1.0.0", "2.0.0")
    assert set(f2.request_fields) - set(f1.request_fields) == {"prompt_cache_key"}
    assert f1.request_fields["temperature"] == {"number", "null"}
    assert f1.request_fields["metadata"] == {"object", "null"}  # an OpenAI SDK name
    assert f1.request_fields["tool_choice"] is None  # an SDK name not known: not checked
    assert f1.item_types == {"message", "function_call", "mcp_call"}
    assert f2.item_types == {"message", "function_call", "mcp_call", "shell_call"}
    assert (f1.messages_discriminated, f2.messages_discriminated) == (False, True)
    assert f1.content_parts == {"input_text"}


def test_a_field_or_item_type_is_judged_by_the_version_that_has_it(tmp_path):
    old = str(make_gym(tmp_path / "gym1", "1.0.0", V1))
    new = str(make_gym(tmp_path / "gym2", "2.0.0", V2))
    row = row_with(prompt_cache_key="k")
    assert get_row_contract("nemo_gym_rows", gym_version=new)(row) == []
    (v,) = get_row_contract("nemo_gym_rows", gym_version=old)(row)
    assert v.field == "responses_create_params.prompt_cache_key"
    assert "NeMo-Gym 1.0.0" in v.message
    shell = row_with(input=[{"type": "shell_call", "action": {}}])
    assert get_row_contract("nemo_gym_rows", gym_version=new)(shell) == []
    assert fields(get_row_contract("nemo_gym_rows", gym_version=old)(shell)) == [
        "responses_create_params.input[0].type"
    ]
    typed = row_with(temperature="hot")
    (v,) = get_row_contract("nemo_gym_rows", gym_version=old)(typed)
    assert v.message == "expected null or number, got string"


def test_a_nemo_rl_checkout_is_judged_by_its_gym_submodule(tmp_path):
    checkout = tmp_path / "nemo-rl"
    make_gym(checkout / GYM_SUBDIR, "2.0.0", V2)
    assert gym_facts(str(checkout)).version == "2.0.0"
    options = contract_options("nemo_gym_rows", {}, gym_root=checkout / GYM_SUBDIR)
    assert options["gym_version"] == str(checkout / GYM_SUBDIR)
    assert (
        contract_options("nemo_gym_rows", {"run": {"gym_version": "0.7.0"}})["gym_version"]
        == "0.7.0"
    )


def test_the_derivation_is_cached_per_version_and_redone_when_the_source_changes(tmp_path):
    gym = make_gym(tmp_path / "gym", "3.1.0", V1)
    with pytest.raises(StepsError) as exc:
        gym_facts("3.1.0")
    assert exc.value.finding.code == "E-GYM-VERSION" and exc.value.exit_code == 2
    assert "0.5.1, 0.7.0" in exc.value.finding.message
    gym_facts(str(gym))
    cached = json.loads((tmp_path / "cache" / "nemo-rl-steps" / "gym" / "3.1.0.json").read_text())
    assert "prompt_cache_key" not in cached["request_fields"]
    assert "prompt_cache_key" not in gym_facts("3.1.0").request_fields  # now known by name
    (gym / "nemo_gym" / "openai_utils.py").write_text(V2 + "\n# edited\n")
    assert "prompt_cache_key" in gym_facts(str(gym)).request_fields
    assert "prompt_cache_key" in gym_facts("3.1.0").request_fields


def test_a_folder_without_gym_source_is_a_usage_error(tmp_path):
    with pytest.raises(StepsError) as exc:
        gym_facts(str(tmp_path))
    assert exc.value.finding.code == "E-GYM-VERSION" and exc.value.exit_code == 2


def test_an_installed_nemo_gym_is_found_from_its_metadata_without_importing_it(
    tmp_path, monkeypatch
):
    site = make_gym(tmp_path / "site", "2.0.0", V2)
    info = site / "nemo_gym-2.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: nemo-gym\nVersion: 2.0.0\n")
    assert detect_gym() != str(site)
    monkeypatch.syspath_prepend(str(site))
    assert detect_gym() == str(site)
    assert "nemo_gym" not in sys.modules


def test_a_gym_missing_a_field_the_pre_filter_takes_turns_the_pre_filter_off(tmp_path):
    gym = str(make_gym(tmp_path / "gym", "1.0.0", V1))  # no max_output_tokens
    contract = get_row_contract("nemo_gym_rows", gym_version=gym)
    assert contract.accept is None
    assert fields(contract(row_with(max_output_tokens=8))) == [
        "responses_create_params.max_output_tokens"
    ]
    assert get_row_contract("nemo_gym_rows", gym_version="0.7.0").accept is not None


def test_validate_takes_gym_version_as_a_version_or_a_checkout(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(row_with(prompt_cache_key="k")) + "\n")
    gym = make_gym(tmp_path / "gym", "2.0.0", V2)
    assert main(["validate", "nemo_gym_jsonl", str(rows), "--gym-version", "0.7.0"]) == 0
    assert main(["validate", "nemo_gym_jsonl", str(rows), "--gym-version", str(gym)]) == 0
    capsys.readouterr()
    assert main(["validate", "nemo_gym_jsonl", str(rows)]) == 1
    assert "not a request field of NeMo-Gym 0.5.1" in capsys.readouterr().err
    assert main(["validate", "nemo_gym_jsonl", str(rows), "--gym-version", "9.9"]) == 2
    assert "E-GYM-VERSION" in capsys.readouterr().err


def test_a_blank_line_in_gym_rows_is_an_error_at_its_line(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(ROW) + "\n\n" + json.dumps(ROW) + "\n")
    assert main(["validate", "nemo_gym_jsonl", str(rows)]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith(f"{rows}:2: E-JSONL-BLANK")
    assert "2 rows in 1 file" in captured.out


def test_a_blank_line_in_preference_rows_stays_a_warning(tmp_path, capsys):
    """NeMo-RL reads preference rows with `datasets`' JSON loader, which skips blank lines."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"prompt": "p", "chosen": "a", "rejected": "b"}\n\n')
    assert main(["validate", "preference_jsonl", str(rows)]) == 0
    assert capsys.readouterr().err.startswith(f"{rows}:2: warning: W-JSONL-BLANK")
