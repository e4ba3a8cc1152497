"""Write the shipped schema of one NeMo-RL version: catalog/schema/nemo_rl/<label>/<algo>.json.

Runs derive the schema from the checkout they use (`runners.nemo_rl.schema`, cached per commit);
the shipped ones let a laptop without a checkout check against a named version. Adding a
release or moving the pin is one command per version, then update `catalog/upstream.py`:

    git -C RL worktree add /tmp/rl-0.8.0 v0.8.0
    .venv/bin/python tools/gen_nemo_rl_schema.py --nemo-rl /tmp/rl-0.8.0 --label 0.8.0

(the commit is read with `git rev-parse HEAD` when the folder is a git checkout, else pass
--commit). Only the derived JSON is committed, never upstream code.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from catalog.atomic_write import write_atomic  # noqa: E402
from catalog.errors import StepsError  # noqa: E402
from catalog.nemo_rl_version import parse_version  # noqa: E402
from catalog.upstream import NEMO_RL_PIN_LABEL, NEMO_RL_SCHEMA_DIR  # noqa: E402
from runners.nemo_rl.schema import derive  # noqa: E402


def git_commit(checkout: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True
        )
    except OSError:
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nemo-rl", required=True, type=Path, help="NeMo-RL checkout at the version")
    ap.add_argument("--label", required=True, help=f"release number or '{NEMO_RL_PIN_LABEL}'")
    ap.add_argument("--out", type=Path, default=NEMO_RL_SCHEMA_DIR, help="schema root folder")
    ap.add_argument("--commit", help="upstream commit (default: git rev-parse HEAD)")
    args = ap.parse_args(argv)
    checkout = args.nemo_rl.resolve()
    if not (checkout / "nemo_rl").is_dir():
        print(f"error: {checkout}: no nemo_rl/ package; pass a NeMo-RL checkout", file=sys.stderr)
        return 2
    commit = args.commit or git_commit(checkout)
    if not commit:
        print("error: not a git checkout; pass --commit SHA", file=sys.stderr)
        return 2
    try:
        label = parse_version(args.label).label
        docs = derive(checkout, upstream={"commit": commit, "version": label})
    except StepsError as exc:
        print(exc.finding.render(), file=sys.stderr)
        return 2
    for algorithm, doc in docs.items():
        doc["upstream"].pop("generated", None)  # shipped files change only when upstream does
        out = args.out / args.label / f"{algorithm}.json"
        write_atomic(out, json.dumps(doc, indent=1) + "\n")
        print(f"wrote {out} ({len(doc['classes'])} classes, commit {commit[:12]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
