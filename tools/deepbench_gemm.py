"""Extract the FP32 cuBLAS SGEMM measurements of Baidu's DeepBench into data/cublas_sgemm_deepbench.csv.

DeepBench (github.com/baidu-research/DeepBench, Apache-2.0) publishes its results as Excel
workbooks under results/train/. This reads the FP32 sheet of each GPU's workbook with the standard
library only (an .xlsx is a zip of XML) and writes one row per dense GEMM: M, N, K, the
transposes, the measured time and TFLOP/s, as published. Run once by a developer with a local
clone of DeepBench; the tests and the library read only the committed CSV:

    python tools/deepbench_gemm.py /path/to/DeepBench > data/cublas_sgemm_deepbench.csv
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
# our GPU name -> (workbook, FP32 sheet, CUDA and cuDNN the workbook's Specs sheet names)
WORKBOOKS = {
    "M40": ("results/train/DeepBench_NV_M40.xlsx", "Results - FP32", "CUDA 7.5.18 + cuDNN 5"),
    "T4": ("results/train/DeepBench_NV_T4.xlsx", "Results FP32", "CUDA 10.1.243 + cuDNN 7.6.2"),
    "V100": ("results/train/DeepBench_NV_V100.xlsx", "Results FP32", "CUDA 10.1.243 + cuDNN 7.6.2"),
}


def sheet_rows(path: Path, sheet: str) -> list[list[str]]:
    """The cells of one sheet of an .xlsx, row by row, shared strings resolved."""
    book = zipfile.ZipFile(path)
    strings = []
    if "xl/sharedStrings.xml" in book.namelist():
        for item in ET.fromstring(book.read("xl/sharedStrings.xml")).iter(f"{NS}si"):
            strings.append("".join(text.text or "" for text in item.iter(f"{NS}t")))
    names = [entry.get("name") for entry in ET.fromstring(book.read("xl/workbook.xml")).iter(f"{NS}sheet")]
    number = names.index(sheet) + 1
    rows = []
    for row in ET.fromstring(book.read(f"xl/worksheets/sheet{number}.xml")).iter(f"{NS}row"):
        cells = []
        for cell in row.iter(f"{NS}c"):
            value = cell.find(f"{NS}v")
            text = value.text if value is not None else ""
            cells.append(strings[int(text)] if cell.get("t") == "s" and text else text)
        rows.append(cells)
    return rows


def _number(text: str):
    try:
        return float(text)
    except ValueError:
        return None


def gemm_rows(rows: list[list[str]]):
    """(m, n, k, trans_a, trans_b, ms, tflops) of every dense GEMM row: an optional application
    name, then M, N, K, the two transposes, then (after an optional note) time and TFLOP/s."""
    for cells in rows:
        if cells and not cells[0].isdigit():
            cells = cells[1:]
        if len(cells) < 7 or not all(c.isdigit() for c in cells[:3]) or cells[3] not in "NT" or cells[4] not in "NT":
            continue
        if not cells[3] or not cells[4]:
            continue
        numbers = [x for x in (_number(c) for c in cells[5:]) if x is not None]
        if len(numbers) >= 2:
            yield int(cells[0]), int(cells[1]), int(cells[2]), cells[3], cells[4], numbers[0], numbers[1]


def main(deepbench: str) -> None:
    root = Path(deepbench)
    print("# cuBLAS SGEMM (FP32) times measured by Baidu's DeepBench, copied from its published workbooks")
    print("# (github.com/baidu-research/DeepBench, results/train/DeepBench_NV_<GPU>.xlsx, FP32 sheet) by")
    print("# tools/deepbench_gemm.py. DeepBench's convention: column-major C (M x N) = op(A) (M x K) op(B) (K x N);")
    print("# N is the minibatch in its RNN shapes. Used by fastlstm_lib/timeline (gemm='cublas'), never fitted.")
    print("gpu,m,n,k,trans_a,trans_b,ms,tflops,software,source")
    for gpu, (workbook, sheet, software) in WORKBOOKS.items():
        seen = set()
        for m, n, k, ta, tb, ms, tflops in gemm_rows(sheet_rows(root / workbook, sheet)):
            if (m, n, k, ta, tb) in seen:
                continue
            seen.add((m, n, k, ta, tb))
            print(f"{gpu},{m},{n},{k},{ta},{tb},{ms:g},{tflops:.4g},{software},DeepBench {workbook}")


if __name__ == "__main__":
    main(sys.argv[1])
