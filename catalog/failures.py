"""How NeMo-RL jobs fail on clusters: the kinds `diagnose` names, as data (FAILURES.md is
generated from it). Each kind says whether a retry can help (a chain resubmits only those), the
log signatures that reveal it (from public threads: `sources`), the Slurm states that imply it
and the setting that usually fixes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Signature:
    """One log line shape: `keyword` (a literal the line contains) then `pattern` (re.search)."""

    keyword: str
    pattern: str = ""
    source: str = ""

    @property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern or re.escape(self.keyword))


@dataclass(frozen=True)
class FailureKind:
    """A named way a job ends; `rank` orders causes before consequences (lower = cause)."""

    name: str
    title: str
    retryable: bool
    rank: int
    meaning: str
    fix: str
    signatures: tuple[Signature, ...] = ()
    sources: tuple[str, ...] = ()
    slurm_states: tuple[str, ...] = ()


KINDS: tuple[FailureKind, ...] = (
    FailureKind(
        "time_limit",
        "time limit",
        True,
        0,
        "Slurm stopped the job at its --time (SIGTERM, then SIGKILL): NeMo-RL saves nothing then.",
        "resubmit (NeMo-RL resumes from the latest complete step_N); set "
        "checkpointing.checkpoint_must_save_by below the profile's `time` so a segment ends with "
        "a save",
        (Signature("DUE TO TIME LIMIT", source="Slurm slurmstepd"),),
        ("NVIDIA-NeMo/Gym resume_script.py", "Megatron-Bridge setup_experiment.py"),
        ("TIMEOUT", "DEADLINE"),
    ),
    FailureKind(
        "preemption",
        "preemption",
        True,
        0,
        "The scheduler took the nodes back for another job.",
        "resubmit; keep checkpointing.save_period short enough that a preemption loses little",
        (Signature("DUE TO PREEMPTION", source="Slurm slurmstepd"),),
        ("NVIDIA-NeMo/Gym resume_script.py",),
        ("PREEMPTED",),
    ),
    FailureKind(
        "node_failure",
        "node failure",
        True,
        0,
        "A node died or could not start the job's step.",
        'resubmit; if the same node fails again, exclude it (`sbatch_args = ["--exclude=NODE"]`)',
        (
            Signature("DUE TO NODE FAILURE", source="Slurm slurmstepd"),
            Signature("Node failure on", r"srun: error: Node failure on", "Slurm srun"),
            Signature("Memory required by task is not available", source="NVIDIA-NeMo/RL#1019"),
        ),
        ("NVIDIA-NeMo/Gym resume_script.py", "NVIDIA-NeMo/RL#1019"),
        ("NODE_FAIL", "BOOT_FAIL"),
    ),
    FailureKind(
        "no_container_support",
        "cluster has no container support (pyxis)",
        False,
        0,
        "srun does not know `--container-image`: the cluster has no pyxis/enroot plugin, so no "
        "job with a `container_image` can start there; a retry fails the same way.",
        "run where pyxis is installed (`srun --help | grep container-image` on a login node "
        "shows it), or drop `container_image` from the profile and set `nemo_rl_dir` to a "
        "NeMo-RL checkout with its environment on the nodes",
        (
            Signature(
                "unrecognized option",
                r"unrecognized option '?--(?:no-)?container-",
                "Slurm srun without the pyxis SPANK plugin (NVIDIA/pyxis)",
            ),
        ),
        ("NVIDIA/pyxis",),
    ),
    FailureKind(
        "host_oom",
        "host out of memory",
        False,
        1,
        "The node's RAM ran out: the kernel or Ray killed a process (often a Ray worker).",
        "lower host memory (fewer dataloader workers, no CPU offload: "
        "policy.dtensor_cfg.cpu_offload=false) or ask Slurm for the node's memory "
        '(`sbatch_args = ["--mem=0"]`)',
        (
            Signature("Detected", r"oom-kill event", "UNINETTSigma2 common_job_failures"),
            Signature("OOM)", r"killed due to memory pressure", "hiyouga/EasyR1#185"),
            Signature(
                "OutOfMemoryError", r"running low on memory", "ray.exceptions.OutOfMemoryError"
            ),
        ),
        ("UNINETTSigma2 docs common_job_failures.md", "hiyouga/EasyR1#185"),
        ("OUT_OF_MEMORY",),
    ),
    FailureKind(
        "gpu_oom",
        "GPU out of memory",
        False,
        1,
        "CUDA memory ran out, often inside a Ray actor (the method is named).",
        "depends on where: see the method's setting below (e.g. policy.logprob_chunk_size for "
        "get_logprobs)",
        (
            Signature("OutOfMemoryError", r"OutOfMemoryError", "NVIDIA-NeMo/RL#3793, #2871"),
            Signature(
                "CUDA", r"CUDA (?:out of memory|[Ee]rror: out of memory)", "volcengine/verl#302"
            ),
        ),
        ("NVIDIA-NeMo/RL#3793", "NVIDIA-NeMo/RL#2871", "volcengine/verl#302"),
    ),
    FailureKind(
        "nccl_timeout",
        "NCCL timeout",
        True,
        2,
        "A collective waited past its timeout: one rank hung or died (its own error comes first).",
        "look for an earlier error on another rank; if none and it repeats at the same step, "
        "check the network (NCCL_DEBUG=INFO in the profile's env)",
        (
            Signature("Watchdog caught collective operation timeout", source="OpenRLHF#624"),
            Signature("ProcessGroupNCCL", r"watchdog got stuck", "om-ai-lab/VLM-R1#257"),
            Signature("WorkNCCL(", r"WorkNCCL\(.*(?:[Tt]imeout|timed out|ran for)", "OpenRLHF#624"),
        ),
        ("OpenRLHF/OpenRLHF#624", "om-ai-lab/VLM-R1#257", "NVIDIA/nccl#1284"),
    ),
    FailureKind(
        "nccl_error",
        "NCCL error",
        True,
        2,
        "NCCL failed a collective (network, shared memory in containers, a peer gone).",
        "for `unhandled system error` in containers set NCCL_SHM_DISABLE=1 in the profile's env "
        "(NVIDIA-NeMo/RL#564); NCCL_DEBUG=INFO names the failing link",
        (
            Signature(
                "Error",
                r"nccl(?:Remote|System|Internal|UnhandledCuda|InvalidUsage)Error",
                "Megatron-Bridge PR#4480 (ncclRemoteError)",
            ),
            Signature("NCCL error", source="NVIDIA-NeMo/RL#564"),
        ),
        ("NVIDIA-NeMo/RL#564", "NVIDIA-NeMo/Megatron-Bridge PR#4480"),
    ),
    FailureKind(
        "hf_hub_unreachable",
        "Hugging Face hub unreachable",
        True,
        3,
        "A model, tokenizer or dataset was fetched from huggingface.co and the node had no route.",
        "download it once into HF_HOME on shared storage and set HF_HUB_OFFLINE=1 in the "
        "profile's env",
        (
            Signature(
                "We couldn't connect",
                r"couldn't connect to '?https://huggingface\.co",
                "Megatron-Bridge (reported list)",
            ),
            Signature("Max retries", r"huggingface\.co", "requests/urllib3 via huggingface_hub"),
            Signature("LocalEntryNotFoundError", source="huggingface_hub"),
        ),
        ("NVIDIA-NeMo/Megatron-Bridge",),
    ),
    FailureKind(
        "job_code_missing",
        "our own code is missing on the node",
        False,
        3,
        "The job ran `steps` code (or its dependency pydantic) with a Python on the node that "
        "does not have it installed, or has a release it does not run on: the cluster, not "
        "NeMo-RL, lacks it.",
        "the Python that runs the job (the container's) lacks a package the copy of steps "
        "staged with the job needs (pydantic 2.6-3, PyYAML, omegaconf 2.2-2.4, msgspec, xxhash, "
        "tqdm), or has a release outside those ranges: use an image that has them (NeMo-RL's "
        "does), or set `steps_launcher` in the profile to a Python that has steps installed",
        (
            Signature(
                "No module named",
                r"No module named '?(?:steps|runners|catalog|pydantic(?:_core)?)(?:'|\.|\s*$)"
                r"|steps staged with this job needs",
                "shared/research/newcomer-2026-11.md (rl_prep --batch on a bare cluster)",
            ),
        ),
        ("shared/research/newcomer-2026-11.md",),
    ),
    FailureKind(
        "stage_input",
        "an earlier stage's output failed this stage's contract",
        False,
        3,
        "A pipeline stage queued before the stage it reads from had run derives that input when "
        "its job starts (`materialize-inputs`): it was missing, or its rows or checkpoint broke "
        "this stage's contract, so the program never started.",
        "read the findings printed above E-STAGE-INPUT in the stage's log; fix the stage that "
        "wrote the input (or this stage's config) and run the pipeline again",
        (Signature("E-STAGE-INPUT", source="steps materialize-inputs (pipeline --batch)"),),
        ("steps: runners/pipeline/materialize.py",),
    ),
    FailureKind(
        "version_skew",
        "missing module or version skew",
        False,
        3,
        "The job's Python environment does not match the NeMo-RL it runs (a module or a "
        "version the code was written for is missing).",
        "run the NeMo-RL the container was built for (`container_image` vs `nemo_rl_dir`; "
        "`run --dry-run` prints the version), or `uv sync` the checkout",
        (
            Signature("No module named", source="NVIDIA-NeMo/RL PR#4080"),
            Signature("ImportError", r"cannot import name", "Python ImportError"),
            Signature("Error", r"undefined symbol", "a compiled extension built for another torch"),
            Signature(
                "Error",
                r"\d+\.\d+\S* detected\..*written for",
                "research/real-nemo-rl-gpu-2026-11.md",
            ),
        ),
        ("NVIDIA-NeMo/RL PR#4080",),
    ),
    FailureKind(
        "ray_cluster_start",
        "Ray cluster did not start",
        True,
        3,
        "ray.sub could not bring up the Ray head or workers (a node, srun resources, the log "
        "dir not shared).",
        "read ray-head.log / ray-worker-*.log beside the driver log; `More processors requested` "
        "means CPUS_PER_WORKER (profile env) exceeds the node's CPUs",
        (
            Signature("[ERROR]", r"^\[ERROR\]", "NVIDIA-NeMo/RL ray.sub, PR#1022"),
            Signature("More processors requested than permitted", source="seen here (ray.sub)"),
            Signature(
                "Unable to create step",
                r"srun: error: Unable to create step",
                "NVIDIA-NeMo/RL#1019",
            ),
        ),
        ("NVIDIA-NeMo/RL PR#1022", "NVIDIA-NeMo/RL#1019"),
    ),
    FailureKind(
        "vllm_engine_dead",
        "vLLM engine dead",
        True,
        4,
        "The vLLM generation engine died (often its own OOM or a refit error, shown above it).",
        "if it repeats: lower policy.generation.vllm_cfg.gpu_memory_utilization or "
        "max_model_len; read the engine's first error",
        (
            Signature("EngineDeadError", source="vllm-project/vllm#25036"),
            Signature("EngineCore encountered", source="vllm-project/vllm#25036"),
            Signature("RPC call to", r"RPC call to \w+ timed out", "volcengine/verl#6583"),
        ),
        ("vllm-project/vllm#25036", "NVIDIA-NeMo/RL#2812", "volcengine/verl#6583"),
    ),
    FailureKind(
        "ray_worker_died",
        "Ray actor or worker died",
        True,
        5,
        "A Ray worker process ended unexpectedly: SIGKILL (often the host OOM killer) or a crash.",
        "find the dead worker's own last lines (its actor prefix above, ray-worker-*.log); a "
        "host OOM or segfault is the usual cause",
        (
            Signature("SYSTEM_ERROR", r"Worker exit type: SYSTEM_ERROR", "NVIDIA-NeMo/RL#2937"),
            Signature("ActorDiedError", source="Ray"),
            Signature("The actor died unexpectedly", source="Ray"),
            Signature("A worker died or was killed", source="verl-project/verl#472"),
            Signature("WorkerCrashedError", source="Ray"),
        ),
        ("NVIDIA-NeMo/RL#2937", "verl-project/verl#472"),
    ),
    FailureKind(
        "cancelled",
        "cancelled",
        False,
        6,
        "Someone (or a tool) cancelled the job: scancel, `steps cancel`, a stopped Ray job.",
        "nothing to fix; resubmit when wanted",
        (
            Signature(
                "CANCELLED AT", r"\*\*\* JOB \d+ ON \S+ CANCELLED AT \S+ \*\*\*", "Slurm slurmstepd"
            ),
        ),
        slurm_states=("CANCELLED", "STOPPED"),
    ),
    FailureKind(
        "python_exception",
        "Python exception",
        False,
        7,
        "The driver or an actor raised an exception none of the kinds above describe.",
        "read its last frame and message: usually a config value or a code path to fix",
    ),
    FailureKind(
        "unknown",
        "unknown",
        False,
        8,
        "The job failed and no log line matched a known signature (or no log was readable).",
        "read the last lines of the driver log and the batch output",
    ),
)

BY_NAME = {k.name: k for k in KINDS}

# GPU OOM: the setting that usually fixes it, by the Ray actor method it happened in.
OOM_FIXES: tuple[tuple[str, str], ...] = (
    (
        r"logprob|topk_logits",
        "policy.logprob_chunk_size (e.g. 512 with "
        "policy.defer_fp32_logits=true) or a smaller policy.logprob_batch_size",
    ),
    (
        r"^train",
        "a smaller policy.train_micro_batch_size, "
        "policy.dtensor_cfg.activation_checkpointing=true, or policy.dynamic_batching",
    ),
    (
        r"generat|sample",
        "a lower policy.generation.vllm_cfg.gpu_memory_utilization or max_model_len",
    ),
    (r"refit|update_weights|prepare_weights", "a smaller policy.refit_buffer_size_gb"),
)
OOM_DEFAULT_FIX = (
    "a smaller policy.train_micro_batch_size or policy.max_total_sequence_length, "
    "activation checkpointing, or policy.logprob_chunk_size"
)

# Lines every scan also needs: tracebacks (their frames and final line), actor methods, the
# training-progress lines that prove an earlier error was survived, and the termination marker.
TRACEBACK = "Traceback (most recent call last)"
FRAME = 'File "'
# Exception names without "Error": KeyboardInterrupt, ...Mismatch, and classes in a module
# named errors/exceptions (omegaconf.errors.UnsupportedInterpolationType).
EXCEPTION_WORDS = ("Error", "Exception", "Interrupt", "Mismatch", "errors.", "exceptions.")
PROGRESS = ("Total step time",)
TERMINATED = "SIGTERM received"


def keywords() -> list[str]:
    """The literals the prefilter looks for (grep -F; one compiled alternation), less those
    containing another (`Error` covers `ActorDiedError`). They start with capitals or symbols:
    rare first bytes keep grep's and the regex's first-character scan fast."""
    words = [s.keyword for k in KINDS for s in k.signatures]
    words = list(dict.fromkeys([*words, TRACEBACK, FRAME, *EXCEPTION_WORDS, *PROGRESS, TERMINATED]))
    return [w for w in words if not any(o != w and o in w for o in words)]


def oom_fix(method: str | None) -> str:
    """The setting that usually fixes a GPU OOM in `method` (a Ray actor method name)."""
    for pattern, fix in OOM_FIXES:
        if method and re.search(pattern, method):
            return fix
    return OOM_DEFAULT_FIX


def kind_for_state(state: str | None) -> FailureKind | None:
    """The kind a Slurm/Ray terminal state implies by itself (TIMEOUT -> time_limit)."""
    for kind in KINDS:
        if state and state in kind.slurm_states:
            return kind
    return None
