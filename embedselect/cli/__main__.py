"""``python -m embedselect.cli``."""

import sys

from embedselect.cli import main

sys.exit(main())
