"""``python -m fastlstm_lib.topics.cnn --out FILE``: time the article's two CNNs in both layouts (see ``measure``)."""

import sys

from .measure import main

if __name__ == "__main__":
    sys.exit(main())
