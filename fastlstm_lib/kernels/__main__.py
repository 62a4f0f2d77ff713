"""``python -m fastlstm_lib.kernels [FAMILY|KERNEL] [N] [--list] [--out FILE]``: the kernel runner
(``runner.py``, which says what it does)."""

import sys

from .runner import main

if __name__ == "__main__":
    sys.exit(main())
