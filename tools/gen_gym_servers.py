"""Write catalog/schema/rows/nemo_gym_servers.json: the row fields each resource server of the
pinned NeMo-Gym verifies, for ARTIFACTS.md (`python -m steps docs`).

Runs derive the fields from the Gym tree they route rows by (catalog/contracts/gym_servers.py);
this shipped table only documents the pin. Only the derived field names and types are
committed, never upstream code:

    git -C Gym worktree add /tmp/gym-pin <NEMO_GYM_COMMIT>
    .venv/bin/python tools/gen_gym_servers.py /tmp/gym-pin
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from catalog.atomic_write import write_atomic  # noqa: E402
from catalog.contracts.gym_servers import SERVERS_DIR, server_fields  # noqa: E402
from catalog.upstream import NEMO_GYM_COMMIT  # noqa: E402

OUT = ROOT / "catalog" / "schema" / "rows" / "nemo_gym_servers.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("gym", type=Path, help="a NeMo-Gym tree at catalog.upstream.NEMO_GYM_COMMIT")
    args = ap.parse_args()
    servers = {}
    for folder in sorted((args.gym / SERVERS_DIR).iterdir()):
        if not (folder / "app.py").is_file():
            continue
        found = server_fields(args.gym, folder.name)
        servers[folder.name] = {"model": found.model, "reason": found.reason, **found.to_option()}
        del servers[folder.name]["server"]
    data = {"gym_commit": NEMO_GYM_COMMIT, "servers": servers}
    write_atomic(OUT, json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"{OUT}: {len(servers)} servers")


if __name__ == "__main__":
    main()
