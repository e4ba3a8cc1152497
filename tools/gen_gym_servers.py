"""Write catalog/schema/rows/nemo_gym_servers.json: the row fields each resource server of the
pinned NeMo-Gym verifies, and the server each agent of its config files routes to.

Runs derive both from the Gym tree they route rows by (catalog/contracts/gym_servers.py,
gym_routes.py); without one, this table stands in (catalog/contracts/gym_facts.py), and
ARTIFACTS.md documents it (`python -m steps docs`). Only derived facts (names, field names and
types) are committed, never upstream code:

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
from catalog.contracts.gym_routes import SHIPPED_CONFIGS, read_routes  # noqa: E402
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
    agents, configs = _agents(args.gym)
    data = {"gym_commit": NEMO_GYM_COMMIT, "servers": servers, "agents": agents}
    data["configs"] = configs
    write_atomic(OUT, json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"{OUT}: {len(servers)} servers, {len(agents)} agents, {len(configs)} config files")


def _agents(gym: Path) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Agent -> the server it routes to, as each Gym config file defines it read alone (an
    agent two files route differently is left out); config file -> the agents it defines."""
    agents: dict[str, set[str]] = {}
    configs: dict[str, list[str]] = {}
    for path in sorted(gym.glob(SHIPPED_CONFIGS)):
        rel = path.relative_to(gym).as_posix()
        routes = read_routes(gym, {"config_paths": [rel]})
        if routes is None or not routes.agents:
            continue
        configs[rel] = sorted(routes.agents)
        for name, server in routes.agents.items():
            agents.setdefault(name, set()).add(server.server if server is not None else "")
    one = {name: next(iter(s)) for name, s in agents.items() if len(s) == 1 and "" not in s}
    return dict(sorted(one.items())), configs


if __name__ == "__main__":
    main()
