"""Numbers as files a person downloads: tables as CSV, arrays as NPZ (numpy's own format, no pickle)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd


def table_csv(table: pd.DataFrame) -> bytes:
    return table.to_csv(index=True).encode("utf-8")


def arrays_npz(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)  # type: ignore[arg-type]  # numpy's stubs: no array is named allow_pickle
    return buffer.getvalue()


def matrix_table(values: np.ndarray, rows: list[str], columns: list[str]) -> pd.DataFrame:
    """A [rows, columns] matrix as a table whose labels keep positions (tokens repeat)."""
    return pd.DataFrame(values, index=[f"{i}:{t}" for i, t in enumerate(rows)],
                        columns=[f"{j}:{t}" for j, t in enumerate(columns)])
