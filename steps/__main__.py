"""`python -m steps ...`"""

import sys

from steps.cli import main

sys.exit(main())
