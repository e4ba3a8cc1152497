"""Stand-in of upstream's `nemo_rl/data/utils.py` setup functions (v0.7.0), raising what upstream
raises: ValueError for an unknown dataset_name (preference_datasets/__init__.py:56), AssertionError
for an unregistered processor (raw_dataset.py:57), FileNotFoundError for a missing prompt file
(interfaces.py:74), KeyError for a row without a column the processor reads (math_data_processor
reads `problem`, which ResponseDataset has renamed), and what `datasets` raises offline for a
built-in class that downloads its data."""

import importlib
import json
import os

PREFERENCE = ("BinaryPreferenceDataset", "PreferenceDataset", "HelpSteer3", "Tulu3Preference")
RESPONSE = ("ResponseDataset", "OpenMathInstruct-2", "DAPOMath17K")
HUB = {"HelpSteer3": "nvidia/HelpSteer3", "DAPOMath17K": "BytedTsinghua-SIA/DAPO-Math-17k"}
PROCESSORS = ("default", "math_hf_data_processor", "math_data_processor")


READS = {"math_hf_data_processor": "messages", "math_data_processor": "problem"}


class Loaded:
    def __init__(self, rows, columns, tokenizer):
        self.rows, self.columns, self.tokenizer = rows, columns, tokenizer

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        row = self.rows[i]
        return {k: self.tokenizer.apply_chat_template([{"role": "user", "content": row[k]}])
                for k in self.columns}  # fmt: skip


def _load(cfg, names, kind, columns, tokenizer):
    dataset_name = cfg["dataset_name"]
    if dataset_name not in names and "." in dataset_name:  # resolve_external_dataset_class
        module_path, _, class_name = dataset_name.rpartition(".")
        try:
            module = importlib.import_module(module_path)
        except ImportError as e:
            raise ValueError(
                f"Could not import module {module_path!r} for dataset_name={dataset_name!r}. "
                "Ensure the module is installed and importable from PYTHONPATH."
            ) from e
        data = getattr(module, class_name)(**cfg)  # the user's class reads its own columns
        return Loaded(data.rows, data.columns, tokenizer)
    if dataset_name not in names:
        raise ValueError(
            f"Unsupported {dataset_name=}. Please set dataset_name to one of: (1) a built-in "
            f"dataset name, (2) '{kind}' to load from a local JSONL file or HuggingFace, or (3) an "
            "importable dotted path to a dataset class"
        )
    if dataset_name in HUB:  # a built-in class that fetches its own data, offline here
        raise ConnectionError(
            f"Couldn't reach '{HUB[dataset_name]}' on the Hub (LocalEntryNotFoundError)"
        )
    processor = cfg.get("processor", "default")
    assert processor in PROCESSORS, (
        f"Processor {processor} not found in PROCESSOR_REGISTRY. Please call "
        "nemo_rl.data.processors.register_processor() to register the processor."
    )
    for key in ("system_prompt_file", "prompt_file"):
        if cfg.get(key) is not None:
            with open(cfg[key], encoding="utf-8") as fh:
                fh.read()
    with open(os.path.expanduser(cfg["data_path"]), encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    if kind == "ResponseDataset":  # formatted as upstream's ResponseDataset does: input -> messages
        rows = [{"messages": row[cfg.get("input_key", "input")]} for row in rows]
        columns = (READS.get(processor, "messages"),)
    return Loaded(rows, columns, tokenizer)


def _merged(cfg, default):
    return {**(default or {}), **cfg}


def setup_preference_data(tokenizer, data_config):
    columns = ("prompt", "chosen", "rejected")
    default = data_config.get("default")
    train = _load(_merged(data_config["train"], default), PREFERENCE, "BinaryPreferenceDataset",
                  columns, tokenizer)  # fmt: skip
    val = {}
    if data_config.get("validation"):
        val["default"] = _load(_merged(data_config["validation"], default), PREFERENCE,
                               "BinaryPreferenceDataset", columns, tokenizer)  # fmt: skip
    return train, val


def setup_response_data(tokenizer, data_config, env_configs=None):
    default = data_config.get("default")
    train = _load(_merged(data_config["train"], default), RESPONSE, "ResponseDataset", (),
                  tokenizer)  # fmt: skip
    val = None
    if data_config.get("validation"):
        val = _load(_merged(data_config["validation"], default), RESPONSE, "ResponseDataset", (),
                    tokenizer)  # fmt: skip
    return train, val
