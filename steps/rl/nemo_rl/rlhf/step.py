"""GRPO with a generative reward model (RLHF) through NeMo-Gym, run with
`python steps/rl/nemo_rl/rlhf/step.py -c tiny [overrides]`
or `python -m steps run rl/nemo_rl/rlhf`."""

import sys
from pathlib import Path

from steps.cli.run_cmd import main_for_step as main

if __name__ == "__main__":
    sys.exit(main(Path(__file__).resolve().parent, sys.argv[1:]))
