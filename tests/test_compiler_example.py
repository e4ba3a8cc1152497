"""The worked example in compiler.py's docstring is true: its two files, compiled with its
overrides, give the values and places it shows."""

from __future__ import annotations

import ast
import re

from runners.config import compiler

DOC = compiler.__doc__ or ""


def _example_files() -> dict[str, str]:
    """base.yaml and child.yaml as the docstring draws them, side by side."""
    block = DOC.split("A worked example", 1)[1].split(">>>", 1)[0].splitlines()
    header = next(i for i, line in enumerate(block) if "# base.yaml" in line)
    cut = block[header].index("# child.yaml")
    files = {"base.yaml": [], "child.yaml": []}
    for line in block[header + 1 :]:
        files["base.yaml"].append(line[:cut].removeprefix("    ").rstrip())
        files["child.yaml"].append(line[cut:].rstrip())
    return {name: "\n".join(lines) + "\n" for name, lines in files.items()}


def _session() -> list[tuple[str, str]]:
    """(statement, what it prints) for each `>>>` line of the docstring."""
    steps = re.findall(r">>> (.+)\n((?:    (?!>>>).+\n)*)", DOC)
    return [(code, " ".join(out.split())) for code, out in steps]


def test_the_docstrings_worked_example_gives_what_it_shows(tmp_path, monkeypatch):
    for name, text in _example_files().items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    (call, _), *shown = _session()
    args = ast.parse(call).body[0].value.args  # type: ignore[attr-defined]
    c = compiler.compile_config(*(ast.literal_eval(a) for a in args))
    assert len(shown) == 2
    for expression, value in shown:
        assert eval(expression, {"c": c}) == ast.literal_eval(value), expression
