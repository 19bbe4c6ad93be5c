"""What the benchmarks share. Imported as `bench.common` (the repository root is on sys.path)."""

from __future__ import annotations


def pct(values: list[float], p: float) -> float:
    """The p-th percentile (0-100) of the values: the nearest rank, no interpolation."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]
