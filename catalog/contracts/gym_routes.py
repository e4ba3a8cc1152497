"""Which resource server scores the rows of each agent a Gym config loads.

`env.nemo_gym.config_paths` names Gym config files (relative to the Gym root); `env.nemo_gym`
itself may add or override instances. An agent instance (`<name>: {responses_api_agents:
{<kind>: {resources_server: {name: <rs>}}}}`) routes its rows to a resources-server instance
(`<rs>: {resources_servers: {<server>: {entrypoint: app.py}}}`), whose source gym_servers.py
reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalog.contracts.gym_servers import ServerFields, server_fields
from catalog.yamlfile import read_data

AGENTS = "responses_api_agents"
SERVERS = "resources_servers"


@dataclass
class GymRoutes:
    """Agents the config loads, each with its server's fields (None: no server, or no Gym tree
    to read it from), and the config files that could not be read."""

    agents: dict[str, ServerFields | None] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)

    def option(self) -> dict[str, Any]:
        """The row contract's `routes` option: agent -> its server's fields, derived ones only."""
        return {
            name: server.to_option()
            for name, server in sorted(self.agents.items())
            if server is not None and server.reason is None
        }

    def underived(self) -> dict[str, str]:
        """Servers of loaded agents whose row fields could not be derived, and why."""
        return {
            s.server: s.reason
            for s in self.agents.values()
            if s is not None and s.reason is not None
        }


UNDERIVED = "W-GYM-SERVER-UNDERIVED"
UNDERIVED_FIX = "check those rows against the server's README or data/example.jsonl"


def underived_message(underived: Mapping[str, str]) -> str:
    """The one warning about servers whose row fields could not be derived."""
    said = "; ".join(f"{server}: {why}" for server, why in sorted(underived.items()))
    return (
        "the row fields these resource servers read could not be derived from their source, "
        f"so their rows are not checked for them ({said})"
    )


def _merge(into: dict, extra: Mapping) -> None:
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = dict(value) if isinstance(value, Mapping) else value


def _single(body: Any, kind: str) -> dict | None:
    """The one `{<type>: {...}}` entry under `kind` of an instance, else None."""
    inner = body.get(kind) if isinstance(body, dict) else None
    if isinstance(inner, dict) and len(inner) == 1:
        ((name, spec),) = inner.items()
        return {"type": str(name), **spec} if isinstance(spec, dict) else {"type": str(name)}
    return None


def read_routes(gym_root: Path | None, gym_config: Mapping | None) -> GymRoutes | None:
    """The routes of `env.nemo_gym` (its config_paths under `gym_root`, then its own
    instances); None when it names config files but there is no Gym tree to read them from."""
    import yaml

    gym_config = gym_config or {}
    paths = gym_config.get("config_paths") or []
    if paths and gym_root is None:
        return None
    merged: dict = {}
    routes = GymRoutes()
    for entry in paths if isinstance(paths, list) else []:
        if not isinstance(entry, str):
            continue
        path = Path(entry) if Path(entry).is_absolute() else Path(gym_root) / entry  # type: ignore[arg-type]
        try:
            doc = read_data(path)
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            routes.unreadable.append(entry)
            continue
        if isinstance(doc, dict):
            _merge(merged, doc)
    _merge(merged, {k: v for k, v in gym_config.items() if k != "config_paths"})
    for name, body in merged.items():
        agent = _single(body, AGENTS)
        if agent is None:
            continue
        ref = agent.get("resources_server")
        rs_name = ref.get("name") if isinstance(ref, dict) else None
        server = _single(merged.get(rs_name), SERVERS) if isinstance(rs_name, str) else None
        if server is None or gym_root is None:
            routes.agents[str(name)] = None
            continue
        entrypoint = server.get("entrypoint") if isinstance(server.get("entrypoint"), str) else None
        routes.agents[str(name)] = server_fields(
            Path(gym_root), server["type"], entrypoint or "app.py"
        )
    return routes


SHIPPED_CONFIGS = "*/*/configs/*.yaml"


def shipped_routes(gym_root: Path, agents: Iterable[str]) -> GymRoutes:
    """The routes of `agents` as the Gym tree's own config files define them, each file read
    alone (only those that name one of them): what an rl_prep blend's agent routes to before
    any training config loads it. An agent no file defines is left out of `agents`."""
    wanted = set(agents)
    found = GymRoutes()
    for path in sorted(gym_root.glob(SHIPPED_CONFIGS)):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        named = [a for a in sorted(wanted - found.agents.keys()) if a in text]
        if not named:
            continue
        routes = read_routes(gym_root, {"config_paths": [path.relative_to(gym_root).as_posix()]})
        for agent in named:
            if routes is not None and agent in routes.agents:
                found.agents[agent] = routes.agents[agent]
    return found
