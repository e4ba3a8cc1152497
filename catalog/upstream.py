"""The upstream versions this catalog is written against: the one place the pin lives."""

NEMO_RL_REPO = "NVIDIA-NeMo/RL"
NEMO_RL_COMMIT = "7ea279abfbeb698b092856d0dab61e7cf39bc909"
NEMO_RL_DATE = "2026-08-22"
NEMO_GYM_REPO = "NVIDIA-NeMo/Gym"
NEMO_GYM_COMMIT = "07d6b0d07b22fcf530b4c211dae2ee23100428e4"
NEMO_GYM_DATE = "2026-08-22"

# Where NeMo-RL lives inside its container, and where its Gym submodule sits in a checkout.
NEMO_RL_CONTAINER_PATH = "/opt/nemo-rl"
NEMO_RL_HOME_VAR = "NEMO_RL_HOME"
GYM_SUBDIR = "3rdparty/Gym-workspace/Gym"
