"""Strict test settings: hypothesis profiles, strict JAX promotion, two emulated CPU devices."""

from __future__ import annotations

import os
import sys

# Two host devices, so multi-chip code can be tested on a CPU (must precede importing jax).
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
# PyTorch's threads per test worker: the cores shared among the workers (must precede importing
# torch; notebook kernels inherit it). Each worker's OpenMP threads spin after a parallel region,
# so two workers of two threads each on two cores starve one another: a GEMM the notebooks time
# ran 60x slower.
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    os.environ.setdefault(
        "OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))
    )

import pytest  # noqa: E402
from hypothesis import HealthCheck, Phase, settings  # noqa: E402

# ci: bounded, so the whole suite fits its time budget on 2 cores; the examples come from the
# run's seed (`make test` passes the commit's, so each commit draws new examples, and prints it;
# --hypothesis-seed=N replays).
settings.register_profile(
    "ci",
    max_examples=3,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
# dev: wider search for local runs (HYPOTHESIS_PROFILE=dev), at random.
settings.register_profile(
    "dev",
    max_examples=40,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
# mutation: what `make mutation` runs under. The same few examples for every mutant
# (derandomized), and no shrinking, so that a killed mutant fails fast and a survivor is a
# survivor on every run.
settings.register_profile(
    "mutation",
    max_examples=3,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
# Either way a failure prints its example and a `@reproduce_failure(...)` line: pasted above the
# test, it replays that example exactly (tests/landscape/test_fuzz.py names the command line too).


def pytest_report_header(config):
    profile = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    seed = config.getoption("hypothesis_seed", None)
    how = f"seed {seed}: pytest --hypothesis-seed={seed} replays it" if seed is not None else "a random seed"
    return f"hypothesis profile {profile!r} ({how}); a failure also prints @reproduce_failure to replay it"


def pytest_configure(config):
    try:
        import jax
    except ImportError:  # the core tests need no framework
        return
    # Broadcasting must be explicit in our JAX code. Dtype promotion stays "standard":
    # flax.nnx.LayerNorm computes its statistics via jnp.promote_types(bfloat16, float32),
    # which "strict" refuses, so strict mode would fail inside Flax, not in our code.
    jax.config.update("jax_numpy_rank_promotion", "raise")


@pytest.fixture(autouse=True)
def _registered_models_dropped():
    """A model registered from a config.json's path (reference.catalogue.resolve_model) lives for
    one test: a later test in the same worker sees models.toml's models only."""
    yield
    catalogue = sys.modules.get("reference.catalogue")
    if catalogue is None:
        return
    from reference.models import load_models

    for name in [n for n in catalogue.MODELS if n not in catalogue.PUBLISHED_MODELS]:
        del catalogue.MODELS[name]
        catalogue.CATALOGUE.pop(name, None)
        load_models().pop(name, None)
