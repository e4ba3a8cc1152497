"""rl_prep's progress bar counts a Parquet file in its own bytes, so it shows a percentage and
an ETA (as the user met it: `rl_prep: 563MB [00:10, 54.0MB/s]` for 14 MB of Parquet, the decoded
bytes counted against the file bytes, no percentage at any point)."""

from __future__ import annotations

from pathlib import Path

from test_rl_prep_mapping import dapo_rows, write_parquet

from runners.rl_prep.sources import SourceFile, iter_chunks


def test_parquet_chunks_stand_for_the_file_s_bytes_exactly(tmp_path: Path):
    path = write_parquet(tmp_path / "big.parquet", dapo_rows(5000))
    chunks = list(iter_chunks([SourceFile(path)], 4 << 20, None))
    assert len(chunks) > 1  # several batches, each a part of the file
    assert all(c.share is not None and c.share >= 0 for c in chunks)
    assert sum(c.share or 0 for c in chunks) == path.stat().st_size  # the bar ends at 100 %


def test_a_sample_counts_only_the_rows_it_reads(tmp_path: Path):
    path = write_parquet(tmp_path / "big.parquet", dapo_rows(5000))
    chunks = list(iter_chunks([SourceFile(path)], 4 << 20, 10))
    assert sum(len(c.rows or []) for c in chunks) == 10
    assert 0 < sum(c.share or 0 for c in chunks) < path.stat().st_size
