"""Config compile speed vs OmegaConf's own load+merge: `python bench/bench_config.py`.

Target (issue 3): compiling a NeMo-RL-sized config (5-deep inheritance across folders, 300+
keys) with 10 overrides, then resolving it, within 1.5x of OmegaConf loading and merging the
same files, merging the same overrides via `OmegaConf.from_dotlist`, and resolving.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from omegaconf import OmegaConf

from runners.config.compiler import compile_config, register_resolvers

TARGET = 1.5
SECTIONS = ("policy", "grpo", "loss_fn", "data", "env", "logger", "cluster", "checkpointing")
OVERRIDES = [
    "policy.s0.k0=1",
    "grpo.s1.k2=2",
    "loss_fn.s2.k3=0.5",
    "data.s0.k5=x",
    "env.s3.k4=true",
    "logger.s1.k0=null",
    "cluster.s2.k2=8",
    "checkpointing.s0.k3=[1,2]",
    "policy.s4.k1=3e-4",
    "grpo.s0.k0=11",
]


def generate(root: Path) -> Path:
    """Five files in five folders, leaf -> root; the root has 8 x 5 x 7 = 280 leaves plus
    derived keys, each level overrides a slice and adds keys: > 300 keys once merged."""
    lines = []
    for sec in SECTIONS:
        lines.append(f"{sec}:")
        for s in range(5):
            lines.append(f"  s{s}:")
            for k in range(7):
                lines.append(f"    k{k}: {s * 10 + k}")
        lines.append(f"  total: ${{mul:${{{sec}.s0.k1}},${{{sec}.s1.k2}}}}")
        lines.append(f"  sum: ${{add:${{{sec}.s0.k1}},2}}")
        lines.append(f"  name: ${{{sec}.s2.k0}}")
    (root / "l0").mkdir()
    (root / "l0" / "base.yaml").write_text("\n".join(lines) + "\n")
    parent = "../l0/base.yaml"
    for level in range(1, 5):
        d = root / f"l{level}"
        d.mkdir()
        body = [f"defaults: {parent}"]
        for sec in SECTIONS:
            body += [
                f"{sec}:",
                f"  s{level}:",
                f"    k{level}: {level * 100}",
                f"    extra{level}: v{level}",
            ]
        (d / "cfg.yaml").write_text("\n".join(body) + "\n")
        parent = f"../l{level}/cfg.yaml"
    return root / "l4" / "cfg.yaml"


def chain(leaf: Path) -> list[Path]:
    files = [leaf]
    while True:
        text = files[-1].read_text().splitlines()[0]
        if not text.startswith("defaults:"):
            return list(reversed(files))
        files.append((files[-1].parent / text.split(":", 1)[1].strip()).resolve())


def ours(leaf: Path) -> dict:
    return compile_config(leaf, OVERRIDES).resolved()


def baseline(files: list[Path]) -> dict:
    cfg = OmegaConf.create({})
    for f in files:
        c = OmegaConf.load(f)
        c.pop("defaults", None)
        cfg = OmegaConf.merge(cfg, c)
    cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist(OVERRIDES))
    return OmegaConf.to_container(cfg, resolve=True)


def median(fn, arg, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=30)
    args = p.parse_args()
    register_resolvers()
    with tempfile.TemporaryDirectory() as tmp:
        leaf = generate(Path(tmp))
        files = chain(leaf)
        a, b = ours(leaf), baseline(files)
        flat = len(_flat(a))
        assert _flat(a).keys() == _flat(b).keys(), "the two paths must build the same keys"
        median(ours, leaf, 3), median(baseline, files, 3)  # warm-up (imports, parser tables)
        t_ours = median(ours, leaf, args.repeat)
        t_base = median(baseline, files, args.repeat)
    ratio = t_ours / t_base
    print(f"config: {len(files)} files deep, {flat} leaf keys, {len(OVERRIDES)} overrides")
    print(f"compile_config + resolve: {t_ours * 1000:.2f} ms (median of {args.repeat})")
    print(f"OmegaConf load+merge+from_dotlist+resolve: {t_base * 1000:.2f} ms")
    print(f"ratio: {ratio:.2f}x (target <= {TARGET}x) -> {'OK' if ratio <= TARGET else 'MISS'}")
    return 0 if ratio <= TARGET else 1


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, dict):
            out.update(_flat(v, key))
        else:
            out[key] = v
    return out


if __name__ == "__main__":
    sys.exit(main())
