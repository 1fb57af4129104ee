#!/usr/bin/env python3
# Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
"""Builds the tiny_lm reference fixtures with HF transformers (tooling only; CI never runs it).

For each model below: a tiny random LlamaForCausalLM or Qwen3ForCausalLM with fixed seeds, saved
with save_pretrained (config.json + model.safetensors) into fixtures/<name>/, and expected.json
with, for each prompt, the greedy continuation and the logits at the prompt's last position.

    python -m venv /tmp/venv && /tmp/venv/bin/pip install torch transformers safetensors
    /tmp/venv/bin/python tests/reference/make_fixtures.py
"""
import json
import os

import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
NEW_TOKENS = 12
# Weights are redrawn with this std (HF's 0.02 makes logits nearly flat, so greedy ties would
# hinge on rounding); norms are drawn around 1.
WEIGHT_STD = 0.25

MODELS = {
    # name: (class, config kwargs). GQA ratios 1, 2 and 4; tied and untied; three vocab sizes.
    "llama_mha_tied": (
        "llama",
        dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=4, vocab_size=96, tie_word_embeddings=True, rope_theta=10000.0,
             rms_norm_eps=1e-6, max_position_embeddings=128),
    ),
    "llama_gqa2_untied": (
        "llama",
        dict(hidden_size=48, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, vocab_size=128, tie_word_embeddings=False,
             rope_theta=500000.0, rms_norm_eps=1e-5, max_position_embeddings=128),
    ),
    "qwen3_gqa4_untied": (
        "qwen3",
        dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=8,
             num_key_value_heads=2, head_dim=16, vocab_size=160, tie_word_embeddings=False,
             rope_theta=1000000.0, rms_norm_eps=1e-6, max_position_embeddings=128),
    ),
}


def prompts(vocab):
    g = torch.Generator().manual_seed(vocab)
    return [torch.randint(0, vocab, (n,), generator=g).tolist() for n in (5, 9, 13)]


def build(kind, kwargs, seed):
    torch.manual_seed(seed)
    if kind == "llama":
        config = transformers.LlamaConfig(**kwargs)
        model = transformers.LlamaForCausalLM(config)
    else:
        config = transformers.Qwen3Config(**kwargs)
        model = transformers.Qwen3ForCausalLM(config)
    config._attn_implementation = "eager"
    model = model.float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(WEIGHT_STD * torch.randn_like(p))
    return model


@torch.no_grad()
def reference(model, prompt):
    ids = torch.tensor([prompt])
    first_logits = None
    out = []
    for _ in range(NEW_TOKENS):
        logits = model(input_ids=ids).logits[0, -1]
        if first_logits is None:
            first_logits = logits.clone()
        top2 = torch.topk(logits, 2).values
        assert top2[0] - top2[1] > 1e-3, "greedy choice too close to call"
        nxt = int(torch.argmax(logits))
        out.append(nxt)
        ids = torch.cat([ids, torch.tensor([[nxt]])], dim=1)
    return out, [float(x) for x in first_logits]


def main():
    for seed, (name, (kind, kwargs)) in enumerate(sorted(MODELS.items())):
        model = build(kind, kwargs, seed=1234 + seed)
        out_dir = os.path.join(HERE, "fixtures", name)
        os.makedirs(out_dir, exist_ok=True)
        model.save_pretrained(out_dir)
        cases = []
        for prompt in prompts(kwargs["vocab_size"]):
            tokens, logits = reference(model, prompt)
            cases.append({"prompt": prompt, "greedy": tokens, "prompt_logits": logits})
        expected = {"model": name, "transformers": transformers.__version__,
                    "torch": torch.__version__, "new_tokens": NEW_TOKENS, "cases": cases}
        with open(os.path.join(out_dir, "expected.json"), "w") as f:
            json.dump(expected, f, indent=1)
            f.write("\n")
        print(name, [c["greedy"] for c in cases])


if __name__ == "__main__":
    main()
