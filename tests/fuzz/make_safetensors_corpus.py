#!/usr/bin/env python3
# Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpus of the safetensors_file fuzz target (tests/fuzz/corpus/safetensors_file/):
small .safetensors files, well-formed and broken in the ways the reader must refuse.
Run from the repository root: python3 tests/fuzz/make_safetensors_corpus.py"""
import json
import os
import struct

OUT = "tests/fuzz/corpus/safetensors_file"


def file_bytes(header, data=b"", header_len=None):
    text = header if isinstance(header, (bytes, str)) else json.dumps(header)
    raw = text.encode() if isinstance(text, str) else text
    length = len(raw) if header_len is None else header_len
    return struct.pack("<Q", length) + raw + data


SEEDS = {
    "one_f32": file_bytes({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, bytes(8)),
    "several_with_metadata": file_bytes(
        {
            "__metadata__": {"format": "pt"},
            "ids": {"dtype": "I64", "shape": [1, 2], "data_offsets": [0, 16]},
            "half": {"dtype": "BF16", "shape": [3], "data_offsets": [16, 22]},
            "empty": {"dtype": "U8", "shape": [0], "data_offsets": [22, 22]},
        },
        bytes(range(22)),
    ),
    "overlap": file_bytes(
        {
            "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
            "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]},
        },
        bytes(12),
    ),
    "unknown_dtype": file_bytes({"w": {"dtype": "F12", "shape": [1], "data_offsets": [0, 2]}}, bytes(2)),
    "header_past_end": file_bytes({"w": {}}, b"", header_len=1 << 40),
    "size_mismatch": file_bytes({"w": {"dtype": "F16", "shape": [3], "data_offsets": [0, 4]}}, bytes(4)),
    "data_past_end": file_bytes({"w": {"dtype": "U8", "shape": [9], "data_offsets": [0, 9]}}, bytes(4)),
    "not_an_object": file_bytes("[1, 2, 3]"),
    "empty_object": file_bytes("{}"),
    "huge_shape": file_bytes(
        {"w": {"dtype": "F64", "shape": [1 << 47, 1 << 47], "data_offsets": [0, 8]}}, bytes(8)
    ),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, content in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(content)


if __name__ == "__main__":
    main()
