"""One dataset of an rl_prep blend (apart from `blend`, so `transforms` can name it without a
cycle)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PlaceholderSource:
    """Where the rows one placeholder `dataset` name points into live, and how to read them."""

    name: str  # the rows' `dataset` value
    paths: tuple[str, ...]
    split: str = "train"
    subset: str | None = None
    question: str = "prompt.0.content"
    answer: str = "reward_model.ground_truth"
    template: str = "none"
    files: tuple[str, ...] = ()  # resolved by prepare.plan_datasets before any row is read


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset of the blend, with paths still as written (resolved by `sources`)."""

    name: str
    paths: tuple[str, ...]
    line: int | None
    weight: float = 1.0
    split: str = "train"
    subset: str | None = None
    sample: int | None = None
    transform: str | None = None
    agent_ref: dict | None = None
    field_map: tuple[tuple[str, str], ...] = ()  # (row field, source path), applied in order
    placeholders: tuple[PlaceholderSource, ...] = ()

    @property
    def reshapes(self) -> bool:
        """Whether rows change before the transform (then no line is copied unparsed)."""
        return bool(self.field_map or self.placeholders)
