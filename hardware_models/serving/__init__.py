"""Serving under load: a request-level simulation of an in-flight-batching engine on a target.

    workload.py     the request stream (requests.py: lengths, arrivals, traces)
    deployment.py   chips, KV cache capacity, and the grid of step costs (step_cost.py)
    scheduler.py    the iteration-level scheduler (chunked prefill or prefill-first)
    kv_cache.py     the paged block pool and its admission policies
    simulate.py     the event loop and what it measures
    capacity.py     the highest load under an SLO

Python: `deploy(...)` once, then `simulate(workload.specs(), deployment.costs, deployment.engine,
cache_blocks=deployment.cache_blocks, concurrency=...)`; `landscape.serve_load.serve` does both
from a model name, and `landscape serve` is its command.
"""

from hardware_models.serving.capacity import SLO, search
from hardware_models.serving.deployment import Deployment, deploy
from hardware_models.serving.requests import DISTRIBUTIONS, RequestSpec, read_trace
from hardware_models.serving.simulate import EngineConfig, ServingResult, simulate
from hardware_models.serving.workload import Workload

__all__ = [
    "DISTRIBUTIONS",
    "SLO",
    "Deployment",
    "EngineConfig",
    "RequestSpec",
    "ServingResult",
    "Workload",
    "deploy",
    "read_trace",
    "search",
    "simulate",
]
