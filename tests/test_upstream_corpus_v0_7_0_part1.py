"""Half of NeMo-RL 0.7.0's GRPO and DPO example configs (part 1 of 2) compile as NeMo-RL
compiles them and get no false error from preflight (`upstream_corpus.py`; one module each
so that xdist checks them side by side)."""

from upstream_corpus import corpus_test

test_upstream_configs_compile_as_nemo_rl_and_get_no_false_error = corpus_test("0.7.0", part=1)
