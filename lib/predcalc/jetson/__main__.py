"""``python -m predcalc.jetson``: see :mod:`predcalc.jetson.command`."""

import sys

from predcalc.jetson.command import main

sys.exit(main())
