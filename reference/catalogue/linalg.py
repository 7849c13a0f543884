"""Contractions: matmul, batched matmul with broadcast batch dimensions, linear, conv2d."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from reference.errors import InvalidShape
from reference.spec import Entry, Param, TensorSpec, bias, no_weights, weight

M = Param("m", 64, "rows of the left operand")
N = Param("n", 64, "columns of the right operand")
K = Param("k", 64, "contracted dimension")


def _matmul(s, x, w):
    return x["a"] @ x["b"]


MATMUL = Entry(
    name="matmul",
    description="C[m,n] = A[m,k] @ B[k,n]",
    params=(M, N, K),
    inputs=lambda s: {"a": TensorSpec((s["m"], s["k"])), "b": weight((s["k"], s["n"]), s["k"])},
    weights=no_weights,
    reference=_matmul,
    largest=lambda s: {"output": (s["m"], s["n"])},
    reduction=lambda s: s["k"],
)

BATCHED_MATMUL = Entry(
    name="batched_matmul",
    description="C[b,h,m,n] = A[b,1,m,k] @ B[h,k,n], batch dimensions broadcast from both sides",
    params=(Param("batch", 2, "leading batch of A"), Param("heads", 3, "batch of B"), M, N, K),
    inputs=lambda s: {
        "a": TensorSpec((s["batch"], 1, s["m"], s["k"])),
        "b": weight((s["heads"], s["k"], s["n"]), s["k"]),
    },
    weights=no_weights,
    reference=_matmul,
    largest=lambda s: {"output": (s["batch"], s["heads"], s["m"], s["n"])},
    reduction=lambda s: s["k"],
)

LINEAR = Entry(
    name="linear",
    description="y[m,n] = x[m,k] @ W[n,k]^T + b[n] (nn.Linear / nnx.Linear)",
    params=(M, Param("k", 64, "input features"), Param("n", 64, "output features")),
    inputs=lambda s: {"x": TensorSpec((s["m"], s["k"]))},
    weights=lambda s: {"weight": weight((s["n"], s["k"]), s["k"]), "bias": bias((s["n"],))},
    reference=lambda s, x, w: x["x"] @ w["weight"].T + w["bias"],
    largest=lambda s: {"output": (s["m"], s["n"])},
    reduction=lambda s: s["k"],
    layout="weight is [out, in] (PyTorch); the JAX kernel is its transpose [in, out]",
)


def conv_out_size(size: int, kernel: int, stride: int, padding: int) -> int:
    """Output length of a convolution: floor((size + 2*padding - kernel) / stride) + 1."""
    return (size + 2 * padding - kernel) // stride + 1


def _conv_check(s):
    for dim in ("height", "width"):
        if s[dim] + 2 * s["padding"] < s["kernel"]:
            raise InvalidShape("conv2d", dim, s[dim], f"{dim} + 2*padding must be >= kernel={s['kernel']}")


def conv2d_reference(s, x, w):
    """NCHW x OIHW -> NCHW, explicit sliding-window sum in float64."""
    p, st = s["padding"], s["stride"]
    x_bchw = np.pad(x["x"], ((0, 0), (0, 0), (p, p), (p, p)))
    win = sliding_window_view(x_bchw, (s["kernel"], s["kernel"]), axis=(2, 3))[:, :, ::st, ::st]
    # win: [B, C, OH, OW, KH, KW]
    y_bijo = np.tensordot(win, w["weight"], axes=([1, 4, 5], [1, 2, 3]))
    return y_bijo.transpose(0, 3, 1, 2) + w["bias"][None, :, None, None]


def _conv_largest(s):
    """The padded input, the reference's im2col copy of every window, and the output."""
    padded = (s["height"] + 2 * s["padding"], s["width"] + 2 * s["padding"])
    out = tuple(conv_out_size(s[d], s["kernel"], s["stride"], s["padding"]) for d in ("height", "width"))
    return {
        "padded input": (s["batch"], s["c_in"], *padded),
        "windows": (s["batch"], *out, s["c_in"], s["kernel"], s["kernel"]),
        "output": (s["batch"], s["c_out"], *out),
    }


CONV2D = Entry(
    name="conv2d",
    description="2-D convolution with stride and zero padding, bias added",
    params=(
        Param("batch", 2, "images"),
        Param("c_in", 8, "input channels"),
        Param("c_out", 16, "output channels"),
        Param("height", 16, "input height"),
        Param("width", 16, "input width"),
        Param("kernel", 3, "square kernel size"),
        Param("stride", 1, "stride in both directions"),
        Param("padding", 1, "zero padding on each side", minimum=0),
    ),
    inputs=lambda s: {"x": TensorSpec((s["batch"], s["c_in"], s["height"], s["width"]))},
    weights=lambda s: {
        "weight": weight((s["c_out"], s["c_in"], s["kernel"], s["kernel"]), s["c_in"] * s["kernel"] ** 2),
        "bias": bias((s["c_out"],)),
    },
    reference=conv2d_reference,
    check=_conv_check,
    largest=_conv_largest,
    reduction=lambda s: s["c_in"] * s["kernel"] ** 2,  # a window of every input channel
    layout=(
        "reference and PyTorch: x NCHW, weight OIHW; JAX: x NHWC = x.transpose(0,2,3,1), "
        "kernel HWIO = weight.transpose(2,3,1,0), output back with y.transpose(0,3,1,2)"
    ),
)

ENTRIES = (MATMUL, BATCHED_MATMUL, LINEAR, CONV2D)
