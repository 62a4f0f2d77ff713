"""The host's CPU time to issue one forward pass of each step, with the CUDA driver stubbed.

Issue 19, item 6: through numba-cuda's real dispatch path on the fake GPU (tests/fakegpu, the test mode),
the CPU time that Python and numba-cuda spend issuing one article-sized pass of each step, the
fake driver's own time taken out, per pass and per launch. Issue 23, item 1: three ways, in the
same run: as the runner issues a pass (its first pass replayed, fastlstm_lib/replay.py), running
the step's own code every pass, and numba-cuda's own floor (the same kernels launched bare with
the same arguments); and the whole pass as one CUDA Graph launch (graph=True, item 2). MEASURED ON THIS HOST with the driver
stubbed: a real driver adds its own few microseconds per launch, and the GPU's work overlaps
with the issuing. The median per launch over the steps, replayed, is the "measured" row of
data/host_launch_costs.csv, which the lower bounds can use beside the published estimates
(``fl.lower_bound(profile, gpu, host="measured")``). Run from the repository root, Linux, with
nothing else running:

    python benchmarks/host_time_stubbed.py [--gpu H100] [--out data/host_stubbed/DATE-H100.json]
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the fake GPU is test code: tests/fakegpu
from fakegpu.__main__ import host_table, host_times  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", default="H100", help="the GPU the fake presents (its plans decide the launches)")
    parser.add_argument("--out", metavar="FILE")
    args = parser.parse_args()
    report = host_times(args.gpu)
    rows = {name: row for name, row in report["steps"].items() if "skipped" not in row}
    print(report["what"])
    print(host_table(report["steps"]))
    for key, what in (("per_launch_us", "as the runner issues a pass (replayed; the 'measured' row of "
                                        "data/host_launch_costs.csv)"),
                      ("own_code_per_launch_us", "running the step's own code every pass"),
                      ("floor_per_launch_us", "numba-cuda's floor: the same launches and events, bare")):
        report[f"median_{key}"] = statistics.median(row[key] for row in rows.values())
        print(f"median over the steps: {report[f'median_{key}']:.0f} us per launch {what}")
    report["median_vs_floor"] = statistics.median(row["vs_floor"] for row in rows.values())
    report["max_vs_floor"] = max(row["vs_floor"] for row in rows.values())
    print(f"replayed / floor: median {report['median_vs_floor']:.2f}, worst {report['max_vs_floor']:.2f} "
          "(issue 23's goal: at most 1.3)")
    report["max_graph_per_pass_ms"] = max(row["graph_per_pass_ms"] for row in rows.values())
    print(f"a whole pass as one CUDA Graph: at most {report['max_graph_per_pass_ms']:.3f} ms of host time per pass "
          "(issue 23's goal: at most 0.1 ms)")
    if args.out:
        with open(args.out, "w") as out:
            json.dump(report, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
