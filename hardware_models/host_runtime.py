"""A program's time on the host CPU through one runtime: PyTorch eager, torch.compile, jax.jit.

The three differ in what runs and what a call costs (hardware_models/cost/cpu.py):
    eager     no compiler: the ATen ops one eager call runs (`FrameworkOp`s, from the profiler's
              op tree: landscape/host_validate.py), each leaf a kernel of its own:
                  time = sum over ops of (max(compute_s, bytes / bandwidth of its level)
                                          + fitted.eager_dispatch_s, or fitted.eager_nested_s
                                            for an op another op's C++ calls)
                         + module_calls * fitted.eager_module_call_s
              (compute_s also holds a reduction's elements at the reduce rate, and the fused
              attention's query rows at fitted.eager_sdpa_row_s; a view moves no bytes but is
              still dispatched; module_calls: the nn.Modules
              whose forward runs, Python's share of eager)
    inductor  torch.compile: the IR of torch-mlir compiled by the cpu family's passes (fused),
              each kernel + fitted.inductor_kernel_s, + fitted.inductor_call_s per call
              (fitted.inductor_loop_call_s for a program without a contraction; XLA alike)
              + fitted.inductor_arg_s per argument beyond two (weights are arguments)
    xla       jax.jit: JAX's IR, the same passes, XLA:CPU's GEMM and transcendental rates,
              + fitted.xla_kernel_s per kernel, + fitted.xla_call_s per call, + fitted.xla_arg_s
              per argument beyond two
"""

from __future__ import annotations

from dataclasses import dataclass

from hardware_models.cost.cpu import COMPILED, call_overhead_s, cpu_group_cost, eager_op_seconds
from hardware_models.cost.model import Cost
from hardware_models.pipelines import compile_plan
from hardware_models.target import Target
from reference.errors import UnknownName
from reference.ir import Module


@dataclass(frozen=True)
class FrameworkOp:
    """One op a framework dispatches eagerly: its name, bytes moved (inputs + outputs; 0 for a
    view), FLOPs, transcendentals, whether a GEMM library runs it, and its element type."""

    name: str
    bytes: int
    flops: int
    transcendentals: int = 0
    contraction: bool = False
    dtype: str = "f32"
    nested: bool = False
    elements: int = 0  # its output's elements (what ATen splits over threads)
    function: str = "exponential"  # the transcendental it evaluates (cost/cpu.py transcendental_rate)
    reduced: int = 0  # elements a reduction reads (cost/cpu.py reduce_rate)
    batch: int = 1  # a batched GEMM's batch members (its rate follows one member's FLOPs)
    rows: int = 0  # a fused attention's query rows (batch x heads x queries)


@dataclass(frozen=True)
class RuntimeTime:
    runtime: str
    kernels: int        # kernels run (eager: ATen ops dispatched)
    work_s: float       # the kernels' time, each kernel's own fixed cost included
    overhead_s: float   # what the runtime adds per call (eager: module calls)
    cost: Cost | None = None  # the compiled plan's cost, summed (None eagerly)

    @property
    def seconds(self) -> float:
        return self.work_s + self.overhead_s


def _check(target: Target) -> None:
    from hardware_models.families.cpu import CPU

    if target.family_record is not CPU:
        raise UnknownName("host-CPU target", target.name, ["a target of the cpu family (host-cpu)"])


def eager_seconds(ops: list[FrameworkOp], target: Target, module_calls: int = 1) -> RuntimeTime:
    """Predict one eager PyTorch call from the ATen ops it dispatches (module doc)."""
    _check(target)
    work = sum(eager_op_seconds(op, target) for op in ops)
    return RuntimeTime("eager", len(ops), work, module_calls * target["fitted.eager_module_call_s"])


def compiled_seconds(module: Module, target: Target, runtime: str) -> RuntimeTime:
    """Predict one call of `module` compiled by `runtime` ("inductor" or "xla"; module doc).

    Raises:
        UnknownName: another runtime; a target of another family.
    """
    if runtime not in COMPILED:
        raise UnknownName("compiled CPU runtime", runtime, COMPILED)
    _check(target)
    module = getattr(module, "module", module)
    plan = compile_plan(module, target)
    cost = Cost()
    for group in plan.groups:
        cost = cost + cpu_group_cost(module, plan, group, target, runtime) * group.repeats
    extra_args = max(len(module.main.args) - 2, 0)  # the call rows took two arguments
    loops_only = not any(g.kind == "contraction" for g in plan.groups)
    overhead = call_overhead_s(target, runtime, loops_only) + extra_args * target[f"fitted.{runtime}_arg_s"]
    return RuntimeTime(runtime, len(plan.groups), cost.time_s, overhead, cost)
