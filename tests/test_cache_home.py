"""One rule for where steps caches, used by every cache (issue 41 item 7)."""

from __future__ import annotations

from pathlib import Path

from catalog.discovery import cache_home


def test_cache_home_prefers_steps_cache_dir_then_xdg_then_home(tmp_path):
    assert cache_home({"STEPS_CACHE_DIR": "/a", "XDG_CACHE_HOME": "/b"}, "x") == Path(
        "/a/nemo-rl-steps/x"
    )
    assert cache_home({"XDG_CACHE_HOME": "/b"}) == Path("/b/nemo-rl-steps")
    assert cache_home({}, "y") == Path("~/.cache/nemo-rl-steps/y").expanduser()


def test_every_cache_lives_under_the_one_cache_home(tmp_path, monkeypatch):
    from catalog.contracts.gym_facts import cache_dir as gym_cache
    from runners.digest import memo_file
    from runners.launch.job_code import cache_root as code_cache
    from runners.launch.local import cache_dir as interpreter_cache
    from runners.nemo_rl.schema.store import cache_root as schema_cache
    from runners.preflight.upstream_judge import cache_dir as judge_cache

    monkeypatch.setenv("STEPS_CACHE_DIR", str(tmp_path))
    env = {"STEPS_CACHE_DIR": str(tmp_path)}
    home = tmp_path / "nemo-rl-steps"
    for where in (
        gym_cache(),
        memo_file(env),
        code_cache(),
        interpreter_cache(env),
        schema_cache(env),
        judge_cache(env),
    ):
        assert where.parent == home
