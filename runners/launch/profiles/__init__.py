"""env.toml profiles: the models (`env_toml`), Nemotron's keys (`aliases`), values (`values`)."""
