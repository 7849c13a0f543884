"""The interpreter's numpy kernels of the structured ops: dot_general (as a batched matmul),
convolution, gather and scatter, each from the op's dimension numbers (reference/ir/interpret.py
runs the rest)."""

from __future__ import annotations

import math

import numpy as np

from reference.errors import MalformedInput
from reference.ir.counters import padding_pairs
from reference.ir.graph import Op


class CannotInterpret(MalformedInput):
    """An op (or an attribute of one) that the interpreter does not execute; names the op."""


def as_matmul(a: np.ndarray, b: np.ndarray, d) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """A dot_general's operands as batched matrices [*batch, m, k] and [*batch, k, n], and the shape
    of its result: batch, lhs free, rhs free dims (in operand order)."""
    a_free = [i for i in range(a.ndim) if i not in d.lhs_batch and i not in d.lhs_contracting]
    b_free = [i for i in range(b.ndim) if i not in d.rhs_batch and i not in d.rhs_contracting]
    at = np.transpose(a, (*d.lhs_batch, *a_free, *d.lhs_contracting))
    bt = np.transpose(b, (*d.rhs_batch, *d.rhs_contracting, *b_free))
    batch = at.shape[: len(d.lhs_batch)]
    m = math.prod(at.shape[len(batch) : len(batch) + len(a_free)])
    k = math.prod(at.shape[len(batch) + len(a_free) :])
    n = math.prod(bt.shape[len(batch) + len(d.rhs_contracting) :])
    shape = (*batch, *(a.shape[i] for i in a_free), *(b.shape[i] for i in b_free))
    return at.reshape((*batch, m, k)), bt.reshape((*batch, k, n)), shape


def dot_general(a: np.ndarray, b: np.ndarray, d) -> np.ndarray:
    """stablehlo.dot_general: result dims are batch, lhs free, rhs free (in operand order)."""
    am, bm, shape = as_matmul(a, b, d)
    return np.matmul(am, bm).reshape(shape)


def convolution(op: Op, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """stablehlo.convolution with strides, padding, dilations and feature groups, as a sum over taps."""
    d = op.attr("dimension_numbers")
    groups = op.attr("feature_group_count") or 1
    if (op.attr("batch_group_count") or 1) != 1:
        raise CannotInterpret(f"{op.name} {op.results[0]}: batch_group_count > 1 is not interpreted")
    n = len(d.input_spatial)
    x = np.transpose(lhs, (d.input_batch, d.input_feature, *d.input_spatial))
    w = np.transpose(rhs, (d.kernel_output_feature, d.kernel_input_feature, *d.kernel_spatial))
    strides = op.attr("window_strides") or (1,) * n
    lhs_dil = op.attr("lhs_dilation") or (1,) * n
    rhs_dil = op.attr("rhs_dilation") or (1,) * n
    pads = padding_pairs(op.attr("padding"), n)
    if any(v != 1 for v in lhs_dil):
        spread = np.zeros((*x.shape[:2], *((s - 1) * k + 1 for s, k in zip(x.shape[2:], lhs_dil))), x.dtype)
        spread[(slice(None), slice(None), *(slice(None, None, k) for k in lhs_dil))] = x
        x = spread
    x = np.pad(x, ((0, 0), (0, 0), *((max(a, 0), max(b, 0)) for a, b in pads)))
    x = x[
        (slice(None), slice(None), *(slice(max(-a, 0), x.shape[2 + i] - max(-b, 0)) for i, (a, b) in enumerate(pads)))
    ]
    out_t = op.result_types[0].shape
    out_spatial = tuple(out_t[i] for i in d.output_spatial)
    batch, cout = x.shape[0], w.shape[0]
    cin_g, cout_g = w.shape[1], cout // groups
    out = np.zeros((batch, cout, *out_spatial), dtype=x.dtype)
    for tap in np.ndindex(*w.shape[2:]):
        window = tuple(
            slice(t * r, t * r + (o - 1) * s + 1, s) for t, r, o, s in zip(tap, rhs_dil, out_spatial, strides)
        )
        patch = x[(slice(None), slice(None), *window)]
        for g in range(groups):
            xs = patch[:, g * cin_g : (g + 1) * cin_g]
            ws = w[g * cout_g : (g + 1) * cout_g, :, *tap]
            out[:, g * cout_g : (g + 1) * cout_g] += np.einsum("bc...,oc->bo...", xs, ws)
    perm = [0] * (n + 2)
    for src, dst in enumerate((d.output_batch, d.output_feature, *d.output_spatial)):
        perm[dst] = src
    return np.transpose(out, perm)


def _index_rows(indices: np.ndarray, index_vector_dim: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """(rows of start indices, the shape of the positions they sit at)."""
    if index_vector_dim == indices.ndim:
        indices = indices[..., None]
    moved = np.moveaxis(indices, index_vector_dim, -1)
    return moved.reshape(-1, moved.shape[-1]).astype(np.int64), moved.shape[:-1]


def gather(operand: np.ndarray, indices: np.ndarray, d, sizes, out_shape) -> np.ndarray:
    """stablehlo.gather (without batching dimensions): one window per start index, clamped into range."""
    if d.operand_batching_dims:
        raise CannotInterpret("a gather with operand batching dimensions is not interpreted")
    rows, positions = _index_rows(indices, d.index_vector_dim)
    windows = []
    for row in rows:
        start = [0] * operand.ndim
        for k, dim in enumerate(d.start_index_map):
            start[dim] = int(np.clip(row[k], 0, operand.shape[dim] - sizes[dim]))
        window = operand[tuple(slice(s, s + n) for s, n in zip(start, sizes))]
        windows.append(np.squeeze(window, axis=tuple(d.collapsed_slice_dims)) if d.collapsed_slice_dims else window)
    stacked = (
        np.stack(windows).reshape((*positions, *windows[0].shape)) if windows else np.zeros(out_shape, operand.dtype)
    )
    batch_axes = iter(range(len(positions)))
    window_axes = iter(range(len(positions), stacked.ndim))
    perm = [next(window_axes) if j in d.offset_dims else next(batch_axes) for j in range(len(out_shape))]
    return np.transpose(stacked, perm) if windows else stacked


def scatter(operand: np.ndarray, indices: np.ndarray, updates: np.ndarray, d, combine) -> np.ndarray:
    """stablehlo.scatter (without batching dimensions): each update window combined into the operand at
    its start index; a window that would fall outside the operand is skipped, as the spec says."""
    if d.input_batching_dims:
        raise CannotInterpret("a scatter with input batching dimensions is not interpreted")
    out = np.array(operand)
    rows, positions = _index_rows(indices, d.index_vector_dim)
    scatter_axes = [i for i in range(updates.ndim) if i not in d.update_window_dims]
    moved = np.transpose(updates, (*scatter_axes, *d.update_window_dims))
    moved = moved.reshape((-1, *moved.shape[len(scatter_axes) :]))
    window_dims = [i for i in range(operand.ndim) if i not in d.inserted_window_dims]
    for row, window in zip(rows, moved):
        full = [1] * operand.ndim
        for i, dim in enumerate(window_dims):
            full[dim] = window.shape[i]
        window = window.reshape(full)
        start = [0] * operand.ndim
        for k, dim in enumerate(d.scatter_dims_to_operand_dims):
            start[dim] = int(row[k])
        if any(s < 0 or s + n > size for s, n, size in zip(start, full, operand.shape)):
            continue
        where = tuple(slice(s, s + n) for s, n in zip(start, full))
        out[where] = combine(out[where], window)
    return out
