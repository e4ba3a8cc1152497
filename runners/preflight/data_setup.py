"""What NeMo-RL's data and environment setup looks up and opens on the driver: dataset and
processor names in its registries (a dotted name is a user's class: not judged here), whether the
class a bound input's entry names reads `data_path` (a hub dataset such as HelpSteer3 does not:
refused, not rewritten, as the name may be deliberate), the prompt files, and the math verifier
(an unknown one scores every reward 0 without an error).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from catalog.did_you_mean import close_matches
from catalog.errors import Finding
from catalog.nemo_rl_registries import (
    PREFERENCE_DATASETS,
    PREFERENCE_RAISE,
    PROCESSOR_ASSERT,
    PROCESSORS,
    RESPONSE_DATASETS,
    RESPONSE_RAISE,
    UNPROCESSED_050,
)
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

# Registry names whose class reads `data_path` (0.6.0, 0.7.0, the pin: v0.7.0
# preference_datasets/__init__.py:25-32 and response_datasets/__init__.py name the classes).
READS_DATA_PATH = {
    "dpo": ("BinaryPreferenceDataset", "PreferenceDataset"),
    "grpo": ("ResponseDataset", "NemoGymDataset", "openai_format", "general-conversation-jsonl"),
}
BOUND = re.compile(r"^(data\.(?:train|validation)(?:\[\d+\])?)\.data_path$")
PROMPT_KEYS = ("prompt_file", "system_prompt_file")
PROMPT_RAISED = {
    "0.4.0": "nemo_rl/data/interfaces.py:71",
    "0.6.0": "nemo_rl/data/interfaces.py:74",
    "pin": "nemo_rl/data/interfaces.py:81",
}
VERIFY = ("hf_math_verify", "dapo_math_verify")  # MathEnvironment's; multi-reward: the first
VERIFIERS = {"math": VERIFY, "math_default": VERIFY, "math_multi_reward": ("hf_math_verify",)}
SCORED_ZERO = {
    "math": {"0.4.0": 134, "0.7.0": 135, "pin": 148},
    "math_multi_reward": {"0.6.0": 325, "0.7.0": 326, "pin": 359},
}


def _entries(ctx: PreflightContext) -> Iterator[tuple[str, dict, dict]]:
    """(config key, the entry as NeMo-RL reads it, the entry as written) per dataset."""
    data = ctx.get("data")
    if not isinstance(data, dict):
        return
    new_layout = in_range(ctx.nemo_rl_version, "0.6.0+")
    if "train" in data and new_layout:
        yield from dataset_entries(ctx)
    elif "train" not in data and "dataset_name" in data and not new_layout:
        gym_script = uses_gym(ctx) and in_range(ctx.nemo_rl_version, "0.5.0+")
        if not gym_script:  # 0.5.0's run_grpo_nemo_gym.py reads only the jsonl paths
            yield "data", data, data


def _hint(name: str, known: tuple[str, ...]) -> str:
    close = close_matches(name, known, 1)
    return f"did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def _where(key: str, name: str, written: dict) -> str:
    """The key that set `name`: the entry's own, else data.default's."""
    return f"{key}.{name}" if name in written or key == "data" else f"data.default.{name}"


@rule("dataset_names")
def dataset_names(ctx: PreflightContext) -> Iterator[Finding]:
    """E-DATASET-NAME / E-DATA-PROCESSOR: names outside NeMo-RL's registries."""
    algo = algorithm(ctx)
    if algo not in ("dpo", "grpo"):
        return
    version = ctx.nemo_rl_version
    label = "this NeMo-RL" if version is None else f"NeMo-RL {version.label}"
    known = cite(version, PREFERENCE_DATASETS if algo == "dpo" else RESPONSE_DATASETS)
    raised = cite(version, PREFERENCE_RAISE if algo == "dpo" else RESPONSE_RAISE)
    kind = "preference" if algo == "dpo" else "response"
    for key, entry, written in _entries(ctx):
        name = entry.get("dataset_name")
        if not isinstance(name, str) or name == UNRESOLVED or "." in name:
            continue
        if name not in known:
            hint = _hint(name, known)
            yield finding(
                ctx,
                "E-DATASET-NAME",
                _where(key, "dataset_name", written),
                f"{name!r} is not a {kind} dataset {label} knows: ValueError at {raised} when "
                "data is set up" + (f"; {hint}" if hint else ""),
                f"use one of: {', '.join(sorted(known, key=str.lower))}",
            )
            continue
        if algo == "grpo":
            yield from _processor(ctx, key, entry, written, label)


def _processor(
    ctx: PreflightContext, key: str, entry: dict, written: dict, label: str
) -> Iterator[Finding]:
    version = ctx.nemo_rl_version
    if not in_range(version, "0.5.0+") or "processor" not in entry:
        return  # 0.4.0 picks processors in the example script; absent means "default"
    if not in_range(version, "0.6.0+") and entry.get("dataset_name") in UNPROCESSED_050:
        return
    name = entry["processor"]
    known = cite(version, PROCESSORS)
    if isinstance(name, str) and (name in known or name == UNRESOLVED):
        return
    hint = _hint(name, known) if isinstance(name, str) else ""
    yield finding(
        ctx,
        "E-DATA-PROCESSOR",
        _where(key, "processor", written),
        f"{name!r} is not in {label}'s PROCESSOR_REGISTRY: assertion at "
        f"{cite(version, PROCESSOR_ASSERT)} when data is set up" + (f"; {hint}" if hint else ""),
        f"use one of: {', '.join(known)}",
    )


@rule("bound_input_read", versions="0.6.0+")
def bound_input_read(ctx: PreflightContext) -> Iterator[Finding]:
    """E-INPUT-IGNORED: a bound input's dataset entry names a class that never reads data_path."""
    algo = algorithm(ctx)
    if algo not in READS_DATA_PATH:
        return
    registry = cite(
        ctx.nemo_rl_version, PREFERENCE_DATASETS if algo == "dpo" else RESPONSE_DATASETS
    )
    bound = {m.group(1): a for a in ctx.inputs if (m := BOUND.match(a.config_key))}
    for key, entry, written in dataset_entries(ctx):
        art = bound.get(key)
        name = entry.get("dataset_name")
        if art is None or not isinstance(name, str) or name == UNRESOLVED:
            continue
        if name in READS_DATA_PATH[algo] or name not in registry:
            continue  # a reader, or a dotted user class / unknown name (dataset_names says)
        at = _where(key, "dataset_name", written)
        readers = " or ".join(READS_DATA_PATH[algo][:2])
        yield finding(
            ctx,
            "E-INPUT-IGNORED",
            at,
            f"is {name!r}, a built-in dataset NeMo-RL loads by itself: it ignores {key}.data_path,"
            f" where input {art.name!r} is bound ({art.written or art.value}), so the run would "
            f"train on {name}, not on it",
            f"add {key}.dataset_name={READS_DATA_PATH[algo][0]} (the class that reads a local "
            f"file of this input's rows; {readers} per the rows' shape), or drop the input to "
            f"train on {name}",
        )


def _prompt_files(ctx: PreflightContext) -> Iterator[tuple[str, str]]:
    """(config key that set it, path as written) for each prompt file NeMo-RL will open."""
    seen: set[str] = set()
    if in_range(ctx.nemo_rl_version, "0.6.0+"):
        for key, entry, written in dataset_entries(ctx):
            for name in PROMPT_KEYS:
                value = entry.get(name)
                where = _where(key, name, written)
                if isinstance(value, str) and where not in seen:
                    seen.add(where)  # a default's file is one cause, however many entries
                    yield where, value
    elif algorithm(ctx) == "grpo":
        for name in PROMPT_KEYS:
            value = ctx.get(f"data.{name}")
            if isinstance(value, str):
                yield f"data.{name}", value


@rule("prompt_files")
def prompt_files(ctx: PreflightContext) -> Iterator[Finding]:
    """E-PROMPT-FILE: a prompt or system prompt file that does not exist where NeMo-RL runs."""
    if ctx.remote is not None or algorithm(ctx) not in ("dpo", "grpo"):
        return
    for key, written in _prompt_files(ctx):
        if not written or written == UNRESOLVED:
            continue
        path = written
        if not os.path.isabs(written):
            if ctx.nemo_rl_dir is None:
                continue  # where NeMo-RL runs is not known here
            path = os.path.join(ctx.nemo_rl_dir, written)
        if os.path.isfile(path):
            continue
        relative = "" if path == written else " (relative paths are opened from the checkout)"
        beside = (
            os.path.join(os.path.dirname(ctx.config_file), written)
            if ctx.config_file is not None and not os.path.isabs(written)
            else None
        )
        fix = (
            f"write the absolute path: {key}: {beside}"
            if beside and os.path.isfile(beside)
            else f"point {key} at an existing text file, or null for none"
        )
        yield finding(
            ctx,
            "E-PROMPT-FILE",
            key,
            f"{path} is not a file{relative}: NeMo-RL raises FileNotFoundError at "
            f"{cite(ctx.nemo_rl_version, PROMPT_RAISED)} when it sets up data",
            fix,
        )


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
        if name not in VERIFIERS or not isinstance(section, dict):
            continue
        if "math_verify_impl" not in section or section["math_verify_impl"] == UNRESOLVED:
            continue
        value, accepted = section["math_verify_impl"], VERIFIERS[name]
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
