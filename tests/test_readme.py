"""README.md stays a first contact, and the docs it points to stay reachable and true.

The reference lives in docs/; README keeps the two commands first, the exit codes (checked by
test_cli_contract.py) and short recipes. Links between them, pointers from the code's messages to
docs/, and the floors table in docs/layout.md are checked here against the files and the code.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_architecture import RUNNERS_FLOORS

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
MAX_README_LINES = 200


def bash_blocks(text: str) -> list[str]:
    """The bodies of the ```bash fences, in order."""
    return re.findall(r"^```bash\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def slug(heading: str) -> str:
    """The anchor a Markdown renderer (GitHub's rule) gives a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_readme_is_under_200_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < MAX_README_LINES, f"README.md: {len(lines)} lines; move reference to docs/"


def test_readme_starts_with_the_main_job_then_the_tests():
    text = README.read_text(encoding="utf-8")
    first_section = text.split("\n## ", 1)[0]
    blocks = bash_blocks(first_section)
    assert len(blocks) >= 2, "the two commands come before the first section"
    main_job, tests = blocks[0].strip(), blocks[1].strip()
    assert main_job.startswith("python3 -m venv .venv && .venv/bin/pip install -e . && ")
    assert "-m steps run data_prep/rl_prep -c tiny" in main_job
    assert "-m steps validate nemo_gym_jsonl" in main_job
    assert tests.startswith("python3 -m venv .venv && ") and tests.endswith("-m pytest")
    assert "\n" not in main_job and "\n" not in tests, "each is one line to paste"


@pytest.mark.parametrize("doc", [README, *DOCS], ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_reaches_a_file_and_heading(doc):
    text = doc.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        assert dest.is_file(), f"{doc.name} links to missing {target}"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", dest.read_text(encoding="utf-8"), re.MULTILINE)
            assert anchor in {slug(h) for h in headings}, f"{doc.name}: no heading #{anchor}"


def test_readme_links_every_doc_page():
    text = README.read_text(encoding="utf-8")
    assert DOCS, "docs/ holds the reference"
    for doc in DOCS:
        assert f"](docs/{doc.name})" in text, f"README does not link docs/{doc.name}"


def test_docs_named_in_the_codes_messages_exist():
    named = set()
    for package in ("catalog", "runners", "steps"):
        for source in (REPO / package).rglob("*"):
            if source.suffix in {".py", ".toml"} and "__pycache__" not in source.parts:
                named.update(re.findall(r"\bdocs/[\w-]+\.md", source.read_text(encoding="utf-8")))
    assert named, "the messages point users to docs/"
    assert sorted(n for n in named if not (REPO / n).is_file()) == []


def test_the_floors_table_in_docs_layout_matches_the_architecture_test():
    text = (REPO / "docs" / "layout.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", text, flags=re.MULTILINE)
    table = [
        tuple(
            "runners." + p.removesuffix("/").removesuffix(".py").removeprefix("runners/")
            for p in re.findall(r"`([^`]+)`", units)
        )
        for _, units in rows
    ]
    assert [int(floor) for floor, _ in rows] == list(range(1, len(RUNNERS_FLOORS) + 1))
    assert table == [tuple(floor) for floor in RUNNERS_FLOORS]
