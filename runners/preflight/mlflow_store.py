"""MLflow's tracking store: the file store NeMo-RL's own MLflow refuses.

NeMo-RL's Logger asks MLflow for the experiment before any work (`logger.mlflow.tracking_uri`,
else `MLFLOW_TRACKING_URI`, 0.6.0+). MLflow 3.13 refuses a file store (`file:` or a bare path)
unless `MLFLOW_ALLOW_FILE_STORE=true` (mlflow PR 22773): 0.7.0 locks 3.14.0 and the pin 3.15.1
(refuse); 0.4.0-0.6.0 lock 3.5.1/3.11.1 (warn).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from urllib.parse import urlparse

from catalog.errors import Finding
from runners.preflight import PreflightContext, rule
from runners.preflight.topology import UNRESOLVED, cite, finding

OPT_OUT = "MLFLOW_ALLOW_FILE_STORE"
EXPERIMENT_LOOKUP = {"0.7.0": "nemo_rl/utils/logger.py:852", "pin": "nemo_rl/utils/logger.py:875"}
LOCKED = {"0.7.0": "3.14.0", "pin": "3.15.1"}


def is_file_store(uri: str) -> bool:
    """Whether MLflow resolves `uri` to its file store: a `file:` URI or a path, no scheme."""
    scheme = urlparse(uri).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and uri[1:2] == ":")  # C:\\ paths


def _job_env(ctx: PreflightContext) -> Mapping[str, str] | None:
    """The environment the job starts with, as far as it is known here."""
    if ctx.local_launch is not None:
        return ctx.local_launch.env
    if ctx.remote is not None:
        return getattr(ctx.remote.profile, "env", None) or {}
    return None


@rule("mlflow_store", versions="0.7.0+")
def mlflow_store(ctx: PreflightContext) -> Iterator[Finding]:
    """E-MLFLOW-STORE: MLflow on with a file-store tracking URI, which NeMo-RL's MLflow refuses."""
    if not ctx.get("logger.mlflow_enabled"):
        return
    env = _job_env(ctx)
    key, uri = "logger.mlflow.tracking_uri", ctx.get("logger.mlflow.tracking_uri")
    if not uri and env is not None and env.get("MLFLOW_TRACKING_URI"):
        key, uri = "logger.mlflow_enabled", env["MLFLOW_TRACKING_URI"]
    if not isinstance(uri, str) or not uri or uri == UNRESOLVED or not is_file_store(uri):
        return
    if env is not None and str(env.get(OPT_OUT, "")).lower() in ("true", "1"):
        return
    source = "" if key.endswith("tracking_uri") else " (MLFLOW_TRACKING_URI)"
    yield finding(
        ctx,
        "E-MLFLOW-STORE",
        key,
        f"{uri!r}{source} is MLflow's file store, which the MLflow this NeMo-RL locks "
        f"({cite(ctx.nemo_rl_version, LOCKED)}, >= 3.13) refuses with an MlflowException when "
        f"the Logger looks up the experiment ({cite(ctx.nemo_rl_version, EXPERIMENT_LOOKUP)}), "
        "before training",
        "use a database store, e.g. logger.mlflow.tracking_uri=sqlite:////abs/path/mlflow.db, "
        f"or a tracking server (http://host:5000); or export {OPT_OUT}=true to keep the file "
        "store",
    )
