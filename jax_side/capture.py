"""The JAX side of the debugger's ladder: one case run eagerly (R1, op by op, without jit),
traced to a jaxpr and replayed through `jax.core.eval_jaxpr` (R2), and lowered through
`jax.jit(...).lower()` with the case's own arrays as the program's arguments (R3 onwards).

A trace failure (a tracer converted to a Python value) is a `CaptureFailed` naming the
user's line (reference.errors).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import numpy as np
from flax import nnx

from jax_side.kernels import LAYOUTS, build
from jax_side.lower import lower_function
from jax_side.params import load_weights
from reference.errors import CaptureFailed
from reference.inputs import Case
from reference.lowering import Lowering


def _pure(fn):
    """(pure function of (state, *inputs), state leaves)."""
    if isinstance(fn, nnx.Module):
        graphdef, state = nnx.split(fn)
        return (lambda st, *xs: nnx.merge(graphdef, st)(*xs)), state
    return (lambda st, *xs: fn(*xs)), {}


def _layout(case: Case) -> tuple[list[np.ndarray], tuple | None]:
    in_perms, out_perm = LAYOUTS.get(case.entry.name, ({}, None))
    return [x.transpose(in_perms[k]) if k in in_perms else x for k, x in case.inputs.items()], out_perm


def _back(outputs, out_perm) -> tuple[np.ndarray, ...]:
    outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    outputs = tuple(np.asarray(o).astype(np.float64) for o in outputs)
    return tuple(o.transpose(out_perm) for o in outputs) if out_perm else outputs


@dataclass
class Captured:
    """A case's function, its jaxpr and its lowering; `arguments` feeds the IR."""

    pure: object
    state: object
    jaxpr: object
    lowering: Lowering

    @property
    def ops(self) -> list[tuple[str, str, str]]:
        return graph_ops(self.jaxpr)

    def arguments(self, case: Case) -> list[np.ndarray]:
        """The IR's arguments for `case`: the state's leaves, then the inputs in the JAX layout."""
        return [np.asarray(v) for v in jax.tree.leaves(self.state)] + _layout(case)[0]

    def eager(self, case: Case) -> tuple[np.ndarray, ...]:
        """R1 of the captured function (its weights) on `case`'s inputs: what the replay must equal."""
        inputs, out_perm = _layout(case)
        with jax.disable_jit():
            return _back(self.pure(self.state, *inputs), out_perm)

    def replay(self, case: Case) -> tuple[np.ndarray, ...]:
        """R2: the traced jaxpr evaluated by jax.core.eval_jaxpr on `case`'s inputs."""
        inputs, out_perm = _layout(case)
        leaves = jax.tree.leaves((self.state, *inputs))
        out = jax.core.eval_jaxpr(self.jaxpr.jaxpr, self.jaxpr.consts, *leaves)
        return _back(tuple(out), out_perm)


def graph_ops(jaxpr) -> list[tuple[str, str, str]]:
    """The equations of a closed jaxpr, in order: (primitive, the user's file:line, its code),
    from each equation's source info (the innermost frame outside JAX)."""
    import linecache

    from jax._src import source_info_util

    ops = []
    for eqn in jaxpr.jaxpr.eqns:
        name = eqn.primitive.name + (f"[{eqn.params['name']}]" if isinstance(eqn.params.get("name"), str) else "")
        frame = source_info_util.user_frame(eqn.source_info.traceback)
        if frame is None:
            ops.append((name, "", ""))
        else:
            code = linecache.getline(frame.file_name, frame.start_line).strip()
            ops.append((name, f"{frame.file_name.rsplit('/', 1)[-1]}:{frame.start_line}", code))
    return ops


def recapture_ops(case: Case, fn=None) -> list[tuple[str, str, str]]:
    """Trace the case's function once more (a jax.jit retrace, without lowering): its ops (graph_ops).

    Raises:
        CaptureFailed: as `capture`.
    """
    pure, state = _pure(module_for(case, fn))
    inputs, _ = _layout(case)
    try:
        return graph_ops(jax.make_jaxpr(pure)(state, *inputs))
    except Exception as err:  # noqa: BLE001 - every trace failure is explained in one line
        raise CaptureFailed.from_exception(err, "jax.jit's trace") from err


def module_for(case: Case, fn=None):
    """The case's module (or function) with its weights loaded, or the one given, as it is."""
    if fn is not None:
        return fn
    fn = build(case.entry.name, case.shapes, case.dtype)
    if case.weights:
        load_weights(fn, dict(case.weights))
    return fn


def eager(case: Case, fn=None) -> tuple[np.ndarray, ...]:
    """R1: the function run op by op (jax.disable_jit), as a user's notebook runs it."""
    pure, state = _pure(module_for(case, fn))
    inputs, out_perm = _layout(case)
    with jax.disable_jit():
        return _back(pure(state, *inputs), out_perm)


def capture(case: Case, fn=None) -> Captured:
    """Trace the case's function to a jaxpr and lower it.

    Raises:
        CaptureFailed: the trace converted a tracer to a Python value (`.item()`, `float(x)`,
            `if x > 0`); the message names the user's line and the fix.
    """
    pure, state = _pure(module_for(case, fn))
    inputs, _ = _layout(case)
    try:
        jaxpr = jax.make_jaxpr(pure)(state, *inputs)
    except Exception as err:  # noqa: BLE001 - every trace failure is explained in one line
        raise CaptureFailed.from_exception(err, "jax.jit's trace") from err
    n = len(jax.tree.leaves(state))
    return Captured(pure, state, jaxpr, lower_function(pure, state, *inputs, name=case.entry.name, n_params=n))
