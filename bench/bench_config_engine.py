"""The plain-merge engine against OmegaConf merging alone: `python bench/bench_config_engine.py`.

Issue 41 item 6: `runners.config.plain_merge` (a `defaults:` chain merged as plain YAML data,
built once by `OmegaConf.create`) is kept only if it pays for itself against the dry-run target
(< 0.5 s on real recipes). Measured here, both in the same run, with every memo emptied before
each compile (a one-shot command's cold cache):

1. a compile (chain + overrides) of the largest GRPO and DPO recipes of the upstream corpus
   (`../shared/fixtures/nemo-rl/configs/<release>/recipes/llm/`) by either engine;
2. `steps run rl/nemo_rl/rlvr --dry-run` (a child process, median of `--runs`; wall and CPU
   seconds, since a shared machine's wall says more about its load) on the step's
   `nemo_gym_tiny` config and on the largest GRPO recipe, with either engine.

Prints each figure and the ratio OmegaConf-only / plain-merge. Exit 1 when OmegaConf alone
misses the 0.5 s dry-run target (the plain engine still pays), 0 when it meets it, 2 when a
measurement fails.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).parent))
from abort import abort  # noqa: E402

CORPUS = (
    next(
        (c for c in (REPO / "shared", REPO.parent / "shared") if (c / "fixtures").is_dir()),
        REPO.parent / "shared",
    )
    / "fixtures"
    / "nemo-rl"
    / "configs"
)
TINY = REPO / "steps" / "rl" / "nemo_rl" / "rlvr" / "config" / "nemo_gym_tiny.yaml"
TARGET_S = 0.5
OVERRIDES = ["++logger.wandb_enabled=false", "policy.train_global_batch_size=64"]
DRY_RUN = ["run", "rl/nemo_rl/rlvr", "--dry-run", "++logger.wandb_enabled=false"]
# The child: `steps` as installed, the engine chosen by argv[1] ("plain" is what ships).
CHILD = """
import sys
engine = sys.argv.pop(1)
if engine == "omegaconf":
    from runners.config import compiler
    def _omegaconf_only(path, home):
        sources = []
        return compiler._load_with_inheritance(path, [], sources, False, home), sources
    compiler._load_chain = _omegaconf_only
from steps.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def chain_bytes(path: Path) -> int:
    """The size of a file and of its `defaults:` parents, theirs included."""
    import yaml

    data = yaml.safe_load(path.read_text()) or {}
    parents = data.get("defaults") or []
    parents = [parents] if isinstance(parents, str) else parents
    return path.stat().st_size + sum(
        chain_bytes((path.parent / p).resolve()) for p in parents if (path.parent / p).is_file()
    )


def largest(release: Path, prefix: str) -> Path:
    recipes = sorted((release / "recipes" / "llm").glob(f"{prefix}-*.yaml"))
    if not recipes:
        abort(f"no {prefix} recipes under {release}")
    return max(recipes, key=chain_bytes)


def cold() -> None:
    """Empty every memo a compile reads through, as a fresh process has them."""
    from runners.config import compiler, files, plain_merge

    compiler._TREES.clear()
    files._FILES.clear()
    files._DATA.clear()
    plain_merge.parses.cache_clear()


def compile_once(path: Path, plain: bool) -> float:
    from omegaconf import OmegaConf

    from runners.config import compiler
    from runners.config.override_apply import apply_overrides

    cold()
    t = time.process_time()  # CPU: a loaded machine's wall time says more about its load
    if plain:
        cfg, _ = compiler._load_chain(path, None)
    else:
        cfg = compiler._load_with_inheritance(path, [], [], False, None)
    apply_overrides(cfg, list(OVERRIDES))
    elapsed = time.process_time() - t
    OmegaConf.to_container(cfg, resolve=False)  # both built a whole config
    return elapsed


def dry_run(engine: str, cwd: Path, argv: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one dry run in a child process."""
    t, before = time.perf_counter(), _children_cpu()
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, engine, *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "STEPS_CACHE_DIR": str(cwd / ".cache")},
    )
    elapsed = time.perf_counter() - t, _children_cpu() - before
    if proc.returncode not in (0, 1):
        abort(f"`steps {' '.join(argv)}` ({engine}) exited {proc.returncode}:\n{proc.stderr}")
    return elapsed


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--release", default="pin-7ea279ab", help="a folder of the upstream corpus")
    p.add_argument("--repeat", type=int, default=15, help="compiles per recipe and engine")
    p.add_argument("--runs", type=int, default=7, help="dry runs per engine")
    args = p.parse_args()
    release = CORPUS / args.release
    recipes = [largest(release, "grpo"), largest(release, "dpo")] if release.is_dir() else []
    if not recipes:
        print(f"no upstream corpus at {release}: the shipped {TINY.name} only")
    from runners.config.compiler import register_resolvers

    register_resolvers()
    print(f"compile (chain + {len(OVERRIDES)} overrides), CPU median of {args.repeat}, cold memos:")
    for recipe in recipes or [TINY]:
        compile_once(recipe, True), compile_once(recipe, False)  # warm-up: imports, grammar
        plain = statistics.median(compile_once(recipe, True) for _ in range(args.repeat))
        alone = statistics.median(compile_once(recipe, False) for _ in range(args.repeat))
        print(
            f"  {recipe.name} ({chain_bytes(recipe)} bytes of YAML): plain-merge "
            f"{plain * 1e3:.1f} ms, OmegaConf alone {alone * 1e3:.1f} ms ({alone / plain:.2f}x)"
        )
    import tempfile

    cases = [("-c nemo_gym_tiny", [*DRY_RUN, "-c", "nemo_gym_tiny"])]
    cases += [(f"--config {r.name}", [*DRY_RUN, "--config", str(r)]) for r in recipes[:1]]
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for what, argv in cases:
            runs: dict[str, list[tuple[float, float]]] = {"plain": [], "omegaconf": []}
            dry_run("plain", Path(tmp), argv)  # warm-up: bytecode, the schema cache
            for _ in range(args.runs):
                for engine in runs:  # alternated: a shared machine's load hits both alike
                    runs[engine].append(dry_run(engine, Path(tmp), argv))
            (pw, pc), (ow, oc) = (
                [statistics.median(x[i] for x in runs[e]) for i in (0, 1)]
                for e in ("plain", "omegaconf")
            )
            print(f"`steps {' '.join(DRY_RUN)} {what}`, median of {args.runs}:")
            print(
                f"  plain-merge {pw:.3f} s wall {pc:.3f} s CPU; OmegaConf alone {ow:.3f} s wall "
                f"{oc:.3f} s CPU; ratio OmegaConf alone / plain-merge (CPU) {oc / pc:.2f}x"
            )
            worst = max(worst, oc)
    verdict = "meets" if worst < TARGET_S else "misses"
    print(f"OmegaConf alone {verdict} the dry-run target (< {TARGET_S} s; worst CPU {worst:.3f} s)")
    return 0 if worst < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
