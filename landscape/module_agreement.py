"""Numerical agreement for one's own code: a PyTorch module, its JAX port and a float64 reference.

`check_module_agreement(torch_module, jax_fn, inputs)` is `landscape run`'s three-way check for
a module outside the catalogue. In each dtype (float32, bfloat16, float16 by default):

1. The module's weights (its `state_dict`) and the floating inputs are rounded to the dtype, once,
   and every side computes on those same numbers; integer inputs (token ids) pass unchanged.
2. PyTorch: a copy of the module, cast to the dtype, in eval mode, without autograd.
3. JAX, by one of two rules:
   - an `nnx.Module`: the weights go in by `jax_side.params`'s rule (PyTorch state-dict names;
     nnx.Linear's kernel is the transposed weight, LayerNorm's scale its weight, Embed's
     embedding its weight, Conv's kernel HWIO), so the two modules' parameter trees must
     correspond name for name. Only parameters move; the NNX module builds its own buffers.
   - any other callable: called as `jax_fn(params, *inputs)` under `jax.jit`, with `params` a
     flat dict keyed by the state_dict's names (buffers included) in PyTorch's layout
     (`nn.Linear.weight` is [out, in], so the port computes `x @ w.T`).
4. The reference: `reference(weights, *inputs)` on float64 numpy if given, else the module itself
   run in float64 on the CPU (a deep copy, cast with `.double()`).

Each dtype is judged by the tolerance table (`reference.tolerance`), each side against the
reference and side against side, exactly as `landscape run` judges the catalogue. The frameworks
are imported here, inside the function, never by `landscape --help`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from reference.agreement import Agreement, compare_outputs
from reference.dtypes import FLOAT_DTYPES, get_dtype, numpy_dtype
from reference.errors import InvalidShape


@dataclass(frozen=True)
class ModuleAgreement:
    """One `Agreement` per dtype, in the order asked; `ok` when every dtype passes."""

    name: str
    results: tuple[Agreement, ...]
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    def __getitem__(self, dtype: str) -> Agreement:
        canonical = get_dtype(dtype, FLOAT_DTYPES).name
        return next(r for r in self.results if r.dtype == canonical)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "ok": self.ok,
            "notes": list(self.notes),
            "dtypes": [r.to_dict() for r in self.results],
        }

    def summary(self) -> str:
        """One line per dtype and comparison: max abs error, the bound, pass or FAIL."""
        lines = []
        for r in self.results:
            for pair, e in r.errors.items():
                verdict = "pass" if e.ok else "FAIL"
                lines.append(f"{r.dtype:<9} {pair:<13} max abs {e.max_abs:.3e}  bound {e.bound:.3e}  {verdict}")
        return "\n".join(lines)


def _as_numpy(x) -> np.ndarray:
    """A user's input as numpy: numpy, a torch tensor, a JAX array or a Python number."""
    if hasattr(x, "detach"):
        from pytorch_side.params import to_numpy

        return to_numpy(x)
    return np.asarray(x)


def _exact(array: np.ndarray) -> bool:
    """Integer and boolean arrays (ids, masks) pass unchanged; bfloat16's numpy kind is 'V', not 'f'."""
    return array.dtype.kind in "iub"


def _rounded(arrays: dict[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    """Floating arrays rounded to the dtype; integer and boolean ones unchanged."""
    return {k: v if _exact(v) else v.astype(numpy_dtype(dtype)) for k, v in arrays.items()}


def _float64(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: v if _exact(v) else v.astype(np.float64) for k, v in arrays.items()}


Outputs = tuple[tuple[np.ndarray, ...], tuple[str, ...]]  # (the outputs in float64, the dtypes they came in)


def _torch_outputs(module, inputs: Sequence[np.ndarray], dropped: dict) -> Outputs:
    import torch

    from pytorch_side.export import tensor_outputs
    from pytorch_side.params import to_numpy, to_torch

    with torch.inference_mode():
        out = module(*(to_torch(np.ascontiguousarray(x)) for x in inputs))
    tensors = tensor_outputs(out, dropped)
    return tuple(to_numpy(t).astype(np.float64) for t in tensors), tuple(
        str(t.dtype).removeprefix("torch.") for t in tensors
    )


def _torch_side(module, weights: dict[str, np.ndarray], dtype, inputs, dropped: dict) -> Outputs:
    """A copy of the module in `dtype` (a torch dtype), loaded with `weights`, run in eval mode."""
    from pytorch_side.params import to_torch

    side = copy.deepcopy(module).eval().to(dtype)
    side.load_state_dict({k: to_torch(np.ascontiguousarray(v)) for k, v in weights.items()}, strict=True)
    return _torch_outputs(side, inputs, dropped)


# The NNX layers whose weights move by rule (jax_side.params.RULES); a bare nnx.Param is not one.
NNX_RULE_HINT = (
    "an NNX port's weights move only into nnx.Linear, nnx.Conv, nnx.LayerNorm, nnx.RMSNorm and nnx.Embed "
    "layers named as the module's; for other parameters, port as a function of the state_dict"
)


def _jax_side(jax_fn, weights: dict[str, np.ndarray], param_names: set[str], inputs) -> Outputs:
    import jax
    from flax import nnx

    from jax_side.params import load_weights
    from reference.errors import WeightMismatch

    if isinstance(jax_fn, nnx.Module):
        graphdef, state = nnx.split(jax_fn)
        try:
            port = load_weights(nnx.merge(graphdef, state), {k: v for k, v in weights.items() if k in param_names})
        except WeightMismatch as err:
            raise WeightMismatch(err.missing, err.unexpected, err.shapes, NNX_RULE_HINT) from None
        graphdef, state = nnx.split(port)
        out = jax.jit(lambda st, *xs: nnx.merge(graphdef, st)(*xs))(state, *inputs)
    else:
        params = {k: jax.numpy.asarray(v) for k, v in weights.items()}
        out = jax.jit(jax_fn)(params, *inputs)
    leaves = jax.tree.leaves(out)
    return tuple(np.asarray(o).astype(np.float64) for o in leaves), tuple(str(o.dtype) for o in leaves)


def check_module_agreement(
    torch_module,
    jax_fn,
    inputs: Sequence,
    *,
    reference: Callable[..., object] | None = None,
    dtypes: Sequence[str] = FLOAT_DTYPES,
    name: str | None = None,
    reduction: int = 0,
) -> ModuleAgreement:
    """A PyTorch module, its JAX port and a float64 reference, compared in each dtype.

    Args:
        torch_module: any `torch.nn.Module`; it is copied, never changed.
        jax_fn: an `nnx.Module` whose weights follow the module's state_dict names, or a
            function `jax_fn(params, *inputs)` taking the state_dict as a flat dict (module doc).
        inputs: the example inputs, numpy arrays or tensors; floating ones are rounded to each
            dtype, integer ones passed unchanged.
        reference: `reference(weights, *inputs)` in float64 numpy, returning an array or a tuple
            of arrays; by default the module itself in float64 on the CPU.
        dtypes: any spellings of float32, bfloat16 and float16.
        name: a label for the results (default: the module's class name).
        reduction: the longest sum the program computes, when over 4,096 elements: widens the
            bound as `tolerance_for` says.

    Returns:
        ModuleAgreement: one `reference.agreement.Agreement` per dtype (`result["bf16"]`),
        `ok`, `summary()` and `to_dict()`.

    Raises:
        UnknownName: a dtype outside float32, bfloat16, float16.
        WeightMismatch: an NNX port whose weights do not correspond to the module's by name.
        InvalidShape: a side returns a different number or shape of outputs than the reference.
    """
    import torch

    dtypes = tuple(get_dtype(d, FLOAT_DTYPES).name for d in dtypes)
    name = name or type(torch_module).__name__
    state = {k: _as_numpy(v) for k, v in torch_module.state_dict().items()}
    param_names = {k for k, _ in torch_module.named_parameters()}
    given = [_as_numpy(x) for x in inputs]
    dropped: dict[str, str] = {}
    results, notes = [], []
    for dtype in dtypes:
        weights = _rounded(state, dtype)
        args = list(_rounded({str(i): x for i, x in enumerate(given)}, dtype).values())
        weights64, args64 = _float64(weights), list(_float64({str(i): x for i, x in enumerate(args)}).values())
        if reference is None:
            expected, _ = _torch_side(torch_module, weights64, torch.float64, args64, dropped)
        else:
            out = reference(weights64, *args64)
            expected = tuple(
                np.asarray(o, dtype=np.float64) for o in (out if isinstance(out, (tuple, list)) else (out,))
            )
        ran = {
            "torch": _torch_side(torch_module, weights, getattr(torch, dtype), args, dropped),
            "jax": _jax_side(jax_fn, weights, param_names, args),
        }
        sides = {side: outs for side, (outs, _) in ran.items()}
        for side, (outs, types) in ran.items():
            if len(outs) != len(expected):
                raise InvalidShape(name, f"{side} outputs", len(outs), f"the reference returns {len(expected)}")
            other = sorted({t for t in types if t != dtype and t not in ("bool", "int32", "int64")})
            if other:
                notes.append(f"{side} returns {', '.join(other)} in the {dtype} run (the table judges it as {dtype})")
        results.append(compare_outputs(name, dtype, expected, sides, reduction=reduction))
    notes += [f"left out of the comparison, not a tensor: {path} ({kind})" for path, kind in sorted(dropped.items())]
    return ModuleAgreement(name, tuple(results), tuple(dict.fromkeys(notes)))


__all__ = ["ModuleAgreement", "check_module_agreement"]
