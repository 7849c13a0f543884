"""Capacity under an SLO: the highest request rate (or concurrency) whose chosen percentile of
TTFT and of TPOT stay within the user's limits, found by bisection (as Vidur-Search does), for
each batch cap tried; the best is reported with the cap that achieves it.

    rate:         r = 1 / (one request's end-to-end latency) to start, doubled while the SLO
                  holds (halved until it holds, at most 40 times, when it does not at first); then bisection between the last rate that held and the first that did
                  not, to within 2% (each try simulates the same seeded request stream, scaled)
    concurrency:  1, 2, 4 ... doubled while the SLO holds (up to the batch cap x 4), then integer
                  bisection

Latency grows with load but not strictly (a simulation is a sample), so bisection finds a rate
where the SLO holds with the next tried one failing, not necessarily the largest such rate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from reference.errors import InvalidShape

RELATIVE_PRECISION = 0.02  # bisection stops when the bracket is within 2% of its top
MAX_DOUBLINGS = 40


@dataclass(frozen=True)
class SLO:
    ttft_s: float | None
    tpot_s: float | None
    percentile: int = 90

    def __post_init__(self):
        if self.ttft_s is None and self.tpot_s is None:
            raise InvalidShape("serve", "slo", "none", "give --slo-ttft SECONDS, --slo-tpot SECONDS, or both")
        for name, value in (("slo-ttft", self.ttft_s), ("slo-tpot", self.tpot_s)):
            if value is not None and not (value > 0 and value < float("inf")):
                raise InvalidShape("serve", name, value, "a latency limit in seconds, a finite number > 0")
        if self.percentile not in (50, 90, 99):
            raise InvalidShape("serve", "slo-percentile", self.percentile, "valid: 50, 90, 99")

    def misses(self, summary: dict) -> list[str]:
        """What the run's percentiles break, e.g. ["P90 TTFT 1.2 s > 0.5 s"] ([] when met)."""
        key = f"p{self.percentile}"
        out = []
        for label, limit, field in (("TTFT", self.ttft_s, "ttft_s"), ("TPOT", self.tpot_s, "tpot_s")):
            value = summary[field][key]
            if limit is not None and not value <= limit:
                out.append(f"P{self.percentile} {label} {value:.4g} s > {limit:.4g} s")
        return out

    def to_dict(self) -> dict:
        return {"ttft_s": self.ttft_s, "tpot_s": self.tpot_s, "percentile": self.percentile}


@dataclass(frozen=True)
class Trial:
    load: float
    max_batch: int
    met: bool
    summary: dict


def search(
    run: Callable[[float, int], dict],
    slo: SLO,
    *,
    mode: str,
    batch_caps: tuple[int, ...],
    start: float,
    progress: Callable[[str], None] | None = None,
) -> tuple[Trial | None, list[Trial]]:
    """The best trial (highest load that met the SLO; ties: the smaller cap) and every trial run.

    `run(load, max_batch)` simulates at that rate (mode "rate") or concurrency ("concurrency")
    and returns the summary; `start` is the first rate tried."""
    trials: list[Trial] = []

    def attempt(load: float, cap: int) -> bool:
        summary = run(load, cap)
        met = not slo.misses(summary)
        trials.append(Trial(load, cap, met, summary))
        if progress:
            progress(f"{mode} {load:.4g} cap {cap}: {'met' if met else 'missed'}")
        return met

    best: Trial | None = None
    for cap in batch_caps:
        if mode == "concurrency":
            good, bad, load = 0, None, 1
            while load <= 4 * cap:
                if not attempt(load, cap):
                    bad = load
                    break
                good, load = load, load * 2
            while bad is not None and bad - good > 1:
                mid = (good + bad) // 2
                if attempt(mid, cap):
                    good = mid
                else:
                    bad = mid
        else:
            good, bad, load = 0.0, None, start
            for _ in range(MAX_DOUBLINGS):  # up from the start while it holds, or down until it does
                if attempt(load, cap):
                    good = load
                    if bad is not None:
                        break
                    load *= 2
                else:
                    bad = load
                    if good:
                        break
                    load /= 2
            while good and bad is not None and bad - good > RELATIVE_PRECISION * bad:
                mid = (good + bad) / 2
                if attempt(mid, cap):
                    good = mid
                else:
                    bad = mid
        if good:
            winner = next(t for t in reversed(trials) if t.max_batch == cap and t.load == good)
            if best is None or winner.load > best.load:
                best = winner
    return best, trials
