"""With the optional `gym` extra (nemo-gym) installed, our contract and Gym's own request model
agree on generated rows: a request our contract passes is one Gym accepts, so a request Gym
rejects is one we reject too. nemo-gym 0.5.0 and later need Python >= 3.13.14, so on older
Pythons (3.10-3.12, and 3.13 before .14) this skips, saying so."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings

gym = pytest.importorskip(
    "nemo_gym.openai_utils",
    reason="the optional `gym` extra (nemo-gym) is not installed; nemo-gym 0.5.0 and later "
    "need Python >= 3.13.14",
)

from pydantic import ValidationError  # noqa: E402
from test_contracts_gym_fast import bent_row  # noqa: E402

from catalog.contracts import get_row_contract  # noqa: E402
from catalog.contracts.gym_facts import installed_gym  # noqa: E402

REQUEST = gym.NeMoGymResponseCreateParamsNonStreaming
INSTALLED = installed_gym()


def gym_accepts(request: object) -> bool:
    try:
        REQUEST.model_validate(request)
    except ValidationError:
        return False
    return True


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(row=bent_row())
def test_a_request_our_contract_passes_is_one_the_installed_gym_accepts(row):
    contract = get_row_contract("nemo_gym_rows", gym_version=str(INSTALLED))
    ours = [v for v in contract(row) if v.field.startswith("responses_create_params")]
    if not ours:
        assert gym_accepts(row["responses_create_params"]), json.dumps(row)


def test_an_empty_input_that_gym_accepts_passes_ours():
    row = {"responses_create_params": {"input": []}, "agent_ref": {"name": "a"}}
    assert gym_accepts(row["responses_create_params"])
    assert get_row_contract("nemo_gym_rows", gym_version=str(INSTALLED))(row) == []
