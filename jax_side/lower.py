"""The JAX path: jax.jit(fn).lower(abstract args) -> StableHLO -> IR; jaxpr and XLA's HLO kept.

No weights are materialized: arguments are jax.ShapeDtypeStruct, and catalogue modules are
built abstractly (nnx.eval_shape).
"""

from __future__ import annotations

import jax
import numpy as np
from flax import nnx

from jax_side.kernels import JAX_DTYPES, LAYOUTS, build
from reference.catalogue import get_entry
from reference.ir import parse_stablehlo, verify
from reference.lowering import Lowering


def _abstract(x):
    return jax.ShapeDtypeStruct(x.shape, x.dtype)


def lower_function(fn, *args, name: str = "fn", n_params: int = 0, compile_xla: bool = False) -> Lowering:
    """Lower any jittable function at abstract (or concrete) arguments.

    Args:
        fn: a JAX function.
        *args: pytrees of jax.ShapeDtypeStruct (or arrays; only shapes and dtypes are used).
        name: a label for the report.
        n_params: how many leading flattened arguments are weights (for parameter bytes).
        compile_xla: also compile, keeping XLA's optimized HLO ("xla" stage) and its costs.
    """
    abstract = jax.tree.map(_abstract, args)
    # keep_unused: a weight the program does not read (an expert no token is routed to) is still an
    # argument the chips must hold, as a serving engine loads every weight
    from reference.errors import DATA_DEPENDENT, CaptureFailed

    try:
        traced = jax.jit(fn, keep_unused=True).trace(*abstract)
    except Exception as err:  # noqa: BLE001 - data-dependent control flow names the user's line and the fix
        if type(err).__name__ in DATA_DEPENDENT:
            raise CaptureFailed.from_exception(err, "jax.jit's trace") from err
        raise
    lowered = traced.lower()
    text = lowered.as_text(debug_info=True)
    stages = {"jaxpr": str(traced.jaxpr), "stablehlo": lowered.as_text()}
    cost = {
        k: float(v)
        for k, v in (lowered.cost_analysis() or {}).items()
        if k in ("flops", "transcendentals", "bytes accessed")
    }
    if compile_xla:
        compiled = lowered.compile()
        stages["xla"] = compiled.as_text()
        cost.update(
            {
                f"compiled.{k}": float(v)
                for k, v in (compiled.cost_analysis() or {}).items()
                if k in ("flops", "transcendentals", "bytes accessed")
            }
        )
    module = verify(parse_stablehlo(text))
    return Lowering("jax", name, stages, module, tuple(range(n_params)), cost)


def lower_module(module: nnx.Module, *inputs, name: str = "module", compile_xla: bool = False) -> Lowering:
    """Lower an NNX module: its state becomes the leading (weight) arguments of a pure function."""
    graphdef, state = nnx.split(module)
    n_params = len(jax.tree.leaves(state))
    pure = lambda st, *xs: nnx.merge(graphdef, st)(*xs)
    return lower_function(pure, state, *inputs, name=name, n_params=n_params, compile_xla=compile_xla)


def abstract_inputs(name: str, shapes: dict, dtype: str) -> list[jax.ShapeDtypeStruct]:
    """The entry's inputs as ShapeDtypeStructs, in the JAX side's layout."""
    perms = LAYOUTS.get(name, ({}, None))[0]
    out = []
    for key, spec in get_entry(name).inputs(shapes).items():
        shape = tuple(np.array(spec.shape)[list(perms[key])]) if key in perms else spec.shape
        dt = np.int32 if spec.kind == "index" else JAX_DTYPES[dtype]
        out.append(jax.ShapeDtypeStruct(tuple(int(s) for s in shape), dt))
    return out


def lower_entry(name: str, shapes: dict, dtype: str, compile_xla: bool = False) -> Lowering:
    """Lower a catalogue entry (resolved shapes) without materializing weights."""
    from jax_side.layers import routed_moe

    fn = build(name, shapes, dtype)
    inputs = abstract_inputs(name, shapes, dtype)
    with routed_moe():  # the graph that is costed routes its tokens (numerical runs keep dense dispatch)
        if isinstance(fn, nnx.Module):
            return lower_module(fn, *inputs, name=name, compile_xla=compile_xla)
        return lower_function(fn, *inputs, name=name, compile_xla=compile_xla)


def lower_regional(name: str, shapes: dict, dtype: str) -> Lowering:
    """Lower a decoder (model or `decoder` entry) as prologue + one block x layers + epilogue.

    Each part is traced and lowered once, so the time does not grow with the number of
    layers; the IR's call to the block carries trip_count = layers.
    """
    import dataclasses

    from jax_side.layers import Block, Epilogue, Prologue, routed_moe
    from reference.ir.compose import compose_regional
    from reference.regional import regional_plan

    plan = regional_plan(name, shapes)
    cfg, dt = plan.cfg, JAX_DTYPES[dtype]
    rngs = lambda: nnx.Rngs(0)
    ids = jax.ShapeDtypeStruct((plan.batch, plan.tokens), np.int32)
    x = jax.ShapeDtypeStruct((plan.batch, plan.tokens, cfg.d_model), dt)
    caches = [jax.ShapeDtypeStruct(plan.cache_shape(), dt)] * 2 if plan.cache_shape() else []
    with routed_moe():  # the graph that is costed routes its tokens
        parts = (
            lower_module(nnx.eval_shape(lambda: Prologue(cfg, dt, rngs(), plan.past)), ids, name=f"{name}.prologue"),
            lower_module(nnx.eval_shape(lambda: Block(cfg, dt, rngs())), x, *caches, name=f"{name}.block"),
            lower_module(nnx.eval_shape(lambda: Epilogue(cfg, dt, rngs())), x, name=f"{name}.epilogue"),
        )
    module, params, buffers = compose_regional(
        *(p.module for p in parts),
        plan.layers,
        tuple(len(p.param_args) for p in parts),
        int(cfg.tie_embeddings),
        n_state=tuple(p.state_args for p in parts),
    )
    stages = {
        stage: "\n".join(f"// ---- {p.name}\n{p.stages[stage]}" for p in parts) for stage in ("jaxpr", "stablehlo")
    }
    return dataclasses.replace(
        parts[1], name=name, stages=stages, module=verify(module), param_args=params, buffer_args=buffers, xla_cost={}
    )
