"""`python -m bench knobs`: embedding knobs alone (batch order, batch size, threads; raw and fastembed)."""

from __future__ import annotations

from typing import Any

from bench.throughput import knobs_main


def main(args: Any) -> None:
    knobs_main(args)
