"""A program's time on the host CPU through one runtime: PyTorch eager, torch.compile, jax.jit.

The three differ in what runs and what a call costs (hardware_models/families/cpu/cost.py):
    eager     no compiler: the ATen ops one eager call runs (`FrameworkOp`s, from the profiler's
              op tree: landscape/host_validate.py), each leaf a kernel of its own:
                  time = sum over ops of (max(compute_s, bytes / bandwidth of its level)
                                          + fitted.eager_dispatch_s, or fitted.eager_nested_s
                                            for an op another op's C++ calls)
                         + module_calls * fitted.eager_module_call_s
                         + parameters * fitted.eager_param_s
              (compute_s also holds a reduction's elements at the reduce rate, and the fused
              attention's query rows at fitted.eager_sdpa_row_s; a view moves no bytes but is
              still dispatched; module_calls: the nn.Modules
              whose forward runs, Python's share of eager; parameters: the nn.Parameters they
              read, each fetched through Module.__getattr__ and handed to an op as a Parameter)
    inductor  torch.compile: the IR of torch-mlir compiled by the cpu family's "inductor" compiler (fused),
              each kernel + fitted.inductor_kernel_s, + fitted.inductor_call_s per call
              (fitted.inductor_loop_call_s for a program without a contraction; XLA alike)
              + fitted.inductor_arg_s per argument beyond two (weights are arguments); a module
              dynamo splits at graph breaks pays the call once per graph
    xla       jax.jit: JAX's IR by the family's "xla" compiler, the same passes but for XLA:CPU's
              fusion (a reduction ends its kernel: families/cpu/__init__.py), XLA:CPU's GEMM and transcendental rates,
              + fitted.xla_kernel_s per kernel, + fitted.xla_call_s per call, + fitted.xla_arg_s
              per argument beyond two
"""

from __future__ import annotations

from dataclasses import dataclass

from hardware_models.cost.model import Cost
from hardware_models.estimate import group_cost
from hardware_models.families.cpu.cost import (
    COMPILED,
    call_overhead_s,
    cold_weight_seconds,
    eager_op_seconds,
    runtime_rates,
)
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
    function: str = "exponential"  # the transcendental it evaluates (families/cpu/cost.py transcendental_rate)
    reduced: int = 0  # elements a reduction reads (families/cpu/cost.py reduce_rate)
    batch: int = 1  # a batched GEMM's batch members (its rate follows one member's FLOPs)
    rows: int = 0  # a fused attention's query rows (batch x heads x queries)
    rhs_bytes: int = 0  # a GEMM's second operand (a linear layer's weight)
    mnk: tuple[
        int, ...
    ] = ()  # a GEMM's (m, n, k), one batch member's (families/cpu/cost.py gemm_seconds); () when not read
    depth: int = 0  # a convolution's reduction depth (c_in x kernel taps; its batch: the images)


@dataclass(frozen=True)
class RuntimeTime:
    runtime: str
    kernels: int  # kernels run (eager: ATen ops dispatched)
    work_s: float  # the kernels' time, each kernel's own fixed cost included
    overhead_s: float  # what the runtime adds per call (eager: module calls)
    cost: Cost | None = None  # the compiled plan's cost, summed (None eagerly)

    @property
    def seconds(self) -> float:
        return self.work_s + self.overhead_s


def _check(target: Target) -> None:
    if target.family_record.name != "cpu":
        raise UnknownName("host-CPU target", target.name, ["a target of the cpu family (host-cpu)"])


def eager_seconds(
    ops: list[FrameworkOp], target: Target, module_calls: int = 1, weight_bytes: int = 0, parameters: int = 0
) -> RuntimeTime:
    """Predict one eager PyTorch call from the ATen ops it dispatches (module doc); `weight_bytes`:
    the module's parameters' bytes, which its GEMMs stream when they outgrow the private caches;
    `parameters`: how many it reads."""
    _check(target)
    work = sum(eager_op_seconds(op, target) for op in ops)
    work += cold_weight_seconds(target, "eager", sum(op.rhs_bytes for op in ops), weight_bytes)
    overhead = module_calls * target["fitted.eager_module_call_s"] + parameters * target["fitted.eager_param_s"]
    return RuntimeTime("eager", len(ops), work, overhead)


def _argument_reads(plan, module: Module) -> tuple[int, int]:
    """(bytes the dots read straight from the program's arguments, summed per read; the distinct
    arguments' bytes): a dot's weight, through transposes and converts, is an argument."""
    graph = plan.value_graph()
    args = {f"{module.main.name}{name}": t for name, t in module.main.args}  # as the plan names the entry's values
    reads, distinct = 0, {}
    for group in plan.groups:
        for i in group.members:
            p = plan.ops[i]
            if p.op.short_name not in ("dot_general", "dot"):
                continue
            for v in p.operands:
                root = graph.root(v)
                while root not in args and root in graph.producer:  # back through layout and type ops
                    q = plan.ops[graph.producer[root]]
                    if q.op.short_name not in ("transpose", "convert", "reshape", "bitcast_convert") or not q.operands:
                        break
                    root = graph.root(q.operands[0])
                if root in args:
                    reads += args[root].nbytes
                    distinct[root] = args[root].nbytes
    return reads, sum(distinct.values())


def compiled_seconds(module: Module, target: Target, runtime: str, graphs: int = 1) -> RuntimeTime:
    """Predict one call of `module` compiled by `runtime` ("inductor" or "xla"; module doc);
    `graphs`: the compiled regions the call runs (torch.compile splits a module at each graph
    break: each region is a call of its own; the application counts them).

    Raises:
        UnknownName: another runtime; a target of another family.
    """
    if runtime not in COMPILED:
        raise UnknownName("compiled CPU runtime", runtime, COMPILED)
    _check(target)
    module = getattr(module, "module", module)
    plan = compile_plan(module, target, compiler=runtime)  # the cpu family's compilers are its runtimes
    cost = Cost()
    for group in plan.groups:  # each by the cost model of the compiler that made the plan (Plan.compiler)
        cost = cost + group_cost(module, plan, group, target) * group.repeats
    cost = cost + Cost(time_s=cold_weight_seconds(target, runtime, *_argument_reads(plan, module)))
    extra_args = max(len(module.main.args) - 2, 0)  # the call rows took two arguments
    loops_only = not any(g.kind == "contraction" for g in plan.groups)
    overhead = graphs * call_overhead_s(target, runtime, loops_only) + extra_args * runtime_rates(target, runtime).arg_s
    return RuntimeTime(runtime, len(plan.groups), cost.time_s, overhead, cost)
