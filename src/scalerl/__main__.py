"""``python -m scalerl``: the ``scalerl`` command, for an environment whose scripts are not on PATH."""

import sys

from scalerl.cli import main

sys.exit(main())
