"""``PYTHONPATH=tools python -m compile_matrix [--out PATH] [--check]`` (see the package's docstring)."""

import sys

from . import main

sys.exit(main())
