"""Config and override handling of large inputs (issue 39 case 5): a long list override, many
keys added under one section, the file:line of many keys, did-you-mean over many options. What
was quadratic is timed at full size by `bench/bench_config_scale.py` (speed lives in benchmarks);
these tests hold the answers, and the cheap bounds to the answers of the slow paths."""

from __future__ import annotations

from omegaconf import OmegaConf

from catalog.yamlfile import compose, find_key
from runners.config.compiler import apply_overrides
from runners.config.overrides import parse_overrides


def test_a_long_list_override_is_read_element_for_element():
    token = "++unk_list=[" + ",".join(map(str, range(2_000))) + "]"
    assert parse_overrides([token])[0].value() == list(range(2_000))


def test_keys_added_under_one_section_are_each_applied():
    cfg = OmegaConf.create({"policy": {"lr": 1}})
    apply_overrides(cfg, [f"++unk.k{i}={i}" for i in range(2_000)])
    assert len(cfg.unk) == 2_000 and cfg.unk.k1999 == 1_999 and cfg.policy.lr == 1


def test_the_line_of_each_key_of_a_long_mapping_is_its_own():
    node = compose("".join(f"k{i}: {i}\n" for i in range(2_000)))
    assert [find_key(node, [f"k{i}"])[0] for i in range(2_000)] == list(range(1, 2_001))


def test_adds_applied_together_give_what_hydra_gives_one_by_one():
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    base = {"a": {"b": 1, "c": {"d": 2}}, "e": [1, 2], "s": "${a.b}"}
    tokens = ["++a.x=1", "+a.y='q'", "++a.b=5", "a.c.d=3", "++a.c=7", "++n.m=1", "++n.o=2",
              "+a.z=[1,2]", "++e.0=9", "++a.w=${a.b}", "++a.v=null", "~s", "++a.u=2"]  # fmt: skip
    ours = OmegaConf.create(base)
    apply_overrides(ours, tokens)
    theirs = OmegaConf.create(base)
    OmegaConf.set_struct(theirs, True)
    for ov in parse_overrides(tokens):
        ConfigLoaderImpl._apply_overrides_to_config(overrides=[ov], cfg=theirs)
    OmegaConf.set_struct(theirs, False)
    assert OmegaConf.to_container(ours) == OmegaConf.to_container(theirs)
    assert OmegaConf.to_yaml(ours) == OmegaConf.to_yaml(theirs)


def test_did_you_mean_over_100k_options_still_finds_the_typo():
    from catalog.did_you_mean import close_matches

    options = [f"unknown_key_{i}" for i in range(100_000)] + ["max_num_steps"]
    assert close_matches("max_num_stesp", options)[0] == "max_num_steps"


def test_typo_checks_with_an_edit_limit_give_the_unlimited_count_within_it():
    import random

    from catalog.did_you_mean import edits, typo_of

    rng = random.Random(1)
    for _ in range(5_000):
        a, b = ("".join(rng.choice("ab_c") for _ in range(rng.randint(0, 8))) for _ in "ab")
        full = edits(a, b)
        for limit in (0, 1, 2):
            assert edits(a, b, limit) == full if full <= limit else edits(a, b, limit) > limit
    declared = ["policy", "data", "dpo", "grpo", "env", "logger", "cluster", "checkpointing"]
    assert {typo_of(f"unknown_key_{i}", declared) for i in range(1_000)} == {None}
    assert typo_of("checkpointnig", declared) == "checkpointing"


def test_the_cheap_bounds_before_difflib_and_edits_change_no_answer():
    """close_matches skips options by difflib's own length and shared-letter bounds, typo_of by
    length and shared letters, before the costly step: the answers are difflib's and the
    brute-force nearest option's, on random words over a small alphabet (many near misses)."""
    import difflib
    import random

    from catalog.did_you_mean import CUTOFF, close_matches, edits, typo_of

    def nearest(word: str, options: list[str]) -> str | None:
        limit = 1 if len(word) <= 4 else 2
        near = sorted((edits(word, o), o) for o in set(options) if o != word)
        near = [(d, o) for d, o in near if d <= limit]
        return None if not near or (len(near) > 1 and near[0][0] == near[1][0]) else near[0][1]

    rng = random.Random(7)
    for alphabet in ("ab", "abcde_", "abcdefghijklmnop_.0"):
        for _ in range(1_500):
            options = ["".join(rng.choices(alphabet, k=rng.randint(0, 9))) for _ in range(9)]
            word = (
                rng.choice(options)
                if rng.random() < 0.3
                else "".join(rng.choices(alphabet, k=rng.randint(0, 9)))
            )
            n = rng.randint(1, 4)
            assert close_matches(word, options, n) == difflib.get_close_matches(
                word, options, n=n, cutoff=CUTOFF
            ), (word, options)
            assert typo_of(word, options) == nearest(word, options), (word, options)


def test_the_override_that_set_each_of_many_keys_is_found():
    from runners.config.compiler import CompiledConfig

    tokens = [f"++unk_k{i}={i}" for i in range(5_000)]
    compiled = CompiledConfig(OmegaConf.create({}), [], tokens)
    found = [compiled.locate(f"unk_k{i}") for i in range(5_000)]
    assert found[123] == ("override '++unk_k123=123'", None)
    assert found[-1] == ("override '++unk_k4999=4999'", None)


def test_the_override_found_for_a_key_is_the_last_that_set_it_or_a_parent():
    import random

    from runners.config.compiler import CompiledConfig

    def scanned(tokens: list[str], dotted: str) -> str | None:  # the rule, by a scan
        for token in reversed(tokens):
            key = token.lstrip("+~").split("=", 1)[0].strip()
            if key and (dotted == key or dotted.startswith(key + ".")):
                return token
        return None

    rng = random.Random(3)
    keys = ["a", "a.b", "a.b.c", "ab", "a.bc", "b", "a.b[0]", "b.a", ""]
    for _ in range(3_000):
        tokens = [f"{rng.choice(['', '+', '++', '~'])}{rng.choice(keys)}={i}" for i in range(6)]
        compiled = CompiledConfig(OmegaConf.create({}), [], tokens)
        for dotted in keys[:-1]:
            token = scanned(tokens, dotted)
            where = compiled.locate(dotted)[0]
            assert (where is None) if token is None else where == f"override '{token}'"


def test_lines_found_in_the_loaders_tree_are_the_lines_of_a_fresh_parse(tmp_path):
    """file:line of a config's keys come from the tree the config loader built (no second parse
    of a 1e5-key file), and are what parsing the file again gives; with merge keys (`<<`), which
    building the data flattens into the tree, the file is parsed again as written."""
    from runners.config.compiler import compile_config

    texts = {
        "plain": "a: 1\nb:\n  c: [1, 2]\n  d: {e: x}\nf: '???'\n",
        "merged": "base: &b\n  lr: 1\n  wd: 2\nuse:\n  <<: *b\n  lr: 3\n",
    }
    for name, text in texts.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(text, encoding="utf-8")
        compiled = compile_config(path)
        fresh = compose(text)
        for key in ("a", "b.c", "b.c.1", "b.d.e", "f", "base.lr", "use.lr", "use.wd", "nope"):
            line, _ = find_key(fresh, key.split("."))
            expected = (str(path), line) if line is not None else (str(path), None)
            assert compiled.locate(key) == expected, (name, key)
