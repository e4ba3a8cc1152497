"""RL data preparation: run with `python steps/data_prep/rl_prep/step.py -c tiny` or `python -m steps run data_prep/rl_prep -c tiny`."""  # noqa: E501

import sys
from pathlib import Path

from steps.cli.run_cmd import main_for_step as main

if __name__ == "__main__":
    sys.exit(main(Path(__file__).resolve().parent, sys.argv[1:]))
