"""The row fields each agent's resource server reads, as derived from the pinned NeMo-Gym.

Without a Gym tree at hand (no `--nemo-rl` checkout, no container), the task-field check
(E-GYM-TASK-FIELD) stands on this table: `tools/gen_gym_servers.py` derives it at build time from
the Gym at `catalog.upstream.NEMO_GYM_COMMIT` with the same code that reads a tree at run time
(gym_routes.py, gym_servers.py), and commits only the facts (agent -> server, server -> fields).
A Gym tree, when there is one, is read instead: its own agents and fields refine these.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from catalog.record_file import read_json

TABLE = Path(__file__).resolve().parent.parent / "schema" / "rows" / "nemo_gym_servers.json"


@functools.cache
def _table() -> dict[str, Any]:
    return read_json(TABLE)


def pinned_routes(agents: Any = None) -> dict[str, dict]:
    """The row contract's `routes` option (agent -> its server's fields) for `agents` (all when
    None) that the pinned Gym defines with a server whose fields were derived."""
    table = _table()
    out: dict[str, dict] = {}
    for agent, server in table["agents"].items():
        spec = table["servers"].get(server)
        if (agents is None or agent in agents) and spec is not None and spec["reason"] is None:
            out[agent] = {"server": server, "fields": spec["fields"]}
    return out


def pinned_commit() -> str:
    """The Gym commit the table was derived from, short."""
    return str(_table()["gym_commit"])[:7]
