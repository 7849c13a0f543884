"""What load a simulation serves: how many requests, their lengths, and how they arrive (one of
a closed loop at `concurrency`, an open loop at `rate` per second, or a trace's own stream).
The same seed gives the same stream, byte for byte."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from hardware_models.serving.requests import RequestSpec, draw_lengths, poisson_arrivals
from reference.errors import InvalidShape


@dataclass(frozen=True)
class Workload:
    requests: int = 1000
    input_len: int = 1024
    output_len: int = 128
    length_dist: str = "fixed"
    concurrency: int | None = None
    rate: float | None = None
    trace: tuple[RequestSpec, ...] | None = None
    seed: int = 0

    def __post_init__(self):
        if self.concurrency is not None and self.rate is not None:
            raise InvalidShape("serve", "load", "--concurrency and --rate", "give one of --concurrency, --rate")
        timed = self.trace is not None and self.trace[0].arrival_s is not None
        if timed and (self.concurrency is not None or self.rate is not None):
            raise InvalidShape(
                "serve",
                "load",
                "--trace with arrival_s",
                "the trace's times are the arrivals; drop --concurrency/--rate, or give a trace without arrival_s",
            )
        if self.concurrency is not None and (not isinstance(self.concurrency, int) or self.concurrency < 1):
            raise InvalidShape("serve", "concurrency", self.concurrency, "an integer >= 1 (requests in flight)")
        if self.rate is not None and not (self.rate > 0 and self.rate < float("inf")):
            raise InvalidShape("serve", "rate", self.rate, "requests per second, a finite number > 0")
        if self.requests < 1:
            raise InvalidShape("serve", "requests", self.requests, "an integer >= 1")

    @property
    def closed(self) -> bool:
        """A closed loop: --concurrency given, or neither a rate nor a timed trace (then 1 in flight)."""
        return self.concurrency is not None or (
            self.rate is None and (self.trace is None or self.trace[0].arrival_s is None)
        )

    @property
    def in_flight(self) -> int | None:
        return (self.concurrency or 1) if self.closed else None

    def specs(self) -> list[RequestSpec]:
        rng = np.random.default_rng(self.seed)
        if self.trace is not None:
            specs = list(self.trace)
            if self.rate is None and not self.closed:
                return specs
            lengths = [(s.input_len, s.output_len) for s in specs]
        else:
            lengths = draw_lengths(self.requests, self.input_len, self.output_len, self.length_dist, rng)
        if self.closed:
            return [RequestSpec(i, o) for i, o in lengths]
        return [RequestSpec(i, o, t) for (i, o), t in zip(lengths, poisson_arrivals(len(lengths), self.rate, rng))]

    def at(self, *, rate: float | None = None, concurrency: int | None = None) -> Workload:
        """The same stream at another load."""
        return replace(
            self,
            rate=rate,
            concurrency=concurrency,
            trace=self.trace
            if self.trace is None
            else tuple(RequestSpec(s.input_len, s.output_len) for s in self.trace),
        )
