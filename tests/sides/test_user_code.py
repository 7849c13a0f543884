"""Users check their own nn.Module and JAX function, not only the catalogue."""

from __future__ import annotations

import numpy as np
import pytest

from reference.agreement import compare_outputs

pytestmark = [pytest.mark.torch, pytest.mark.jax]


def test_a_user_module_and_function_are_compared_against_a_user_reference():
    import jax.numpy as jnp
    import torch

    import jax_side
    import pytorch_side

    x = np.random.default_rng(0).standard_normal((5, 63)).astype(np.float32)
    torch_out = pytorch_side.run_module(torch.nn.Tanh(), x)
    jax_out = jax_side.run_module(jnp.tanh, x)
    result = compare_outputs("tanh", "float32", (np.tanh(x.astype(np.float64)),), {"torch": torch_out, "jax": jax_out})
    assert result.ok
    wrong = compare_outputs("tanh", "float32", (np.sin(x.astype(np.float64)),), {"torch": torch_out})
    assert not wrong.ok


def test_a_user_function_and_module_are_costed_on_any_target():
    """docs/python-api.md's example: lower your own code, compile it for a target, estimate."""
    import jax
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from hardware_models.estimate import estimate
    from hardware_models.pipelines import compile_plan
    from hardware_models.target import get_target
    from jax_side.lower import lower_function
    from pytorch_side.lower import lower_module

    ffn = lambda x, w1, w2: jax.nn.gelu(x @ w1) @ w2  # noqa: E731
    bf16 = lambda *shape: jax.ShapeDtypeStruct(shape, jax.numpy.bfloat16)  # noqa: E731
    lowering = lower_function(ffn, bf16(256, 512), bf16(512, 2048), bf16(2048, 512))
    tpu = get_target("tpu-v5e").with_overrides({"schedule.launch_overhead_s": 1e-6})
    plan = compile_plan(lowering.module, tpu)
    result = estimate(lowering.module, tpu, "ffn", plan)
    assert [g.kind for g in result.groups] == ["contraction", "contraction"]  # gelu fused into the first
    assert result.total.flops >= 2 * 2 * 256 * 512 * 2048

    with FakeTensorMode():  # built with its dtype: `.to(dtype)` under fake mode fails
        module = torch.nn.Sequential(
            torch.nn.Linear(512, 2048, dtype=torch.bfloat16),
            torch.nn.GELU(),
            torch.nn.Linear(2048, 512, dtype=torch.bfloat16),
        )
        torch_lowering = lower_module(module, torch.empty(256, 512, dtype=torch.bfloat16))
    torch_result = estimate(torch_lowering.module, get_target("h100"))
    assert sum(g.kind == "contraction" for g in torch_result.groups) == 2


def test_the_python_api_is_quiet_on_stderr_like_the_cli():
    """Lowering and costing a user's JAX function from Python prints no XLA INFO lines (the
    PjRt device-count banner) on stderr, even when jax is imported first."""
    import os
    import re
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import jax\nfrom jax_side.lower import lower_function\nfrom hardware_models.estimate import estimate\n"
        "s = jax.ShapeDtypeStruct((64, 64), jax.numpy.bfloat16)\n"
        "print(estimate(lower_function(lambda x, w: x @ w, s, s), 'tpu-v5e').total.time_s > 0)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
    assert "pjrt" not in done.stderr.lower(), done.stderr
    assert not re.search(r"^I\d{4} ", done.stderr, re.M), done.stderr  # absl INFO lines
