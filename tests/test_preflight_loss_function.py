"""GRPO's loss_fn combinations that ClippedPGLossFn asserts against (issue 38 items 3-4):
GSPO with token-level loss, truncated importance sampling without its correction switch, and
the other asserts its constructor (and the first step's dual clip) make, per release."""

from __future__ import annotations

import pytest
from user_configs import cli_dry_run, judged, on


def _loss(**settings: object) -> str:
    yaml = {k: "null" if v is None else str(v).lower() for k, v in settings.items()}
    return "loss_fn:\n" + "".join(f"  {k}: {v}\n" for k, v in yaml.items())


@pytest.mark.parametrize(
    ("version", "where"),
    [
        ("0.4.0", "algorithms/loss_functions.py:130"),
        ("0.6.0", "loss/loss_functions.py:209"),
        ("0.7.0", "loss/loss_functions.py:250"),
        ("pin", "loss/loss_functions.py:266"),
    ],
)
def test_gspo_with_token_level_loss_is_the_constructors_assert(tmp_path, version, where) -> None:
    text = _loss(sequence_level_importance_ratios=True, token_level_loss=True)
    [error] = on(judged(tmp_path, "rlvr", text, version), "E-LOSS-FN")
    assert error.key == "loss_fn.sequence_level_importance_ratios" and error.line == 3
    assert where in error.message and "token_level_loss=false" in error.fix


def test_gspo_with_sequence_level_loss_is_clean(tmp_path) -> None:
    text = _loss(sequence_level_importance_ratios=True, token_level_loss=False)
    assert on(judged(tmp_path, "rlvr", text, "0.7.0"), "E-LOSS-FN") == []


def test_tis_type_without_the_correction_switch_fails_at_0_7_0(tmp_path) -> None:
    text = _loss(truncated_importance_sampling_type="tis", truncated_importance_sampling_ratio=2.0)
    [error] = on(judged(tmp_path, "rlvr", text, "0.7.0"), "E-LOSS-FN")
    assert error.key == "loss_fn.truncated_importance_sampling_type"
    assert "loss/loss_functions.py:277" in error.message
    assert "use_importance_sampling_correction=true" in error.fix


def test_before_0_7_0_the_ratio_is_the_switch(tmp_path) -> None:
    text = _loss(truncated_importance_sampling_ratio=2.0)
    [error] = on(judged(tmp_path, "rlvr", text, "0.5.0"), "E-LOSS-FN")
    assert error.key == "loss_fn.truncated_importance_sampling_ratio"
    assert "algorithms/loss_functions.py:148" in error.message
    # 0.7.0 ignores a ratio without a type: nothing asserts, TIS is silently off
    found = judged(tmp_path, "rlvr", text, "0.7.0")
    assert on(found, "E-LOSS-FN") == []
    [ignored] = on(found, "W-LOSS-FN")
    assert ignored.key == "loss_fn.truncated_importance_sampling_ratio"
    assert "ignored" in ignored.message and "loss/loss_functions.py:276" in ignored.message


def test_tis_with_its_correction_switch_is_clean_on_every_release(tmp_path) -> None:
    text = _loss(
        use_importance_sampling_correction=True,
        truncated_importance_sampling_type="tis",
        truncated_importance_sampling_ratio=2.0,
    )
    for version in ("0.4.0", "0.5.0", "0.6.0", "0.7.0", "pin"):
        assert on(judged(tmp_path, "rlvr", text, version), "E-LOSS-FN") == [], version


def test_icepop_needs_its_lower_bound_from_0_7_0(tmp_path) -> None:
    text = _loss(
        use_importance_sampling_correction=True,
        truncated_importance_sampling_type="icepop",
        truncated_importance_sampling_ratio=2.0,
    )
    [error] = on(judged(tmp_path, "rlvr", text, "0.7.0"), "E-LOSS-FN")
    assert error.key == "loss_fn.truncated_importance_sampling_ratio_min"
    assert on(judged(tmp_path, "rlvr", text, "0.6.0"), "E-LOSS-FN") == []


def test_cispo_with_dual_clipping_and_a_dual_clip_of_one(tmp_path) -> None:
    text = _loss(use_cispo=True, ratio_clip_c=3.0)
    [error] = on(judged(tmp_path, "rlvr", text, "0.7.0"), "E-LOSS-FN")
    assert error.key == "loss_fn.use_cispo" and "loss/loss_functions.py:268" in error.message
    [clip] = on(judged(tmp_path, "rlvr", _loss(ratio_clip_c=1.0), "pin"), "E-LOSS-FN")
    assert clip.key == "loss_fn.ratio_clip_c" and "first training step" in clip.message


def test_dry_run_refuses_gspo_with_token_level_loss(tmp_path, monkeypatch, capsys) -> None:
    text = _loss(sequence_level_importance_ratios=True)  # token_level_loss stays true
    code, out = cli_dry_run(monkeypatch, capsys, tmp_path, "rlvr", text, "0.7.0")
    assert code == 1 and "E-LOSS-FN" in [f["code"] for f in out["findings"]]
