"""The names a NeMo-RL config picks by string, per release: dataset classes and data processors.

Read from each release's source (`DATASET_REGISTRY` in `nemo_rl/data/datasets/
{preference,response}_datasets/__init__.py` from 0.6.0, the `dataset_name == ...` chains of
`load_*_dataset` before; `PROCESSOR_REGISTRY` in `nemo_rl/data/processors.py`, 0.5.0+). Keys
are the oldest release each list holds from ("pin": the pin and newer). A name outside the list
is a ValueError (datasets) or an AssertionError (processors) at data setup, on the driver; a
dotted dataset name (a user class, 0.7.0+) is not in these lists by design.
"""

from __future__ import annotations

_PREFERENCE = ("BinaryPreferenceDataset", "HelpSteer3", "PreferenceDataset", "Tulu3Preference")
PREFERENCE_DATASETS: dict[str, tuple[str, ...]] = {"0.4.0": _PREFERENCE}
_RESPONSE_040 = (
    "DAPOMath17K",
    "DeepScaler",
    "OpenMathInstruct-2",
    "ResponseDataset",
    "clevr-cogent",
    "clevr_cogent",
    "geometry3k",
    "open_assistant",
    "openai_format",
    "openmathinstruct2",
    "refcoco",
    "squad",
)
_RESPONSE_060 = (
    "AIME2024",
    "DAPOMath17K",
    "DAPOMathAIME2024",
    "DeepScaler",
    "HelpSteer3",
    "NemoGymDataset",
    "Nemotron-Cascade-2-SFT-Math",
    "OpenMathInstruct-2",
    "ResponseDataset",
    "clevr-cogent",
    "daily-omni",
    "general-conversation-jsonl",
    "geometry3k",
    "gsm8k",
    "open_assistant",
    "openai_format",
    "refcoco",
    "squad",
    "tulu3_sft_mixture",
)
_RESPONSE_070 = (
    *_RESPONSE_060,
    "AIME2025",
    "AIME2026",
    "GSM8K",
    "arrow_text",
    "audiomcq",
    "avqa",
    "mmpr-tiny",
)
RESPONSE_DATASETS: dict[str, tuple[str, ...]] = {
    "0.4.0": _RESPONSE_040,
    "0.5.0": (*_RESPONSE_040, "HelpSteer3", "tulu3_sft_mixture"),
    "0.6.0": _RESPONSE_060,
    "0.7.0": _RESPONSE_070,
    "pin": (*_RESPONSE_070, "NuminaMath-1.5", "OpenR1-Math-220k", "intent-bench", "intent-train"),
}
# 0.5.0 skips set_processor for these (its SFT datasets, response_datasets/__init__.py:138-146)
UNPROCESSED_050 = (
    "open_assistant",
    "squad",
    "openmathinstruct2",
    "clevr_cogent",
    "openai_format",
    "tulu3_sft_mixture",
)
_PROCESSORS_050 = (
    "default",
    "helpsteer3_data_processor",
    "math_data_processor",
    "math_hf_data_processor",
    "multichoice_qa_processor",
)
_PROCESSORS_060 = (
    *_PROCESSORS_050,
    "nemo_gym_data_processor",
    "sft_processor",
    "vlm_hf_data_processor",
)
PROCESSORS: dict[str, tuple[str, ...]] = {
    "0.5.0": _PROCESSORS_050,
    "0.6.0": (*_PROCESSORS_060, "math_gdpo_data_processor"),
    "0.7.0": (*_PROCESSORS_060, "kd_data_processor"),
}
# Where each refusal is raised, per release.
PREFERENCE_RAISE = {
    "0.4.0": "nemo_rl/data/datasets/preference_datasets/__init__.py:72",
    "0.5.0": "nemo_rl/data/datasets/preference_datasets/__init__.py:73",
    "0.6.0": "nemo_rl/data/datasets/preference_datasets/__init__.py:45",
    "0.7.0": "nemo_rl/data/datasets/preference_datasets/__init__.py:56",
    "pin": "nemo_rl/data/datasets/preference_datasets/__init__.py:59",
}
RESPONSE_RAISE = {
    "0.4.0": "nemo_rl/data/datasets/response_datasets/__init__.py:117",
    "0.5.0": "nemo_rl/data/datasets/response_datasets/__init__.py:129",
    "0.6.0": "nemo_rl/data/datasets/response_datasets/__init__.py:82",
    "0.7.0": "nemo_rl/data/datasets/response_datasets/__init__.py:106",
    "pin": "nemo_rl/data/datasets/response_datasets/__init__.py:119",
}
PROCESSOR_ASSERT = {
    "0.5.0": "nemo_rl/data/datasets/raw_dataset.py:34",
    "0.6.0": "nemo_rl/data/datasets/raw_dataset.py:50",
    "0.7.0": "nemo_rl/data/datasets/raw_dataset.py:57",
}
