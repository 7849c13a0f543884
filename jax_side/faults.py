"""The course's three framework bugs on the JAX side, as functions the debugger plants
(reference.faults): each replaces the catalogue's softmax."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def softmax_without_max(x):
    """softmax-no-max: exp(x) / sum(exp(x)), without subtracting the row's max first."""
    e = jnp.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def softmax_with_host_sync(x):
    """host-sync: the largest logit read back to the host with .item() to pick a branch."""
    if jnp.abs(x).max().item() > 1e4:
        x = x / 1e4
    e = jnp.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_with_shape_branch(x):
    """shape-branch: a row whose length is a multiple of 8 takes a vectorized max (the row as
    groups of 8); any other length, jax.nn.softmax. Both are right; a trace keeps one."""
    if x.shape[-1] % 8 == 0:
        peak = x.reshape(*x.shape[:-1], -1, 8).max(axis=-1).max(axis=-1, keepdims=True)
        e = jnp.exp(x - peak)
        return e / e.sum(axis=-1, keepdims=True)
    return jax.nn.softmax(x, axis=-1)


FRAMEWORK_FAULTS = {
    "softmax-no-max": ("softmax", softmax_without_max),
    "host-sync": ("softmax", softmax_with_host_sync),
    "shape-branch": ("softmax", softmax_with_shape_branch),
}


def planted_module(fault: str, entry: str):
    """The buggy function for a framework fault on `entry`, or None where the fault has no site there."""
    site, fn = FRAMEWORK_FAULTS.get(fault, (None, None))
    return fn if site == entry else None
