"""The host's CPU time to issue one forward pass of each step, with the CUDA driver stubbed.

Issue 19, item 6: through numba-cuda's real dispatch path on the fake GPU (fastlstm_lib.fakegpu),
the CPU time that Python and numba-cuda spend issuing one article-sized pass of each step, the
fake driver's own time taken out, per pass and per launch. MEASURED ON THIS HOST with the driver
stubbed: a real driver adds its own few microseconds per launch, and the GPU's work overlaps
with the issuing. The median per launch over the steps is the "measured" row of
data/host_launch_costs.csv, which the lower bounds can use beside the published estimates
(``fl.lower_bound(profile, gpu, host="measured")``). Run from the repository root, Linux, with
nothing else running:

    python benchmarks/host_time_stubbed.py [--gpu H100] [--out data/results/host-stubbed-DATE.json]
"""

import argparse
import json
import statistics
import sys

from fastlstm_lib.fakegpu.__main__ import host_times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", default="H100", help="the GPU the fake presents (its plans decide the launches)")
    parser.add_argument("--out", metavar="FILE")
    args = parser.parse_args()
    report = host_times(args.gpu)
    rows = {name: row for name, row in report["steps"].items() if "skipped" not in row}
    print(report["what"])
    print(f"{'step':<18}{'launches':>9}{'ms per pass':>13}{'us per launch':>15}")
    for name, row in rows.items():
        print(f"{name:<18}{row['launches']:>9}{row['per_pass_ms']:>13.1f}{row['per_launch_us']:>15.1f}")
    median = statistics.median(row["per_launch_us"] for row in rows.values())
    report["median_us_per_launch"] = median
    print(f"median over the steps: {median:.0f} us per launch (the 'measured' row of data/host_launch_costs.csv)")
    if args.out:
        with open(args.out, "w") as out:
            json.dump(report, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
