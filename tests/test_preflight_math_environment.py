"""A math verifier the math environment does not know (issue 38, after the boundary): NeMo-RL
trains with every reward 0 and says nothing, so preflight says it, as an error."""

from __future__ import annotations

import pytest
from user_configs import judged, on


@pytest.mark.parametrize(("version", "line"), [("0.6.0", 134), ("0.7.0", 135), ("pin", 148)])
def test_an_unknown_verifier_is_an_error_naming_the_silent_zero(tmp_path, version, line) -> None:
    text = "env:\n  math:\n    math_verify_impl: math_verify\n"
    [error] = on(judged(tmp_path, "rlvr", text, version), "E-MATH-VERIFY-IMPL")
    assert error.key == "env.math.math_verify_impl" and error.line == 4
    assert f"math_environment.py:{line}" in error.message and "every reward 0" in error.message
    assert "math_verify_impl=hf_math_verify" in error.fix


def test_null_is_not_the_default_but_a_zero_reward_too(tmp_path) -> None:
    text = "env:\n  math:\n    math_verify_impl: null\n"
    assert len(on(judged(tmp_path, "rlvr", text, "0.7.0"), "E-MATH-VERIFY-IMPL")) == 1


@pytest.mark.parametrize("impl", ["hf_math_verify", "dapo_math_verify"])
def test_the_known_verifiers_are_clean(tmp_path, impl) -> None:
    text = f"env:\n  math:\n    math_verify_impl: {impl}\n"
    assert on(judged(tmp_path, "rlvr", text, "0.7.0"), "E-MATH-VERIFY-IMPL") == []


def test_the_env_the_data_uses_is_judged_by_its_own_verifiers(tmp_path) -> None:
    text = (
        "data:\n  default:\n    env_name: math_multi_reward\n"
        "env:\n  math:\n    math_verify_impl: math_verify\n"  # no data uses it now
        "  math_multi_reward:\n    math_verify_impl: dapo_math_verify\n"
    )
    found = on(judged(tmp_path, "rlvr", text, "0.7.0"), "E-MATH-VERIFY-IMPL")
    assert [f.key for f in found] == ["env.math_multi_reward.math_verify_impl"]
    assert "MathMultiRewardEnvironment" in found[0].message and ":326" in found[0].message
