"""The course's framework bugs on the JAX side, as functions the debugger plants
(reference.faults): each replaces the catalogue's softmax."""

from __future__ import annotations

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


FRAMEWORK_FAULTS = {"softmax-no-max": ("softmax", softmax_without_max), "host-sync": ("softmax", softmax_with_host_sync)}


def planted_module(fault: str, entry: str):
    """The buggy function for a framework fault on `entry`, or None where the fault has no site there."""
    site, fn = FRAMEWORK_FAULTS.get(fault, (None, None))
    return fn if site == entry else None
