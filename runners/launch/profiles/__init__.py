"""env.toml profiles: `env_toml` (the models, one per executor, found through the backend's
registration, and how a profile is read and located), `aliases` (Nemotron's keys read as ours),
`values` (what a value may hold)."""
