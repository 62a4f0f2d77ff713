"""How long fl.profile and fl.lower_bound take for the whole ladder at the article's size.

Target (issue 13): every step profiled, and bounded on 4 GPUs with both hosts, in under 30 s
on a 2-core CPU, simulator or not: the notebooks call these on every run. Run from the
repository root, with nothing else running:

    python benchmarks/profile_speed.py
"""

import sys
import time

import fastlstm_lib as fl
from fastlstm_lib.course.profile import ladder

TARGET_S = 30.0
GPUS = ("M40", "T4", "A100", "H100")


def main() -> int:
    started = time.perf_counter()
    rows = ladder.ladder_bounds(gpus=GPUS, hosts=("cpp", "python"))
    seconds = time.perf_counter() - started
    launches = sum(row["launches"] for row in rows)
    print(f"{len(rows)} steps ({launches:,} launches) profiled at {fl.LSTMConfig.article()} and bounded on "
          f"{len(GPUS)} GPUs x 2 hosts in {seconds:.1f} s on {fl.device_info()['name']} (target < {TARGET_S:.0f} s)")
    return 0 if seconds < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
