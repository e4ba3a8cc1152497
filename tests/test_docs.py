"""Generated docs: ARTIFACTS.md from the type graph and manifests, PATTERNS.md from pattern
files, the step.toml JSON Schema; deterministic, atomic, and what `check` compares against."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from catalog.discovery import BUILTIN_ROOT
from catalog.docs import docs_home, render_docs, source_checkout, write_docs
from catalog.manifest import json_schema_text
from steps.cli import main

REPO = Path(__file__).resolve().parent.parent

TYPES = """
[rows]
description = "Any rows."
layout = "jsonl"

[pairs]
description = "Preference | pairs."
is_a = ["rows"]
layout = "jsonl"
contract = "preference_rows"

[big_ckpt]
description = "A big checkpoint."
layout = "dir"
convert_to = [{ type = "small_ckpt", via = "convert/shrink" }]

[run_ckpt]
description = "A run's checkpoint."
is_a = ["big_ckpt"]
layout = "dir"

[small_ckpt]
description = "A small checkpoint."
layout = "dir"
"""


def _step(root: Path, sid: str, consumes: list[str], produces: list[str]) -> None:
    folder = root / sid
    folder.mkdir(parents=True)
    ports = []
    for kind, types in (("consumes", consumes), ("produces", produces)):
        for i, t in enumerate(types):
            ports.append(f'[[{kind}]]\nname = "p{i}"\ntype = "{t}"\n')
    folder.joinpath("step.toml").write_text(
        f'[step]\nid = "{sid}"\ncategory = "{sid.split("/")[0]}"\n\n' + "\n".join(ports),
        encoding="utf-8",
    )


@pytest.fixture
def root(tmp_path) -> Path:
    r = tmp_path / "cat"
    r.mkdir()
    (r / "types.toml").write_text(TYPES, encoding="utf-8")
    _step(r, "train/tune", ["pairs", "pairs", "big_ckpt"], ["run_ckpt"])
    _step(r, "train/generic", ["rows"], [])
    _step(r, "convert/shrink", ["big_ckpt"], ["small_ckpt"])
    (r / "patterns").mkdir()
    (r / "patterns" / "order_pairs.md").write_text(
        "---\nid: order_pairs\ntitle: Check pair order\ntags: [dpo, data]\n"
        "triggers: [new preference data, swapped columns]\nsteps: [train/tune]\n"
        "confidence: medium\n---\n\n## When to apply\n## What to do\n"
        "## Exceptions\n## References\n",
        encoding="utf-8",
    )
    return r


def _section(text: str, name: str) -> str:
    start = text.index(f"\n### {name}\n")
    end = text.find("\n### ", start + 1)
    return text[start : end if end != -1 else None]


def test_artifacts_lists_meaning_layout_contract_and_is_a(root):
    texts, findings = render_docs(root)
    assert findings == []
    pairs = _section(texts[root / "ARTIFACTS.md"], "pairs")
    assert "Preference | pairs." in pairs
    assert "layout: `jsonl`; contract: `preference_rows`" in pairs
    assert "- is_a: `rows`" in pairs


def test_artifacts_lists_converters_including_inherited_ones(root):
    text = render_docs(root)[0][root / "ARTIFACTS.md"]
    own = _section(text, "big_ckpt")
    inherited = _section(text, "run_ckpt")
    assert "converts to: `small_ckpt` via [`convert/shrink`](convert/shrink)" in own
    assert "(from `big_ckpt`)" not in own
    assert "`small_ckpt` via [`convert/shrink`](convert/shrink) (from `big_ckpt`)" in inherited


def test_artifacts_names_producers_consumers_and_is_a_acceptors(root):
    text = render_docs(root)[0][root / "ARTIFACTS.md"]
    pairs = _section(text, "pairs")
    assert "consumed by: [`train/tune`](train/tune) (`p0`, `p1`)" in pairs
    assert "also accepted (through is_a) by: [`train/generic`](train/generic)" in pairs
    assert "produced by: [`train/tune`](train/tune) (`p0`)" in _section(text, "run_ckpt")


def test_artifacts_mermaid_graph_has_is_a_convert_and_step_edges(root):
    text = render_docs(root)[0][root / "ARTIFACTS.md"]
    graph = text[text.index("```mermaid") : text.index("```", text.index("```mermaid") + 3)]
    assert "t_pairs -->|is_a| t_rows" in graph
    assert 't_big_ckpt -.->|"convert via convert/shrink"| t_small_ckpt' in graph
    assert "t_pairs --> s_train_tune" in graph
    assert "s_train_tune --> t_run_ckpt" in graph
    assert graph.count("t_pairs --> s_train_tune") == 1


def test_patterns_table_has_a_row_per_pattern_from_its_frontmatter(root):
    text = render_docs(root)[0][root / "PATTERNS.md"]
    row = next(line for line in text.splitlines() if "order_pairs" in line)
    assert row == (
        "| [`order_pairs`](patterns/order_pairs.md) | Check pair order | dpo, data "
        "| new preference data; swapped columns | train/tune | medium |"
    )


def test_malformed_pattern_is_left_out_of_the_table_and_reported(root):
    (root / "patterns" / "broken.md").write_text("---\nid: [\n---\n", encoding="utf-8")
    texts, findings = render_docs(root)
    assert "broken" not in texts[root / "PATTERNS.md"]
    assert [(f.code, Path(f.path).name) for f in findings] == [
        ("E-PATTERN-FRONTMATTER", "broken.md")
    ]


def test_docs_are_deterministic_and_sorted(root):
    first, _ = render_docs(root)
    second, _ = render_docs(root)
    assert first == second
    text = first[root / "ARTIFACTS.md"]
    headings = [line[4:] for line in text.splitlines() if line.startswith("### ")]
    assert headings == sorted(headings) == ["big_ckpt", "pairs", "rows", "run_ckpt", "small_ckpt"]


def test_schema_file_is_the_manifest_models_json_schema(root):
    texts, _ = render_docs(root)
    schema = texts[root / "step.schema.json"]
    assert schema == json_schema_text()
    assert json.loads(schema)["additionalProperties"] is False


def test_builtin_docs_live_at_the_repo_root_and_schema_in_catalog():
    home = docs_home(BUILTIN_ROOT)
    assert home.files() == [
        REPO / "ARTIFACTS.md",
        REPO / "PATTERNS.md",
        REPO / "catalog" / "schema" / "step.schema.json",
        REPO / "FAILURES.md",
        REPO / "docs" / "codes.md",
    ]


def test_write_docs_changes_only_stale_files_and_leaves_no_temp_files(root):
    changed, _ = write_docs(root)
    assert sorted(p.name for p in changed) == ["ARTIFACTS.md", "PATTERNS.md", "step.schema.json"]
    assert write_docs(root)[0] == []
    (root / "PATTERNS.md").write_text("stale\n", encoding="utf-8")
    assert write_docs(root)[0] == [root / "PATTERNS.md"]
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp")]


def test_docs_command_writes_an_extra_roots_docs_into_the_root(root, capsys):
    argv = ["docs", "--catalog", str(root), "--no-builtin"]
    assert main(argv) == 0
    assert (root / "ARTIFACTS.md").read_text(encoding="utf-8") == render_docs(root)[0][
        root / "ARTIFACTS.md"
    ]
    assert "wrote" in capsys.readouterr().out
    assert main(argv) == 0
    assert "up to date" in capsys.readouterr().out


def test_docs_json_lists_the_files_written_in_one_document(root, capsys):
    assert main(["docs", "--catalog", str(root), "--no-builtin", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and doc["up_to_date"] == []
    assert sorted(Path(p).name for p in doc["written"]) == [
        "ARTIFACTS.md",
        "PATTERNS.md",
        "step.schema.json",
    ]


def test_docs_with_a_malformed_pattern_writes_the_rest_and_exits_1(root, capsys):
    (root / "patterns" / "broken.md").write_text("---\nid: [\n---\n", encoding="utf-8")
    assert main(["docs", "--catalog", str(root), "--no-builtin"]) == 1
    out, err = capsys.readouterr()
    assert "E-PATTERN-FRONTMATTER" in err and "E-PATTERN-FRONTMATTER" not in out
    assert (root / "PATTERNS.md").is_file()


def test_docs_on_a_missing_root_is_a_usage_error_exit_2(tmp_path, capsys):
    assert main(["docs", "--catalog", str(tmp_path / "nope"), "--no-builtin"]) == 2
    assert "E-CATALOG-ROOT" in capsys.readouterr().err


def test_docs_that_cannot_be_written_are_a_setup_error_exit_2(root, capsys):
    (root / "ARTIFACTS.md").mkdir()  # a folder where the file goes
    assert main(["docs", "--catalog", str(root), "--no-builtin"]) == 2
    err = capsys.readouterr().err
    assert "E-DOCS-WRITE cannot write the generated docs" in err and "Traceback" not in err


def test_the_repository_is_a_source_checkout():
    assert source_checkout() == REPO


def _installed_copy(site: Path) -> Path:
    """What a wheel puts in site-packages: the three packages with their data, no repo root."""
    for pkg in ("steps", "catalog", "runners"):
        shutil.copytree(REPO / pkg, site / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return site


def test_an_installed_copy_checks_clean_and_docs_refuses_to_write_into_it(tmp_path):
    site = _installed_copy(tmp_path / "site")

    def steps(*argv: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHONPATH": str(site)}
        cmd = [sys.executable, "-m", "steps", *argv]
        return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)

    check = steps("check", "--json")
    doc = json.loads(check.stdout)
    assert doc["summary"]["roots"] == [str(site / "steps")]  # the copy, not the checkout
    assert check.returncode == 0, [f["message"] for f in doc["findings"]]
    assert not [f for f in doc["findings"] if f["code"] == "E-DOCS-STALE"]
    docs = steps("docs")
    assert docs.returncode == 2
    assert "E-DOCS-INSTALLED" in docs.stderr and "source checkout" in docs.stderr
    assert sorted(p.name for p in site.iterdir()) == ["catalog", "runners", "steps"]


def test_failures_md_lists_every_kind_of_the_catalog_table_and_is_checked_current():
    from catalog.docs import stale_docs
    from catalog.failures import KINDS

    home = docs_home(BUILTIN_ROOT)
    text = render_docs(BUILTIN_ROOT)[0][home.failures]
    for kind in KINDS:
        assert f"| `{kind.name}` ({kind.title}) | {'yes' if kind.retryable else 'no'} |" in text
    assert home.failures.read_text(encoding="utf-8") == text
    assert not stale_docs(BUILTIN_ROOT, "run docs")
