"""``python -m fastlstm_lib.topics.feeding --out FILE``: ``devices.measure_devices()`` as JSON, for notebook 31."""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fastlstm_lib.topics.feeding", description=__doc__)
    parser.add_argument("--out", metavar="FILE", required=True, help="where to write the results (JSON)")
    args = parser.parse_args(argv)

    from fastlstm_lib.topics.feeding.devices import measure_devices
    from fastlstm_lib.results import save_results

    results = measure_devices(progress=True)
    for result in results:
        rates = "  ".join(f"B={r['batch_size']}: {r['samples_per_s']:,.0f}/s" for r in result["throughput"])
        print(f"{result['device_name']}: {rates}")
    print(f"wrote {save_results(results, args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
