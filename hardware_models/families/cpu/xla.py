"""XLA:CPU, jax.jit's compiler for the host CPU: a second compiler of the cpu family, in one module.

Its pipeline is Inductor's (families/cpu/__init__.py) but for the fusion rules: XLA:CPU ends a
kernel at each reduction, hands dots to Eigen, and has no fused attention (dots and softmax
loops). Its cost model is the family's, read at the "xla" fits through its `HostRuntime` record
(families/cpu/cost.py: its own GEMM library and curve, a dot's call cost, its stream cap, its
Eigen convolution, shared sine-cosine reduction and element-by-element transposed reads).
"""

from __future__ import annotations

from functools import partial

from hardware_models.families import Compiler, add_compiler
from hardware_models.families.cpu import _pipeline
from hardware_models.families.cpu.cost import cpu_group_cost
from hardware_models.passes.fuse_elementwise import XLA_CPU

XLA = add_compiler(
    "cpu",
    Compiler(
        "xla",
        pipeline=_pipeline(XLA_CPU, attention=False),
        group_cost=partial(cpu_group_cost, runtime="xla"),
        stack="jax.jit's XLA:CPU: a kernel ends at each reduction, dots to Eigen, no fused attention",
    ),
)
