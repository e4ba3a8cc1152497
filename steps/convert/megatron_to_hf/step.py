"""Megatron to Hugging Face checkpoint conversion, run with
`python steps/convert/megatron_to_hf/step.py -c tiny [overrides]`
or `python -m steps run convert/megatron_to_hf`."""

import sys
from pathlib import Path

from steps.cli.run_cmd import main_for_step as main

if __name__ == "__main__":
    sys.exit(main(Path(__file__).resolve().parent, sys.argv[1:]))
