"""Stand-in of upstream's `nemo_rl/utils/checkpoint.py` CheckpointManager (v0.7.0): the latest
step_N, and its training_info.json opened as upstream opens it (:389)."""

import glob
import json
import os
import re


class CheckpointManager:
    def __init__(self, config):
        self.checkpoint_dir = config["checkpoint_dir"]

    def get_latest_checkpoint_path(self):
        found = [p for p in glob.glob(os.path.join(self.checkpoint_dir, "step_*"))
                 if re.fullmatch(r"step_\d+", os.path.basename(p))]  # fmt: skip
        found.sort(key=lambda p: int(os.path.basename(p)[5:]))
        return found[-1] if found else None

    def load_training_info(self, checkpoint_path=None):
        if checkpoint_path is None:
            return None
        with open(os.path.join(checkpoint_path, "training_info.json")) as fh:
            return json.load(fh)
