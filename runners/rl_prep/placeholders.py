"""`_hf_placeholder` rows of NVIDIA's published RL blends, rebuilt from a local copy of the source
they point into (DAPO-Math-17k, Skywork-OR1 cannot be redistributed); see
steps/data_prep/rl_prep/README.md, "Placeholder rows". An unresolvable row is E-HF-PLACEHOLDER."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runners.rl_prep.spec import PlaceholderSource
from runners.rl_prep.transforms import RowRejected, lookup, parse_path

KEY = "_hf_placeholder"
CODE = "E-HF-PLACEHOLDER"


_TABLES: dict[tuple, list[tuple[Any, Any]]] = {}  # per process: loaded once, then indexed


def _rows(files: tuple[str, ...]) -> Any:
    from catalog.contracts.json_text import loads
    from runners.rl_prep.sources import SourceFile, iter_chunks, read_chunk

    for chunk in iter_chunks([SourceFile(Path(f)) for f in files], 4 << 20, None):
        if chunk.rows is not None:
            yield from chunk.rows
            continue
        yield from (loads(line) for line in read_chunk(chunk).splitlines() if line.strip())


def table(src: PlaceholderSource) -> list[tuple[Any, Any]]:
    """(question, answer) of every row of the source, in file order (what `row` indexes)."""
    key = (src.files, src.question, src.answer)
    if key not in _TABLES:
        q, a = parse_path(src.question), parse_path(src.answer)
        _TABLES[key] = [
            (lookup(r, q)[1], lookup(r, a)[1]) if isinstance(r, dict) else (None, None)
            for r in _rows(src.files)
        ]
    return _TABLES[key]


def _dapo(question: str, template: Any) -> str:
    if not isinstance(template, dict):
        return question
    paragraphs = question.split("\n\n")
    body = "\n\n".join(paragraphs[1:-1]) if len(paragraphs) > 2 else question
    return f"{template.get('prefix', '')}{body}{template.get('suffix', '')}".rstrip("\n")


def _answer(raw: Any) -> Any:
    """A JSON list or object given as text gives its first item or value; other text stays text
    (math_with_judge reads `expected_answer: str`)."""
    if not isinstance(raw, str) or not raw.lstrip().startswith(("[", "{")):
        return raw
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    if isinstance(value, list) and value:
        return value[0]
    if isinstance(value, dict) and value:
        return next(iter(value.values()))
    return value


def _reject(field: str, message: str, fix: str) -> RowRejected:
    return RowRejected(CODE, field, message, fix)


def resolve(row: dict, sources: tuple[PlaceholderSource, ...]) -> dict:
    """The row a placeholder stands for (E-HF-PLACEHOLDER when it cannot be rebuilt here)."""
    name = row.get("dataset")
    src = next((s for s in sources if s.name == name), None)
    if src is None:
        known = ", ".join(s.name for s in sources) or "none"
        raise _reject(
            "dataset",
            f"a placeholder row points into `{name}`, a source this dataset's hf_placeholders "
            f"does not name (named: {known}); its text is not in this file",
            f"add `hf_placeholders: {{{name}: {{path: hf://ORG/NAME or a local copy, question: "
            "..., answer: ...}}` to the dataset in the blend (see steps/data_prep/rl_prep/"
            "README.md), or set on_bad_row=skip to drop such rows",
        )
    ref = row[KEY]
    index = ref.get("row") if isinstance(ref, dict) else None
    rows = table(src)
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(rows):
        raise _reject(
            f"{KEY}.row",
            f"row {index!r} is not a row of `{name}` ({len(rows)} rows in {len(src.files)} "
            "file(s))",
            "point hf_placeholders at the same version and split of the source the blend "
            "was made from",
        )
    question, answer = rows[index]
    if not isinstance(question, str):
        raise _reject(
            "question",
            f"row {index} of `{name}` has no text at `{src.question}`",
            "fix hf_placeholders.<name>.question to the path of the question text",
        )
    template = ref.get("question_template")
    if src.template == "dapo":
        full = _dapo(question, template)
    elif src.template == "skywork" and isinstance(template, str):
        full = template.replace("{question}", question)
    else:
        full = question
    out = {k: v for k, v in row.items() if k != KEY}
    out["question"] = question if src.template == "skywork" else full
    out["expected_answer"] = _answer(answer)
    out["responses_create_params"] = {"input": [{"role": "user", "content": full}]}
    return out
