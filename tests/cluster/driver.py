"""Stand-in for a NeMo-RL example script: records what it was given, then exits as asked.

It writes argv, cwd, the config it was pointed at and the NAMES of the environment to
$FAKE_NEMO_RL_RECORD, says whether each variable in $FAKE_EXPECT_SECRETS arrived and a short
sha256 of its value (never the value itself), prints $FAKE_TICKS lines one per
$FAKE_TICK_SECONDS, then the lines of $FAKE_LOG_FILE (a NeMo-RL driver log excerpt: steps, a
failure signature), and exits with $FAKE_EXIT.
"""

import argparse
import hashlib
import json
import os
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--config")
args, overrides = parser.parse_known_args()
with open(args.config, encoding="utf-8") as fh:
    text = fh.read()
expected = os.environ.get("FAKE_EXPECT_SECRETS", "").split()
record = {
    "argv": sys.argv,
    "cwd": os.getcwd(),
    "config_arg": args.config,
    "config_text": text,
    "overrides": overrides,
    "env_names": sorted(os.environ),
    "secrets_present": {n: bool(os.environ.get(n)) for n in expected},
    "secrets_sha256": {
        n: hashlib.sha256(os.environ[n].encode()).hexdigest()[:16]
        for n in expected
        if n in os.environ
    },
}
if os.environ.get("FAKE_NEMO_RL_RECORD"):
    with open(os.environ["FAKE_NEMO_RL_RECORD"], "w", encoding="utf-8") as fh:
        json.dump(record, fh)
print(f"driver started: {os.path.basename(sys.argv[0])} --config {args.config}", flush=True)
for i in range(int(os.environ.get("FAKE_TICKS", "0"))):
    print(f"tick {i}", flush=True)
    time.sleep(float(os.environ.get("FAKE_TICK_SECONDS", "1")))
if os.environ.get("FAKE_LOG_FILE"):
    with open(os.environ["FAKE_LOG_FILE"], encoding="utf-8") as fh:
        sys.stdout.write(fh.read())
print("driver done", flush=True)
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
