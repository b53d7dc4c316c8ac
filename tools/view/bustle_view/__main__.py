"""``python3 -m bustle_view``: runs the viewer's command line (cli.main)."""

import sys

from .cli import main

sys.exit(main())
