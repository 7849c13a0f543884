"""Run a catalogue case (or any NNX module or JAX function) on the JAX side under `jax.jit`."""

from __future__ import annotations

import jax
import numpy as np
from flax import nnx

from jax_side.kernels import LAYOUTS, build
from jax_side.params import load_weights
from reference.inputs import Case


def run_module(fn, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
    """jit and call an NNX module or a pure JAX function; outputs come back as float64 numpy.

    A module is split into its graph definition and state, and the jitted function is pure
    in (state, inputs), so the weights are arguments, not constants baked into the program.
    """
    if isinstance(fn, nnx.Module):
        graphdef, state = nnx.split(fn)
        out = jax.jit(lambda st, *xs: nnx.merge(graphdef, st)(*xs))(state, *inputs)
    else:
        out = jax.jit(fn)(*inputs)
    out = out if isinstance(out, tuple) else (out,)
    return tuple(np.asarray(o).astype(np.float64) for o in out)


def run_case(case: Case) -> tuple[np.ndarray, ...]:
    """Build the entry, load the case's weights, convert layouts, run, convert back."""
    fn = build(case.entry.name, case.shapes, case.dtype)
    if case.weights:
        load_weights(fn, dict(case.weights))
    in_perms, out_perm = LAYOUTS.get(case.entry.name, ({}, None))
    inputs = [x.transpose(in_perms[k]) if k in in_perms else x for k, x in case.inputs.items()]
    outputs = run_module(fn, *inputs)
    return tuple(o.transpose(out_perm) for o in outputs) if out_perm else outputs
