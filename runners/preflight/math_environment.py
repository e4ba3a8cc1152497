"""The math environment's verifier (`env.<name>.math_verify_impl`): an unknown one scores every
reward 0 without an error.
"""

from __future__ import annotations

from collections.abc import Iterator

from catalog.errors import Finding
from catalog.nemo_rl_version import in_range
from runners.preflight import PreflightContext, rule
from runners.preflight.topology import (
    UNRESOLVED,
    algorithm,
    cite,
    dataset_entries,
    finding,
    uses_gym,
)

SINGLE = ("hf_math_verify", "dapo_math_verify")
ACCEPTED = {"math": SINGLE, "math_default": SINGLE, "math_multi_reward": ("hf_math_verify",)}
SCORED_ZERO = {
    "math": {"0.4.0": 134, "0.7.0": 135, "pin": 148},
    "math_multi_reward": {"0.6.0": 325, "0.7.0": 326, "pin": 359},
}


def _used_envs(ctx: PreflightContext) -> list[str]:
    if in_range(ctx.nemo_rl_version, "0.6.0+") and isinstance(ctx.get("data.train"), (dict, list)):
        names = [entry.get("env_name") for _, entry, _ in dataset_entries(ctx)]
        return sorted({n for n in names if isinstance(n, str)})
    return [] if uses_gym(ctx) else ["math"]


@rule("math_verify_impl")
def math_verify_impl(ctx: PreflightContext) -> Iterator[Finding]:
    """E-MATH-VERIFY-IMPL: a verifier the math environment does not know scores every reward 0."""
    if algorithm(ctx) != "grpo":
        return
    for name in _used_envs(ctx):
        section = ctx.get(f"env.{name}")
        if name not in ACCEPTED or not isinstance(section, dict):
            continue
        if "math_verify_impl" not in section or section["math_verify_impl"] == UNRESOLVED:
            continue
        value, accepted = section["math_verify_impl"], ACCEPTED[name]
        if value in accepted:
            continue
        env_class = (
            "MathMultiRewardEnvironment" if name == "math_multi_reward" else "MathEnvironment"
        )
        line = cite(ctx.nemo_rl_version, SCORED_ZERO.get(name, SCORED_ZERO["math"]))
        yield finding(
            ctx,
            "E-MATH-VERIFY-IMPL",
            f"env.{name}.math_verify_impl",
            f"{value!r} is not a verifier {env_class} knows ({', '.join(accepted)}): each "
            "response's ValueError is caught and scored 0.0 "
            f"(nemo_rl/environments/math_environment.py:{line}), so training runs with every "
            "reward 0 and no error",
            f"set env.{name}.math_verify_impl={accepted[0]}"
            + (f" (or {accepted[1]})" if len(accepted) > 1 else "")
            + ", or remove the key for the default",
        )
