"""`python -m steps ...`"""

import sys

from steps.cli import main

code = main()
if code == 130:
    # A Ctrl-C that passed through code CPython compiled from a string (dataclasses and
    # namedtuple build their methods so, e.g. in an import under way) leaves CPython's
    # "unhandled KeyboardInterrupt" mark set though main() handled it, and at exit CPython
    # then kills itself with SIGINT instead of exiting 130. Running a string clears the mark
    # (pythonrun.c, run_eval_code_obj).
    exec("pass")
sys.exit(code)
