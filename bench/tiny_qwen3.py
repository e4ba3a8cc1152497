"""Write a tiny random Qwen3 model and its tokenizer as a Hugging Face folder, offline.

For the GPU smoke (bench/gpu_smoke.sh): NeMo-RL needs a real model folder to train, and a GPU
machine often has no network. Python's standard library only (no torch, no transformers), so
it runs anywhere: config.json (Qwen3ForCausalLM, hidden 64, 2 layers, 4 heads, 2 KV heads,
head_dim 16), model.safetensors (float32, normal(0, 0.02), norms 1), a byte-level BPE
tokenizer.json (256 byte tokens, no merges, the specials `<|endoftext|> <|pad|> <|im_start|>
<|im_end|>`) and tokenizer_config.json with a ChatML chat template. Usage:
`python bench/tiny_qwen3.py OUT_DIR [--seed N]`.
"""

from __future__ import annotations

import argparse
import json
import random
import struct
import sys
from pathlib import Path

HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FFN = 64, 2, 4, 2, 16, 128
SPECIALS = ("<|endoftext|>", "<|pad|>", "<|im_start|>", "<|im_end|>")
VOCAB = 256 + len(SPECIALS)
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def byte_alphabet() -> list[str]:
    """GPT-2's byte-to-character map: byte b is token id b."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    extra = iter(range(256, 512))
    return [chr(b) if b in printable else chr(next(extra)) for b in range(256)]


def shapes() -> dict[str, list[int]]:
    out = {"model.embed_tokens.weight": [VOCAB, HIDDEN]}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        out |= {
            p + "input_layernorm.weight": [HIDDEN],
            p + "self_attn.q_proj.weight": [HEADS * HEAD_DIM, HIDDEN],
            p + "self_attn.k_proj.weight": [KV_HEADS * HEAD_DIM, HIDDEN],
            p + "self_attn.v_proj.weight": [KV_HEADS * HEAD_DIM, HIDDEN],
            p + "self_attn.o_proj.weight": [HIDDEN, HEADS * HEAD_DIM],
            p + "self_attn.q_norm.weight": [HEAD_DIM],
            p + "self_attn.k_norm.weight": [HEAD_DIM],
            p + "post_attention_layernorm.weight": [HIDDEN],
            p + "mlp.gate_proj.weight": [FFN, HIDDEN],
            p + "mlp.up_proj.weight": [FFN, HIDDEN],
            p + "mlp.down_proj.weight": [HIDDEN, FFN],
        }
    return out | {"model.norm.weight": [HIDDEN], "lm_head.weight": [VOCAB, HIDDEN]}


def write_safetensors(path: Path, seed: int) -> int:
    """float32 tensors in the safetensors layout; returns the parameter count."""
    rng = random.Random(seed)
    header: dict = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, shape in shapes().items():
        n = shape[0] * (shape[1] if len(shape) > 1 else 1)
        values = (
            [1.0] * n if name.endswith("norm.weight") else [rng.gauss(0, 0.02) for _ in range(n)]
        )
        blob = struct.pack(f"<{n}f", *values)
        header[name] = {
            "dtype": "F32",
            "shape": shape,
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    return offset // 4


def tokenizer_json() -> dict:
    byte_level = {"add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    added = [
        {
            "id": 256 + i,
            "content": tok,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for i, tok in enumerate(SPECIALS)
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", **byte_level},
        "post_processor": {"type": "ByteLevel", **byte_level, "trim_offsets": False},
        "decoder": {"type": "ByteLevel", **byte_level},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": {ch: i for i, ch in enumerate(byte_alphabet())},
            "merges": [],
        },
    }


def write_model(out: Path, seed: int = 0) -> int:
    out.mkdir(parents=True, exist_ok=True)
    ids = {tok: 256 + i for i, tok in enumerate(SPECIALS)}
    config = {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "vocab_size": VOCAB,
        "hidden_size": HIDDEN,
        "intermediate_size": FFN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM,
        "hidden_act": "silu",
        "max_position_embeddings": 1024,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "use_sliding_window": False,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|pad|>"],
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    generation = {"bos_token_id": config["bos_token_id"], "eos_token_id": config["eos_token_id"]}
    (out / "generation_config.json").write_text(json.dumps(generation, indent=2) + "\n")
    params = write_safetensors(out / "model.safetensors", seed)
    (out / "tokenizer.json").write_text(json.dumps(tokenizer_json(), ensure_ascii=False))
    tok_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": 1024,
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|pad|>",
        "unk_token": None,
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
        "chat_template": CHAT_TEMPLATE,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(tok_config, indent=2) + "\n")
    return params


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    params = write_model(args.out, args.seed)
    print(f"tiny Qwen3: {params} parameters, vocab {VOCAB}, in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
