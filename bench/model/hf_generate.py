#!/usr/bin/env python3
# Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
"""HF transformers generate() on the tiny LLM's weights, for bench/model (model_bench).

Runs the same prompts as model_bench (byte tokens, left-padded into one batch), greedy, exactly
--tokens new tokens per request, and prints one JSON object: {"tokens_per_s": ...} (the best of
--rounds). Needs torch and transformers; a benchmark tool only, never a runtime dependency.
"""
import argparse
import json
import sys
import time


def prompts(count):
    # Mirrors Prompts() in model_bench.cc.
    out = []
    for i in range(count):
        p = f"request {i}:"
        while len(p) < 8 + (i * 5) % 16:
            p += chr(ord("a") + (i + len(p)) % 26)
        out.append(p)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--weights", required=True, help="directory with config.json and safetensors")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(args.weights, dtype=torch.float32)
    model.eval()
    pad = model.config.pad_token_id if model.config.pad_token_id is not None else 0
    batch = [list(p.encode()) for p in prompts(args.concurrency)]
    width = max(len(p) for p in batch)
    input_ids = torch.tensor([[pad] * (width - len(p)) + p for p in batch])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in batch])
    best = float("inf")
    with torch.inference_mode():
        for _ in range(args.rounds):
            start = time.perf_counter()
            out = model.generate(input_ids=input_ids, attention_mask=mask, do_sample=False,
                                 max_new_tokens=args.tokens, min_new_tokens=args.tokens,
                                 pad_token_id=pad)
            best = min(best, time.perf_counter() - start)
            assert out.shape[1] - width == args.tokens, out.shape
    json.dump({"tokens_per_s": args.concurrency * args.tokens / best}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
