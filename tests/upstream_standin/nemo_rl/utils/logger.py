"""Stand-in of upstream's `nemo_rl/utils/logger.py` Logger (v0.7.0): the MLflow backend refuses a
`file://` store as the MLflow NeMo-RL pins does (:852), with that exception's name and words."""

import os


class MlflowException(Exception):
    pass


class MLflowLogger:
    def __init__(self, cfg, log_dir=None):
        uri = cfg.get("tracking_uri") or ""
        if uri.startswith("file:"):
            raise MlflowException(
                "The filesystem tracking backend (e.g., './mlruns') is no longer supported. "
                "Use a database backend (e.g., 'sqlite:///mlflow.db') instead."
            )


class Logger:
    def __init__(self, cfg):
        os.makedirs(cfg["log_dir"], exist_ok=True)
        if cfg.get("mlflow_enabled"):
            MLflowLogger(cfg.get("mlflow") or {}, log_dir=os.path.join(cfg["log_dir"], "mlflow"))
