"""How long the timeline model takes: ``fl.estimate`` of every article step at the article's size
on four GPUs (M40, T4, A100, H100), each from a pass recorded for that GPU, C++ host.

Issue 22's goal: under 30 s together on a 2-core CPU (recording the passes, ``fl.profile``, is
timed apart: the model's cost is the estimates). Run from the repository root with nothing else
running:

    python benchmarks/timeline_speed.py
"""

import time

import fastlstm_lib as fl
from fastlstm_lib.course.article import article_numbers

GPUS = ("M40", "T4", "A100", "H100")


def main() -> None:
    cfg = fl.LSTMConfig.article()
    steps = [row["step"] for row in article_numbers()]
    began = time.perf_counter()
    profiles = {(step, gpu): fl.profile(step, cfg, chip=gpu) for step in steps for gpu in GPUS}
    recorded = time.perf_counter()
    for (step, gpu), p in profiles.items():
        fl.estimate(p, gpu, host="cpp")
    done = time.perf_counter()
    print(f"recording {len(profiles)} passes: {recorded - began:.1f} s; "
          f"estimating them: {done - recorded:.1f} s (goal: under 30 s)")


if __name__ == "__main__":
    main()
