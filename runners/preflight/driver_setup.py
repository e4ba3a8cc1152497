"""What the example script's driver does before any GPU work and refuses there: the tokenizer it
loads, the logger backends it starts (the CPU oracle's misses, shared/oracle/REPORT.md), and the
MLflow store NeMo-RL's own MLflow (>= 3.13, PR 22773) refuses."""

from __future__ import annotations

import netrc
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import urlparse

from catalog.errors import Finding
from runners.preflight import PreflightContext, rule
from runners.preflight.topology import UNRESOLVED, cite, finding

LOGGER_READS = {  # Logger.__init__ reads logger.<backend> when <backend>_enabled
    "wandb": {"0.6.0": "logger.py:908", "0.7.0": "logger.py:965", "pin": "logger.py:988"},
    "mlflow": {"0.6.0": "logger.py:930", "0.7.0": "logger.py:987", "pin": "logger.py:1010"},
}
WANDB_OFFLINE = {"offline", "disabled", "dryrun"}
MLFLOW_OPT_OUT = "MLFLOW_ALLOW_FILE_STORE"
MLFLOW_LOOKUP = {"0.7.0": "nemo_rl/utils/logger.py:852", "pin": "nemo_rl/utils/logger.py:875"}
MLFLOW_LOCKED = {"0.7.0": "3.14.0", "pin": "3.15.1"}


def _local_path(name: str) -> bool:
    """A name `from_pretrained` can only read as a folder: a hub id is `org/name` at most."""
    return name.startswith(("/", "./", "../", "~")) or name.count("/") > 1


@rule("tokenizer_path")
def tokenizer_path(ctx: PreflightContext) -> Iterator[Finding]:
    """E-TOKENIZER-PATH: policy.tokenizer.name as a local folder exists (get_tokenizer raises
    OSError before anything starts)."""
    name = ctx.get("policy.tokenizer.name")
    if not isinstance(name, str) or name in ("", UNRESOLVED) or ctx.remote is not None:
        return  # on a cluster the path is judged where the job runs
    if name == ctx.get("policy.model_name") or not _local_path(name):
        return  # the model input's own check, or a hub id
    if not Path(name).expanduser().is_dir():
        yield finding(
            ctx,
            "E-TOKENIZER-PATH",
            "policy.tokenizer.name",
            f"{name} is not a folder, so NeMo-RL's get_tokenizer fails reading it as a hub id",
            "point it at the tokenizer's folder (often the model's: ${policy.model_name})",
        )


@rule("logger_backends")
def logger_backends(ctx: PreflightContext) -> Iterator[Finding]:
    """E-LOGGER-SECTION: an enabled logger backend has its section (KeyError otherwise)."""
    logger = ctx.get("logger")
    if not isinstance(logger, dict):
        return
    for backend, places in LOGGER_READS.items():
        if logger.get(f"{backend}_enabled") and not isinstance(logger.get(backend), dict):
            yield finding(
                ctx,
                "E-LOGGER-SECTION",
                f"logger.{backend}",
                f"logger.{backend}_enabled is true but there is no logger.{backend} section "
                f"(read at {cite(ctx.nemo_rl_version, places)})",
                f"add logger.{backend} (e.g. +logger.{backend}={{}}) or set "
                f"logger.{backend}_enabled=false",
            )


def _netrc_has(env: Mapping[str, str], host: str) -> bool:
    home = env.get("HOME") or os.path.expanduser("~")
    path = env.get("NETRC") or os.path.join(home, ".netrc")
    try:
        return netrc.netrc(path).authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return False


@rule("wandb_credentials")
def wandb_credentials(ctx: PreflightContext) -> Iterator[Finding]:
    """E-WANDB-KEY: W&B online needs an API key in the job's environment or ~/.netrc (wandb.init
    raises UsageError in Logger setup). Judged for a launch here, whose environment is known."""
    launch = ctx.local_launch
    if launch is None or not ctx.get("logger.wandb_enabled"):
        return
    env = launch.env
    section = ctx.get("logger.wandb")
    mode = (section.get("mode") if isinstance(section, dict) else None) or env.get("WANDB_MODE")
    if str(mode or "").lower() in WANDB_OFFLINE or env.get("WANDB_API_KEY"):
        return
    host = urlparse(env.get("WANDB_BASE_URL") or "https://api.wandb.ai").hostname or ""
    if not _netrc_has(env, host):
        yield finding(
            ctx,
            "E-WANDB-KEY",
            "logger.wandb_enabled",
            f"W&B is on but the job has no API key (WANDB_API_KEY unset, no {host} entry in "
            "~/.netrc): wandb.init refuses in NeMo-RL's Logger setup",
            "run `wandb login` (writes ~/.netrc), export WANDB_API_KEY, set WANDB_MODE=offline, "
            "or logger.wandb_enabled=false",
        )


@rule("megatron_arch_list", versions="0.5.0+")
def megatron_arch_list(ctx: PreflightContext) -> Iterator[Finding]:
    """E-MEGATRON-ARCH-LIST: a Megatron policy needs TORCH_CUDA_ARCH_LIST in a local launch's
    environment (Policy.__init__ raises; NeMo-RL's container sets it, a bare venv does not)."""
    launch = ctx.local_launch
    if launch is None or ctx.get("policy.megatron_cfg.enabled") is not True:
        return
    if "TORCH_CUDA_ARCH_LIST" in launch.env:  # upstream tests presence, not the value
        return
    yield finding(
        ctx,
        "E-MEGATRON-ARCH-LIST",
        "policy.megatron_cfg.enabled",
        "the Megatron backend is on but TORCH_CUDA_ARCH_LIST is not set where NeMo-RL starts: "
        "Policy.__init__ raises RuntimeError before any GPU work (nemo_rl/models/policy/"
        "lm_policy.py, v0.7.0 line 121)",
        "export TORCH_CUDA_ARCH_LIST for your GPUs (e.g. '9.0' for H100, '9.0 10.0'), as "
        "NeMo-RL's container does, or use the DTensor backend (policy.dtensor_cfg.enabled=true)",
    )


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
    if env is not None and str(env.get(MLFLOW_OPT_OUT, "")).lower() in ("true", "1"):
        return
    source = "" if key.endswith("tracking_uri") else " (MLFLOW_TRACKING_URI)"
    yield finding(
        ctx,
        "E-MLFLOW-STORE",
        key,
        f"{uri!r}{source} is MLflow's file store, which the MLflow this NeMo-RL locks "
        f"({cite(ctx.nemo_rl_version, MLFLOW_LOCKED)}, >= 3.13) refuses with an MlflowException "
        f"when the Logger looks up the experiment ({cite(ctx.nemo_rl_version, MLFLOW_LOOKUP)}), "
        "before training",
        "use a database store, e.g. logger.mlflow.tracking_uri=sqlite:////abs/path/mlflow.db, "
        f"or a tracking server (http://host:5000); or export {MLFLOW_OPT_OUT}=true to keep the "
        "file store",
    )
