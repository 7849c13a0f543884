"""Regional lowering of any module that holds a stack of structurally identical layers (an
`nn.ModuleList` of blocks: a Hugging Face model's `model.layers`, GPT-2's `transformer.h`, a
user's own), and the static MoE form HF's Mixtral experts are lowered in.

The recipe, in five steps:
    1. find the stack: the longest ModuleList of two or more children of one type whose weights
       and buffers have the same names, shapes and dtypes (`find_stack`);
    2. cut it to its first two layers, each marked by an FX annotation (`node.meta["custom"]`),
       and torch.export it: no op of the module's own may run between them (it would run once
       per layer); then cut it to its first layer and export it again, for the parts;
    3. split the exported graph where the mark starts and ends: ops before the stack, the layer,
       ops after it (`torch.fx.passes.split_module`);
    4. export and import each part through torch-mlir on its own;
    5. compose them (reference/ir/compose.py `compose_stack`): the layer is one function called
       with trip_count = the stack's length, its weights standing for that many layers' weights.
Time and memory are those of a two-layer export and a one-layer lowering, whatever the depth.
A module that runs ops of its own between layers is refused, and lowering it flat
(`regional=False`) is the way; torch.export's assertions (`ASSERTIONS`, no-ops) are none. Layers
that read different tensors of the module's (Gemma-2's sliding-window and full attention masks)
are lowered as the first, and a note says so. HF llama-3.2-1b: 2.2 s against 8.2 s flat, with the
same FLOPs (benchmarks/hf_lowering.py).
"""

from __future__ import annotations

import contextlib
import functools
import warnings

import torch
from torch import nn

from pytorch_side.export import eval_note, export_module, to_stablehlo
from reference.errors import LoweringFailed
from reference.ir import parse_stablehlo, verify
from reference.ir.compose import Wire, compose_stack
from reference.lowering import Lowering

REGION = "landscape_stack_layer"  # the FX annotation key marking the layer's ops

# torch.export's assertions: each checks a tensor's metadata (dtype, shape, device) or a symbolic
# int's range at run time and returns nothing (schema `-> ()`): no op reads it, and it computes
# nothing to cost. torch.export adds them after tracing, without the FX annotation of the op they
# guard (Gemma-2's RMSNorm's `self.weight.float()` gets an `_assert_tensor_metadata` inside the
# layer), so they are no op of the module's own wherever they stand: the checks let them through,
# and they are dropped from the graph before it is split (none is wired between parts). Re-exporting
# a part adds its own again, which torch-mlir lowers to nothing: no StableHLO op, nothing costed.
ASSERTIONS = (
    torch.ops.aten._assert_tensor_metadata.default,
    torch.ops.aten._assert_scalar.default,
    torch.ops.aten._assert_async.default,
    torch.ops.aten._assert_async.msg,
    torch.ops.aten.sym_constrain_range.default,
    torch.ops.aten.sym_constrain_range_for_size.default,
)


def _signature(module: nn.Module) -> tuple:
    """What makes two layers interchangeable: type, and every weight's and buffer's name, shape, dtype."""
    state = [*module.named_parameters(), *module.named_buffers()]
    return (type(module), tuple((n, tuple(t.shape), t.dtype) for n, t in state))


def _size(stack: nn.ModuleList) -> int:
    return sum(t.numel() for t in (*stack.parameters(), *stack.buffers()))


def find_stack(module: nn.Module) -> tuple[str, nn.ModuleList] | None:
    """(dotted path, list) of the ModuleList of >= 2 structurally identical layers that holds the
    most weights (a decoder's layers, not the experts inside each); None if the module has none.
    The first such list wins a tie (the outermost, in module order)."""
    best = None
    for path, child in module.named_modules():
        if isinstance(child, nn.ModuleList) and len(child) >= 2 and len({_signature(m) for m in child}) == 1:
            if best is None or _size(child) > _size(best[1]):
                best = (path, child)
    return best


def _marked(layer: nn.Module, index: int):
    """The layer's forward, run under the REGION annotation with the layer's index."""
    import torch.fx.traceback as fx_traceback

    inner = layer.forward

    @functools.wraps(inner)
    def forward(*args, **kwargs):
        with fx_traceback.annotate({REGION: index}):
            return inner(*args, **kwargs)

    return forward


@contextlib.contextmanager
def _cut(module: nn.Module, path: str, stack: nn.ModuleList, count: int):
    """The module with its stack cut to its first `count` layers, each layer's forward marked
    with its index (`_marked`); the stack and the forwards are restored after."""
    parent = module.get_submodule(path.rpartition(".")[0]) if "." in path else module
    attr = path.rpartition(".")[2]
    kept = list(stack)[:count]
    setattr(parent, attr, nn.ModuleList(kept))
    for i, layer in enumerate(kept):
        layer.forward = _marked(layer, i)
    try:
        yield
    finally:
        for layer in kept:
            del layer.forward
        setattr(parent, attr, stack)


def _region(node):
    return node.meta.get("custom", {}).get(REGION)


def _is_assertion(node) -> bool:
    """An assertion of torch.export's (ASSERTIONS) that no op reads."""
    return node.op == "call_function" and node.target in ASSERTIONS and not node.users


def _drop_assertions(graph_module) -> int:
    """Erase the graph's assertions (`_is_assertion`); returns how many were erased."""
    dropped = [n for n in graph_module.graph.nodes if _is_assertion(n)]
    for node in dropped:
        graph_module.graph.erase_node(node)
    if dropped:
        graph_module.recompile()
    return len(dropped)


def _check_nothing_between(module: nn.Module, path: str, stack: nn.ModuleList, inputs, name: str) -> tuple[str, ...]:
    """Export the module cut to two layers (no torch-mlir) and check that no op of its own runs
    between them: what runs there runs once per layer, which one layer's cut cannot show.
    Returns a note where the two layers read different tensors the module computed before the
    stack (Gemma-2's alternating sliding-window and full attention masks): every call of the
    lowered layer reads the first layer's.

    Raises:
        LoweringFailed: such ops, named, with the fix.
    """
    import torch.fx.traceback as fx_traceback

    with _cut(module, path, stack, 2), fx_traceback.preserve_node_meta():
        graph = export_module(module, *inputs, name=name).graph_module.graph
    nodes = [n for n in graph.nodes if n.op not in ("placeholder", "output")]
    first = [i for i, n in enumerate(nodes) if _region(n) == 0]
    second = [i for i, n in enumerate(nodes) if _region(n) == 1]
    if not first or not second:
        raise LoweringFailed(f"{name}: regional lowering: a layer of {path} made no op")
    stray = [n.name for n in nodes[first[-1] + 1 : second[0]] if _region(n) is None and not _is_assertion(n)]
    if stray:
        raise LoweringFailed(
            f"{name}: regional lowering: ops of the module's own run between two layers of {path} "
            f"({', '.join(stray[:3])}); lower it flat (regional=False)"
        )
    # The module's own tensors each layer reads (not weights or inputs, nor the layer before's):
    # the second may read fewer (the first reads the stack's input, the second the first's output),
    # never one the first does not.
    reads = [
        {a.name for i in idx for a in nodes[i].all_input_nodes if a.op != "placeholder" and _region(a) is None}
        for idx in (first, second)
    ]
    if reads[1] - reads[0]:
        return (
            (
                f"the layers of {path} read different tensors computed before the stack (layer 1 reads "
                f"{', '.join(sorted(reads[1] - reads[0])[:3])}, layer 0 does not; Gemma-2's sliding-window and full "
                "attention masks, say): every call of the lowered layer reads layer 0's; lower it flat "
                "(regional=False) for each layer's own"
            ),
        )
    return ()


def _parts(graph) -> dict[str, int]:
    """Node name -> part: 0 before the layer, 1 the layer, 2 after it.

    Raises:
        LoweringFailed: the layer made no op, or an op of the module's own runs between two of
            the layer's (the stack cannot be cut there).
    """
    nodes = [n for n in graph.nodes if n.op not in ("placeholder", "output")]
    marked = [i for i, n in enumerate(nodes) if _region(n) == 0]
    if not marked:
        raise LoweringFailed("regional lowering: the stack's first layer made no op")
    first, last = marked[0], marked[-1]
    stray = [n.name for n in nodes[first : last + 1] if _region(n) is None and not _is_assertion(n)]
    if stray:
        raise LoweringFailed(
            f"regional lowering: ops of the module's own run inside the layer's ({', '.join(stray[:3])}); "
            "lower it flat (regional=False)"
        )
    return {n.name: 0 if i < first else 1 if i <= last else 2 for i, n in enumerate(nodes)}


def _import_part(submodule, name: str):
    """One part of the split graph through torch.export and torch-mlir: (IR module, StableHLO text, notes)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    placeholders = [n for n in submodule.graph.nodes if n.op == "placeholder"]
    try:
        with warnings.catch_warnings(), FakeTensorMode(allow_non_fake_inputs=True):
            warnings.simplefilter("ignore", FutureWarning)  # torch's pytree deprecation notices
            args = tuple(torch.empty(n.meta["val"].shape, dtype=n.meta["val"].dtype) for n in placeholders)
            exported = torch.export.export(submodule, args)
    except Exception as err:  # noqa: BLE001 - reported as one line
        raise LoweringFailed(
            f"{name}: re-exporting a part failed: {type(err).__name__}: {str(err).splitlines()[0]}"
        ) from err
    mlir, notes = to_stablehlo(exported, name)
    text = mlir.operation.get_asm(enable_debug_info=True)
    return verify(parse_stablehlo(text)), mlir.operation.get_asm(), notes


def lower_stack(module: nn.Module, *example_inputs, name: str = "module") -> Lowering:
    """Lower a module with a stack of identical layers regionally (module doc): the parts around
    the stack once, one layer once, called len(stack) times.

    Raises:
        LoweringFailed: the module has no such stack, or it cannot be cut around its layer;
            any export or torch-mlir failure, as lower_module's.
        CaptureFailed: data-dependent control flow (lower_module's).
    """
    import torch.fx.traceback as fx_traceback
    from torch.fx.passes.split_module import split_module

    found = find_stack(module)
    if found is None:
        raise LoweringFailed(
            f"{name}: regional lowering needs an nn.ModuleList of two or more identical layers; "
            "the module has none (lower it flat: regional=False)"
        )
    path, stack = found
    state = [*module.named_parameters(), *module.named_buffers()]  # before the cut: every layer's
    notes = list(_check_nothing_between(module, path, stack, example_inputs, name))
    with _cut(module, path, stack, 1), fx_traceback.preserve_node_meta():
        cut_state = [k for k, _ in (*module.named_parameters(), *module.named_buffers())]
        n_params = len(list(module.parameters()))
        exported = export_module(module, *example_inputs, name=name, notes=notes)
    gm = exported.graph_module
    _drop_assertions(gm)
    part_of = _parts(gm.graph)
    top = split_module(gm, None, lambda node: part_of[node.name], keep_original_order=True)
    placeholders = [n for n in top.graph.nodes if n.op == "placeholder"]
    calls = [n for n in top.graph.nodes if n.op == "call_module"]
    index = {n.name: i for i, n in enumerate(calls)}
    block = [n.target for n in calls].index("submod_1")  # split_module names part k submod_k
    # Each placeholder's name and kind: the wrapper's user inputs are the state, then the inputs;
    # anything torch.export lifted besides (constant tensors) is state the module holds.
    user_names = [*cut_state, *(f"inputs[{i}]" for i in range(len(example_inputs)))]
    arg_names, kinds, users = [], [], 0
    for spec in exported.graph_signature.input_specs:
        if spec.kind == torch.export.graph_signature.InputKind.USER_INPUT:
            arg_names.append(user_names[users])
            kinds.append("param" if users < n_params else "buffer" if users < len(cut_state) else "input")
            users += 1
        else:
            arg_names.append(str(spec.target or spec.arg.name))
            kinds.append("buffer")

    def wire(arg) -> Wire:
        if arg.op == "placeholder":
            return Wire(placeholders.index(arg))
        if arg.op == "call_module":
            return Wire(0, index[arg.name])
        if arg.op == "call_function" and arg.args and getattr(arg.args[0], "op", None) == "call_module":
            return Wire(arg.args[1], index[arg.args[0].name])  # operator.getitem(part, k)
        raise LoweringFailed(f"{name}: regional lowering: cannot wire {arg.op} {arg.name} between the parts")

    parts, texts, wiring = [], [], []
    for i, call in enumerate(calls):
        ir_module, text, retried = _import_part(
            getattr(top, call.target), f"{name}.{'layer' if i == block else f'part{i}'}"
        )
        notes.extend(n for n in retried if n not in notes)
        parts.append(ir_module)
        texts.append(text)
        wiring.append(tuple(wire(a) for a in call.args))
    (out,) = [n for n in top.graph.nodes if n.op == "output"]
    results = out.args[0] if isinstance(out.args[0], (tuple, list)) else (out.args[0],)
    outputs = tuple(wire(a) for a in results)
    # The program's arguments: the placeholders some part reads, typed by their first reader.
    types: dict[int, object] = {}
    for ir_module, wires in zip(parts, wiring):
        for w, (_, t) in zip(wires, ir_module.main.args):
            if w.part is None:
                types.setdefault(w.index, t)
    used = sorted(types)
    renumber = {old: new for new, old in enumerate(used)}
    remap = lambda w: w if w.part is not None else Wire(renumber[w.index])  # noqa: E731
    composed = compose_stack(
        tuple(types[i] for i in used),
        tuple(arg_names[i] for i in used),
        tuple(parts),
        block,
        tuple(tuple(remap(w) for w in ws) for ws in wiring),
        tuple(remap(w) for w in outputs),
        len(stack),
    )
    params = tuple(renumber[i] for i in used if kinds[i] == "param")
    buffers = tuple(renumber[i] for i in used if kinds[i] == "buffer")
    labels = [
        f"layer (x{len(stack)}, {path})" if i == block else ("before the stack" if i < block else "after the stack")
        for i in range(len(calls))
    ]
    stages = {
        "fx": gm.print_readable(print_output=False),
        "stablehlo": "\n".join(f"// ---- {label}\n{text}" for label, text in zip(labels, texts)),
    }
    notes.append(
        f"lowered regionally: {path} is {len(stack)} identical {type(stack[0]).__name__} layers; one was lowered "
        f"and is called {len(stack)} times ({len(state)} weights and buffers in all)"
    )
    return Lowering(
        "torch", name, stages, verify(composed), params, buffer_args=buffers, notes=eval_note(module) + tuple(notes)
    )
