"""``python -m fastlstm_lib.setup.doctor [--full | --quick]``: the same as ``python -m fastlstm_lib doctor``."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
