"""`diagnose` on a corpus of failure log excerpts written from public reports
(tests/data/failures/README.md names each source): every case is named as its expected kind,
through both prefilter engines (grep -F, and the compiled regex when grep is absent)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from catalog.failures import BY_NAME, keywords
from runners.launch.slurm.state import exit_code_of
from runners.monitor.classify import LogClassifier, diagnose
from runners.monitor.logscan import grep_script, parse_grep, python_prefilter

CORPUS = Path(__file__).resolve().parent / "data" / "failures"
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "expected.json").is_file())


def _files(case: Path) -> list[Path]:
    """Driver/worker logs first, then the batch output, as observe.log_files orders them."""
    return sorted(case.glob("*.log")) + sorted(case.glob("*.out"))


def _classify_python(case: Path) -> LogClassifier:
    classifier = LogClassifier()
    for path in _files(case):
        with path.open("rb") as fh:
            for number, line in python_prefilter(fh):
                classifier.feed(path.name, number, line)
    return classifier


def _classify_grep(case: Path) -> LogClassifier:
    script = grep_script([str(p) for p in _files(case)])
    out = subprocess.run(["bash", "-s"], input=script.encode(), capture_output=True, check=True)
    classifier = LogClassifier()
    for path, number, line in parse_grep(io.BytesIO(out.stdout)):
        classifier.feed(Path(path).name, number, line)
    return classifier


ENGINES = {"python": _classify_python, "grep": _classify_grep}


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("name", CASES)
def test_each_corpus_case_is_named_as_its_expected_kind(name, engine):
    if engine == "grep" and shutil.which("grep") is None:
        pytest.skip("grep is not installed")
    case = CORPUS / name
    want = json.loads((case / "expected.json").read_text())
    code = exit_code_of(want["state"], want["exit_code"])
    got = diagnose(ENGINES[engine](case), want["state"], code, "sacct")
    assert got.kind == want["kind"], got
    if want["kind"] is None:
        return
    assert got.retryable == BY_NAME[want["kind"]].retryable
    if "retryable" in want:
        assert got.retryable is want["retryable"]
    if "method" in want:
        assert got.method == want["method"]
    if "fix_has" in want:
        assert want["fix_has"] in got.fix
    if "frame_has" in want:
        assert any(want["frame_has"] in e.text for e in got.evidence), got.evidence
    if "message_has" in want:
        assert want["message_has"] in (got.message or "")
    lines = [e for e in got.evidence if e.line is not None]
    if "file" in want:
        assert lines and lines[0].path == want["file"]
    if "line_has" in want:
        assert any(want["line_has"] in e.text for e in lines)


def test_evidence_points_at_the_real_file_and_line():
    case = CORPUS / "gpu_oom_in_get_logprobs"
    got = diagnose(_classify_python(case), "FAILED", 1, "sacct")
    text = (case / "ray-driver.log").read_text().splitlines()
    for ev in got.evidence:
        if ev.line is not None:
            assert text[ev.line - 1].strip().endswith(ev.text[-40:])


def test_the_first_error_wins_over_the_loudest():
    """An NCCL timeout on one rank, then OOM and dead actors on the others: the timeout."""
    case = CORPUS / "nccl_timeout_before_the_oom_it_caused"
    got = diagnose(_classify_python(case), "FAILED", 1, "")
    log = (case / "ray-driver.log").read_text()
    assert log.index("Watchdog caught") < log.index("OutOfMemoryError") < log.index("ActorDied")
    assert got.kind == "nccl_timeout"
    assert "Watchdog caught collective operation timeout" in got.evidence[0].text


def test_an_error_followed_by_training_steps_was_survived():
    got = diagnose(_classify_python(CORPUS / "survived_traceback_then_completed"), "FAILED", 1, "")
    assert got.kind == "unknown"  # the early traceback is not why it failed


def test_a_specific_error_before_a_time_limit_is_why_the_job_hung():
    classifier = LogClassifier()
    log = b"===== Step 3/9 =====\nTotal step time: 4.0s\nNCCL error in: x.cpp:1, unhandled system\n"
    for number, line in python_prefilter(io.BytesIO(log)):
        classifier.feed("ray-driver.log", number, line)
    got = diagnose(classifier, "TIMEOUT", 143, "sacct")
    assert got.kind == "nccl_error" and "time limit" in (got.note or "")


def test_a_running_job_with_no_error_has_no_diagnosis_yet():
    got = diagnose(LogClassifier(), "RUNNING", None, "sacct")
    assert got.kind is None and "so far" in got.title


def test_the_chunked_prefilter_matches_grep_across_chunk_edges(tmp_path):
    text = "".join(
        f"line {i} Total step time: {i}s\n" if i % 7 == 0 else f"x{i}\n" for i in range(500)
    )
    text += "no newline at the end: EngineDeadError"
    path = tmp_path / "log"
    path.write_bytes(text.encode())
    with path.open("rb") as fh:
        small = list(python_prefilter(fh, chunk_size=64))
    with path.open("rb") as fh:
        whole = list(python_prefilter(fh))
    out = subprocess.run(
        ["bash", "-s"], input=grep_script([str(path)]).encode(), capture_output=True
    )
    by_grep = [(n, line) for _, n, line in parse_grep(io.BytesIO(out.stdout))]
    assert small == whole == by_grep
    assert by_grep[-1] == (501, b"no newline at the end: EngineDeadError")


def test_every_signature_keyword_reaches_the_prefilter_and_every_signature_has_a_source():
    words = keywords()
    assert "Error" in words and "ActorDiedError" not in words  # covered by "Error"
    for kind in BY_NAME.values():
        for sig in kind.signatures:
            assert any(w in sig.keyword for w in words), sig
            assert sig.source, f"{kind.name}: a signature needs its source"
