"""What every command promises: the exit-code scheme (0 ok, 1 findings, 2 usage/setup, 70
internal error, 130 interrupted), exactly one JSON document with --json (errors included), and
no traceback unless --debug asks for it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from catalog.errors import EXIT_FINDINGS, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from steps.cli import COMMANDS, main

REPO = Path(__file__).resolve().parent.parent
GYM_ROW = {
    "responses_create_params": {"input": [{"role": "user", "content": "2+2?"}]},
    "agent_ref": {"type": "responses_api_agents", "name": "math_with_judge_simple_agent"},
    "question": "2+2?",
    "expected_answer": "4",
}


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_document(out: str) -> dict:
    """stdout is exactly one JSON document (json.loads rejects a second one)."""
    doc = json.loads(out)
    assert isinstance(doc, dict) and isinstance(doc["findings"], list)
    return doc


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(GYM_ROW) + "\n", encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"prompt": "q"}) + "\n", encoding="utf-8")
    broken = tmp_path / "cat"
    (broken / "mine/bad").mkdir(parents=True)
    (broken / "mine/bad/step.toml").write_text("[step\n", encoding="utf-8")
    return {"good": good, "bad": bad, "broken_root": broken, "missing": tmp_path / "missing"}


COMPOSABLE = ["--from", "data_blend,hf_checkpoint", "--to", "nemo_rl_checkpoint"]

# (command line, expected exit code); {good} etc. are filled from the `files` fixture.
CASES = [
    (["list"], EXIT_OK),
    (["list", "--consumes", "no_such_type"], EXIT_USAGE),
    (["list", "--catalog", "{missing}"], EXIT_USAGE),
    (["list", "--catalog", "{broken_root}"], EXIT_USAGE),
    (["list", "--no-such-flag"], EXIT_USAGE),
    (["show", "rlvr"], EXIT_OK),
    (["show", "no_such_step"], EXIT_USAGE),
    (["show"], EXIT_USAGE),
    (["check", "--catalog", "{missing}"], EXIT_USAGE),
    (["check", "--catalog", "{broken_root}", "--no-builtin"], EXIT_FINDINGS),
    (["check", "--no-builtin"], EXIT_USAGE),
    (["docs", "--catalog", "{missing}", "--no-builtin"], EXIT_USAGE),
    (["docs", "--bogus"], EXIT_USAGE),
    (["validate", "nemo_gym_jsonl", "{good}"], EXIT_OK),
    (["validate", "preference_jsonl", "{bad}"], EXIT_FINDINGS),
    (["validate", "nemo_gym_jsonl", "{missing}"], EXIT_USAGE),
    (["validate", "no_such_type", "{good}"], EXIT_USAGE),
    (["validate", "nemo_gym_jsonl", "{good}", "--step", "no_such_step"], EXIT_USAGE),
    (["validate", "nemo_gym_jsonl", "{good}", "--max-errors", "many"], EXIT_USAGE),
    (["compose", "--from", "hf_checkpoint", "--to", "data_blend"], EXIT_FINDINGS),
    (["compose", "--from", "hf_checkpoint", "--to", "hf_checkpoint"], EXIT_USAGE),
    (["compose", "--from", "data_blend", "--to", "no_such_type"], EXIT_USAGE),
    (["compose", "--to", "hf_checkpoint"], EXIT_USAGE),
    (["compose", *COMPOSABLE], EXIT_OK),
    (["compose", *COMPOSABLE, "-o", "{good}/x.yaml"], EXIT_USAGE),  # a file is no folder
    (["no_such_command"], EXIT_USAGE),
    ([], EXIT_USAGE),
]
IDS = [" ".join(argv) or "(nothing)" for argv, _ in CASES]


def _fill(argv: list[str], files: dict[str, Path]) -> list[str]:
    return [a.format(**{k: str(v) for k, v in files.items()}) for a in argv]


@pytest.mark.parametrize(("argv", "expected"), CASES, ids=IDS)
def test_exit_code_scheme(argv, expected, files, capsys):
    code, _, err = cli(capsys, *_fill(argv, files))
    assert code == expected, err
    assert "Traceback" not in err
    if expected == EXIT_FINDINGS or (expected == EXIT_USAGE and argv and argv[0] in COMMANDS):
        assert re.search(r"\bE-[A-Z-]+\b|error:", err), err  # the reason, with its code


JSON_CASES = [(argv, code) for argv, code in CASES if argv and argv[0] in COMMANDS]


@pytest.mark.parametrize(("argv", "expected"), JSON_CASES, ids=[" ".join(a) for a, _ in JSON_CASES])
def test_json_is_one_document_with_errors_as_findings(argv, expected, files, capsys):
    code, out, err = cli(capsys, *_fill(argv, files), "--json")
    assert code == expected
    doc = one_document(out)
    assert err == ""
    assert doc["ok"] is (expected == EXIT_OK)
    if expected != EXIT_OK:
        errors = [f for f in doc["findings"] if f["severity"] == "error"]
        assert errors and all(re.fullmatch(r"E-[A-Z0-9-]+", f["code"]) for f in errors)
        assert all(f["message"] for f in errors)


def test_json_payloads_carry_the_result(files, capsys):
    assert one_document(cli(capsys, "show", "dpo", "--json")[1])["step"]["id"] == "rl/nemo_rl/dpo"
    chain = one_document(cli(capsys, "compose", *COMPOSABLE, "--json")[1])
    assert chain["ok"] and chain["chain"][0] == "data_prep/rl_prep"
    assert chain["pipeline"]["stages"] and chain["text"].startswith("# Composed")
    report = one_document(
        cli(capsys, "validate", "nemo_gym_jsonl", str(files["good"]), "--json")[1]
    )
    assert report["ok"] and report["rows"] == 1


def test_a_finding_renders_its_fix_on_its_own_indented_line(capsys):
    code, _, err = cli(capsys, "show", "dpoo")
    assert code == EXIT_USAGE
    assert err.splitlines() == [
        "E-STEP-UNKNOWN unknown step 'dpoo'",
        "  Fix: did you mean rl/nemo_rl/dpo?",
    ]


def test_bare_command_prints_help_on_stderr_and_exits_2(capsys):
    code, out, err = cli(capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert "usage: python -m steps" in err and "list" in err


def test_help_mentions_debug_and_the_exit_codes(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "--debug" in out and "70 internal error" in out


# --- internal errors and interrupts: a command with a planted bug -------------------------

CRASHING_COMMAND = """
HELP = "a command with a bug"


def add_arguments(parser):
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--interrupt", action="store_true")
    parser.add_argument("--wrapped-interrupt", action="store_true")
    parser.add_argument("--string-interrupt", action="store_true")


class Named:
    def __set_name__(self, owner, name):
        raise KeyboardInterrupt  # Ctrl-C while an import builds a class


def run(args):
    if args.interrupt:
        raise KeyboardInterrupt
    if args.wrapped_interrupt:  # Python wraps what __set_name__ raises in a RuntimeError
        type("Model", (), {"field": Named()})
    if args.string_interrupt:  # through code compiled from a string, as dataclasses' methods
        import catalog.errors, runners.monitor.terminal  # what reporting it imports: no exec after
        exec("raise KeyboardInterrupt")
    return {}["planted bug"]
"""


@pytest.fixture
def crashing(tmp_path, monkeypatch) -> str:
    (tmp_path / "crashing_cmd.py").write_text(CRASHING_COMMAND, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(COMMANDS, "crash", "crashing_cmd")
    return "crash"


def test_an_internal_error_is_one_finding_exit_70_without_traceback(crashing, capsys):
    code, out, err = cli(capsys, crashing)
    assert (code, out) == (EXIT_INTERNAL, "")
    assert "Traceback" not in err
    head, fix = err.splitlines()
    assert head == "E-INTERNAL internal error in `python -m steps crash`: KeyError: 'planted bug'"
    assert fix.startswith("  Fix: this is a bug in steps") and "--debug" in fix


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_before_or_after_the_command_adds_the_traceback(where, crashing, capsys):
    argv = ["--debug", crashing] if where == "before" else [crashing, "--debug"]
    code, _, err = cli(capsys, *argv)
    assert code == EXIT_INTERNAL
    assert err.startswith("Traceback (most recent call last):")
    assert "KeyError: 'planted bug'" in err and "E-INTERNAL" in err


def test_an_internal_error_with_json_is_the_one_document(crashing, capsys):
    code, out, err = cli(capsys, crashing, "--json")
    assert (code, err) == (EXIT_INTERNAL, "")
    doc = one_document(out)
    assert doc["ok"] is False and doc["exit_code"] == EXIT_INTERNAL
    assert doc["findings"][0]["code"] == "E-INTERNAL"


@pytest.mark.parametrize("how", ["--interrupt", "--wrapped-interrupt"])
def test_ctrl_c_exits_130(crashing, capsys, how):
    code, out, err = cli(capsys, crashing, how)
    assert (code, out) == (EXIT_INTERRUPTED, "")
    assert "interrupted" in err and "Traceback" not in err and "E-INTERNAL" not in err


def test_ctrl_c_through_code_compiled_from_a_string_exits_130_not_killed_by_sigint(
    crashing, tmp_path
):
    """CPython marks a KeyboardInterrupt that left string-compiled code as unhandled and, at
    the exit of `python -m`, kills itself with SIGINT (-2) though main() returned 130."""
    (tmp_path / "sitecustomize.py").write_text(  # the planted command, in the child too
        "from steps.cli import COMMANDS\nCOMMANDS['crash'] = 'crashing_cmd'\n", encoding="utf-8"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    res = subprocess.run(
        [sys.executable, "-m", "steps", "crash", "--string-interrupt"],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == EXIT_INTERRUPTED, (res.returncode, res.stderr)
    assert "E-INTERRUPTED" in res.stderr


# --- unreadable files (root reads everything: drop CAP_DAC_OVERRIDE in a child) -----------

SETPRIV = shutil.which("setpriv")
CAPS = "-dac_override,-dac_read_search"


def as_unprivileged(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "steps", *argv]
    if os.geteuid() == 0:
        cmd = [SETPRIV, f"--inh-caps={CAPS}", f"--bounding-set={CAPS}", *cmd]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(os.geteuid() == 0 and SETPRIV is None, reason="root without setpriv")
def test_unreadable_inputs_are_setup_errors_exit_2(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps(GYM_ROW) + "\n", encoding="utf-8")
    root = tmp_path / "cat"
    (root / "mine/x").mkdir(parents=True)
    manifest = root / "mine/x/step.toml"
    manifest.write_text('[step]\nid = "mine/x"\n', encoding="utf-8")
    data.chmod(0)
    manifest.chmod(0)
    validate = as_unprivileged("validate", "nemo_gym_jsonl", str(data), cwd=tmp_path)
    assert validate.returncode == EXIT_USAGE, validate.stderr
    assert (
        f"{data}: E-INPUT-UNREADABLE cannot read the input (Permission denied)" in validate.stderr
    )
    listed = as_unprivileged("list", "--catalog", str(root), "--json", cwd=tmp_path)
    assert listed.returncode == EXIT_USAGE, listed.stderr
    (finding,) = json.loads(listed.stdout)["findings"]
    assert finding["code"] == "E-MANIFEST-TOML" and "Permission denied" in finding["message"]


# --- the README documents the scheme ------------------------------------------------------


def test_readme_exit_code_table_matches_the_codes():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Exit codes") :].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", section, flags=re.MULTILINE)
    codes = {int(code): meaning for code, meaning in rows}
    assert sorted(codes) == sorted(
        [EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED]
    )
    assert "usage" in codes[EXIT_USAGE] and "findings" in codes[EXIT_FINDINGS]
