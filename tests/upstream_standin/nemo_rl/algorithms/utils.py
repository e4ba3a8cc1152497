"""Stand-in of upstream's `get_tokenizer` (see `nemo_rl/__init__.py`): a folder with a
`tokenizer_config.json` loads (OSError otherwise, as transformers raises); rendering a chat
without a chat template raises ValueError, as transformers does."""

import json
import os


class StandInTokenizer:
    def __init__(self, chat_template):
        self.chat_template = chat_template

    def apply_chat_template(self, messages, tokenize=True, add_generation_prompt=False):
        if not self.chat_template:
            raise ValueError(
                "Cannot use chat template functions because tokenizer.chat_template is not set"
            )
        return "".join(m["content"] for m in messages)


def get_tokenizer(tokenizer_config, get_processor=False):
    folder = os.path.expanduser(tokenizer_config["name"])
    path = os.path.join(folder, "tokenizer_config.json")
    if not os.path.isfile(path):
        raise OSError(f"Can't load tokenizer for '{tokenizer_config['name']}'")
    with open(path, encoding="utf-8") as fh:
        saved = json.load(fh)
    return StandInTokenizer(tokenizer_config.get("chat_template") or saved.get("chat_template"))
