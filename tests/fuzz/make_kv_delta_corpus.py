#!/usr/bin/env python3
# Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpus of the kv_resident_delta fuzz target (tests/fuzz/kv_delta_target.cc).

An input is: a move count, then (op, arg) pairs driving the leader (op % 8 picks the move, op's
high bit syncs the follower after it; arg % 4 is the request, (arg >> 2) % 2 the label), then
the bytes applied to the follower as a delta (records: kind u8, move number u64, request u64,
label u32, payload; see plugins/kv_paged/kv_delta.cc).
Usage: make_kv_delta_corpus.py [DIR] (default: corpus/kv_resident_delta beside this script)."""
import os
import struct
import sys

SYNC = 0x80
ADD, REMOVE, APPEND, TRUNCATE, SET_LEN, CACHE_INSERT, OFFLOAD, RELOAD = range(8)


def moves(pairs):
    out = bytes([len(pairs)])
    for op, arg in pairs:
        out += bytes([op, arg])
    return out


def record(kind, number, request, label, payload=b""):
    return struct.pack("<BQQI", kind, number, request, label) + payload


LIFECYCLE = [
    (ADD, 0), (APPEND, 0), (APPEND, 0), (APPEND, 0), (SET_LEN, 5 << 3),
    (CACHE_INSERT, 0), (OFFLOAD | SYNC, 0), (RELOAD, 0), (ADD, 1), (APPEND | SYNC, 1),
    (TRUNCATE, 32), (REMOVE | SYNC, 1),
]

SEEDS = {
    "lifecycle": moves(LIFECYCLE),
    "lifecycle_then_noise": moves(LIFECYCLE) + bytes(range(7, 200, 3)),
    "append_outside_pool": moves([]) + record(3, 0, 0, 0, struct.pack("<i", 100)),
    "add_then_append_twice": moves([]) + record(1, 0, 0, 0) + record(3, 1, 0, 0, struct.pack("<i", 0))
    + record(3, 2, 0, 0, struct.pack("<i", 0)),
    "huge_reload_count": moves([(ADD, 0)]) + record(9, 1, 0, 0, struct.pack("<I", 0xFFFFFFFF)),
    "wrong_move_number": moves([(ADD | SYNC, 0)]) + record(1, 7, 3, 0),
    "bad_digest": moves([(ADD, 0)]) + record(10, 1, 0, 0, b"\x01" * 32),
    "unknown_kind": moves([]) + record(42, 0, 0, 0),
    "truncated_header": moves([]) + b"\x01\x00\x00",
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus", "kv_resident_delta")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
