"""Stand-in of upstream's `nemo_rl/algorithms/loss/loss_functions.py` (v0.7.0): loss configs are
pydantic models read by attribute; the constructors assert what upstream's do (:250, :277)."""

from pydantic import BaseModel


class ClippedPGLossConfig(BaseModel, extra="allow"):
    token_level_loss: bool = True
    sequence_level_importance_ratios: bool = False
    use_importance_sampling_correction: bool = False
    truncated_importance_sampling_type: str | None = None


class ClippedPGLossFn:
    def __init__(self, cfg):
        self.sequence_level_importance_ratios = cfg.sequence_level_importance_ratios
        self.token_level = cfg.token_level_loss
        self.use_importance_sampling_correction = cfg.use_importance_sampling_correction
        self.truncated_importance_sampling_type = cfg.truncated_importance_sampling_type
        if self.sequence_level_importance_ratios:
            assert not self.token_level, (
                "sequence-level importance sampling (e.g. GSPO) is mutually exclusive with "
                "token-level loss"
            )
        if self.truncated_importance_sampling_type is not None:
            assert self.use_importance_sampling_correction, (
                "truncated importance sampling is only supported when "
                "use_importance_sampling_correction is True"
            )


class DPOLossFn:
    def __init__(self, cfg, use_linear_ce_fusion=False):
        self.cfg = cfg
