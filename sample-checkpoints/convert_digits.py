#!/usr/bin/env python3
"""Convert the UCI digits CSV (the copy Debian ships in python3-sklearn) to
digits.safetensors: `pixels` F32 [1797, 64] (grey levels 0..16 divided by 16)
and `labels` I64 [1797], in file order. Deterministic: same input, same bytes.

usage: convert_digits.py digits.csv.gz digits.safetensors"""
import gzip
import sys

import numpy as np

import stlib


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with gzip.open(src, "rt") as f:
        rows = np.loadtxt(f, delimiter=",", dtype=np.float64)
    assert rows.shape == (1797, 65), rows.shape
    pixels = (rows[:, :64] / 16.0).astype(np.float32)
    labels = rows[:, 64].astype(np.int64)
    stlib.st_write(dst, stlib.arrays([("pixels", pixels), ("labels", labels)]), {
        "source": "UCI ML hand-written digits (optdigits test part), 8x8, via scikit-learn",
        "license": "CC BY 4.0",
        "converted_from": "digits.csv.gz (Debian python3-sklearn 1.2.1+dfsg-1)",
    })


if __name__ == "__main__":
    main()
