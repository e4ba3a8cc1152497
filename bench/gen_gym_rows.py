"""Generate realistic NeMo-Gym JSONL for the validate benchmark (cached under bench/.data, or
$BENCH_DATA: bench/smoke.py points it at a temporary folder).

Rows look like the Nano-v3 RL blend: a system prompt, multi-turn user/assistant messages,
some with function_call / function_call_output / reasoning items, flat function tools, an
agent_ref and the resource server's verifier fields. Deterministic for a given row count.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path

from catalog.atomic_write import open_atomic

DATA_DIR = Path(os.environ.get("BENCH_DATA") or Path(__file__).parent / ".data")
AGENTS = (
    "math_with_judge_simple_agent",
    "code_gen_simple_agent",
    "workplace_assistant_simple_agent",
    "mcqa_simple_agent",
    "instruction_following_simple_agent",
    "structured_outputs_simple_agent",
)
WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "with",
    "was",
    "on",
    "be",
    "by",
    "this",
    "are",
    "or",
    "from",
    "at",
    "which",
    "an",
    "function",
    "value",
    "number",
    "result",
    "compute",
    "answer",
    "matrix",
    "integer",
    "prime",
    "sum",
    "total",
    "order",
    "customer",
    "request",
    "ticket",
    "schedule",
    "meeting",
    "calendar",
    "email",
    "report",
    "policy",
    "verify",
    "step",
]


def _text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words)).capitalize() + "."


def _tool(rng: random.Random, i: int) -> dict:
    props = {
        f"arg_{k}": {"type": rng.choice(["string", "integer"]), "description": _text(rng, 8)}
        for k in range(rng.randint(1, 4))
    }
    return {
        "type": "function",
        "name": f"tool_{i}_{rng.choice(WORDS)}",
        "description": _text(rng, 20),
        "parameters": {"type": "object", "properties": props, "required": sorted(props)[:1]},
        "strict": rng.random() < 0.5,
    }


def make_row(rng: random.Random, idx: int) -> dict:
    """One row of about 1.5 KB on average."""
    items: list[dict] = [{"role": "system", "content": _text(rng, rng.randint(15, 45))}]
    items.append({"role": "user", "content": _text(rng, rng.randint(15, 60))})
    tools = [_tool(rng, i) for i in range(rng.choice((0, 0, 1, 2, 3)))]
    if tools and rng.random() < 0.6:
        call_id = f"call_{idx}"
        items.append(
            {
                "type": "reasoning",
                "id": f"rs_{idx}",
                "summary": [{"type": "summary_text", "text": _text(rng, 15)}],
            }
        )
        items.append(
            {
                "type": "function_call",
                "call_id": call_id,
                "name": tools[0]["name"],
                "arguments": json.dumps({"arg_0": rng.randint(0, 999)}),
            }
        )
        items.append({"type": "function_call_output", "call_id": call_id, "output": _text(rng, 12)})
    if rng.random() < 0.4:
        items.append({"role": "assistant", "content": _text(rng, rng.randint(10, 40))})
        items.append(
            {
                "role": "user",
                "type": "message",
                "content": [{"type": "input_text", "text": _text(rng, 20)}],
            }
        )
    rcp: dict = {"input": items, "temperature": 1.0, "max_output_tokens": 4096}
    if tools:
        rcp["tools"] = tools
        rcp["parallel_tool_calls"] = False
    agent = rng.choice(AGENTS)
    row = {
        "id": idx,
        "responses_create_params": rcp,
        "agent_ref": {"type": "responses_api_agents", "name": agent},
        "question": _text(rng, rng.randint(10, 40)),
        "expected_answer": str(rng.randint(0, 10**6)),
        "dataset": "bench",
    }
    # the fields each agent's resource server requires (catalog/schema/rows/nemo_gym_servers.json)
    if agent == "workplace_assistant_simple_agent":
        row.update(category="email", environment_name="workbench", ground_truth=[])
    elif agent == "structured_outputs_simple_agent":
        row["schema_str"] = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
    return row


def generate(rows: int, seed: int = 0) -> Path:
    """Write (once) and return the path of a `rows`-row file; a finished file is reused."""
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    path = DATA_DIR / f"gym_rows_v2_{rows}_s{seed}.jsonl"  # v2: each server's required fields
    if path.is_file():
        return path
    rng = random.Random(seed)
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode
    with open_atomic(path) as f:
        for i in range(rows):
            f.write(dumps(make_row(rng, i)))
            f.write("\n")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    path = generate(args.rows, args.seed)
    print(f"{path} ({path.stat().st_size / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
