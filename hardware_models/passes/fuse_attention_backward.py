"""fuse_attention_backward: attention's backward as one kernel whose scores never reach main
memory, as FlashAttention's backward runs it (Dao et al. 2022, algorithm 4; FlashAttention-2's
backward; the Pallas flash kernel's custom VJP). `fuse_attention` calls it after it has matched
the forward kernels, and forms its groups the same way (kind "attention", its shape in
`plan.attention`), so every family costs it as it costs the forward kernel.

A training step's backward recomputes the scores from Q and K (the attention core is
checkpointed, reference/training.py) and computes, over the score square:

    S  = dot(Q', K')          P = softmax(S)          entry dots: their results are score-sized
    dP = dot(dO', V')         dS = P * (dP - rowsum(dP * P))
    dV = dot(P, dO)           dQ = dot(dS, K)          dK = dot(dS, Q)      exit dots

The pattern: from a score dot S (a contraction not yet fused), the region grows through every op
that reads a region value, except contractions: a contraction reading a region value is an exit
dot (its result, dQ, dK or dV, is written out), and a contraction whose result a region op reads
is an entry dot (dP), whose result joins the region. The region must hold an exponential and a
reduction, at least two exit dots, no call or loop, at most MAX_REGION ops, and none of its values
may be returned. Q, K, V and dO reach the entry dots through layout ops (the forward matcher's
operand chains); dQ, dK and dV leave the exit dots through converts and transposes.

Its main-memory bytes are then Q, K, V, dO and dQ, dK, dV (attention_placement), its FLOPs the
five dots' over the score tiles a causal kernel computes (the forward's computed_share: the
backward skips the same blocks).
"""

from __future__ import annotations

from hardware_models.plan import causal_share, gemm_shape
from reference.ir import category

MAX_REGION = 600  # ops in a backward region beyond which it is not attention's (compiler choice)
EXIT_DOTS = 2  # dQ and dK at least (dV too when P is not kept); fewer is not a backward


def match_backward(matcher, seed: int, taken: set[int]) -> tuple[set[int], dict] | None:
    """(the kernel's ops among the grouped ones, its AttentionShape facts) when contraction
    `seed` computes the scores of an attention backward (module doc), else None. `matcher` is
    fuse_attention's (_Matcher): its plan, value graph, constants and operand chains."""
    plan, graph = matcher.plan, matcher.graph
    score = plan.ops[seed].op.result_types[0].elements
    region, entries, exits, stack = set(), {seed}, set(), list(plan.ops[seed].results)
    seen: set[str] = set()
    while stack:
        value = stack.pop()
        if value in seen:
            continue
        seen.add(value)
        for user in graph.users(value):
            if user < 0:  # a score-sized value returned: written out, not a fused kernel's
                return None
            if user in region or user in exits or user in entries or user in taken:
                if user in taken:
                    return None
                continue
            op = plan.ops[user].op
            if category(op) == "contraction":
                exits.add(user)
                continue
            if op.short_name in ("call", "while") or plan.ops[user].callee or len(region) >= MAX_REGION:
                return None
            region.add(user)
            stack.extend(plan.ops[user].results)
            pending = list(plan.ops[user].operands)
            while pending:  # back through score-sized producers: an entry dot (dP), or the softmax feeding P
                producer = graph.producer.get(graph.root(pending.pop()))
                if producer is None or producer in region or producer in entries or producer in taken:
                    continue
                p = plan.ops[producer]
                if not p.op.result_types or p.op.result_types[0].elements != score or p.callee:
                    continue
                if category(p.op) == "contraction":
                    entries.add(producer)
                    exits.discard(producer)
                else:
                    if p.op.short_name in ("call", "while") or graph.root(p.results[0]) in matcher.constant:
                        continue
                    region.add(producer)
                    pending.extend(p.operands)
                stack.extend(p.results)
    names = {plan.ops[i].op.short_name for i in region}
    if len(exits) < EXIT_DOTS or "exponential" not in names or "reduce" not in names:
        return None
    inside = region | entries | exits
    for dot in sorted(entries):  # Q, K, V and dO through their layout ops
        for value in plan.ops[dot].operands[:2]:
            inside |= matcher.operand_chain(value, inside)[0]
    for dot in sorted(exits):
        inside |= matcher.output_chain(dot, inside)
    if inside & taken:
        return None
    reduce = next(
        (
            plan.ops[i].op
            for i in sorted(region)
            if plan.ops[i].op.short_name == "reduce" and plan.ops[i].op.operand_types[0].elements == score
        ),
        None,
    )
    if reduce is None:
        return None
    kv_len = 1
    for d in reduce.attr("dimensions") or ():
        kv_len *= reduce.operand_types[0].shape[d]
    constants = {
        graph.root(v) for i in region for v in plan.ops[i].operands if graph.root(v) in matcher.constant
    }  # the mask reaches a select through views (JAX's `_where` call)
    types = plan.ops[seed].op.operand_types[:2]  # K: the scores' operand with fewer elements (GQA), else the second
    k_at = 0 if types[0].elements < types[1].elements else 1
    k_type = types[k_at]
    kv = {graph.root(matcher.operand_chain(plan.ops[seed].operands[k_at], inside)[1])}
    for dot in entries - {seed}:  # V: dP's operand shaped as K
        for value, typ in zip(plan.ops[dot].operands[:2], plan.ops[dot].op.operand_types):
            if typ.shape == k_type.shape:
                kv.add(graph.root(matcher.operand_chain(value, inside)[1]))
    head_dim = gemm_shape(plan.ops[seed].op, "").k
    kv_total = max(1, k_type.elements // max(kv_len * head_dim, 1))
    batch = k_type.shape[0] if k_type.shape else 1
    causal = matcher.causal_queries(constants, kv_len)
    skip = matcher.skip_tile
    facts = dict(
        causal_queries=causal,
        computed_share=causal_share(causal, kv_len, skip) if causal and skip else 1.0,
        skip_tile=tuple(skip or ()),
        query_rows=score // max(kv_len, 1),
        kv_heads=kv_total,
        kv_heads_per_sequence=kv_total // batch if batch and kv_total % batch == 0 else kv_total,
        kv_len=kv_len,
        head_dim=head_dim,
        dtype=plan.runs_as(k_type.dtype),
        kv=tuple(sorted(kv)),
        kv_positions=0,
    )
    return {i for i in inside if i in matcher.grouped}, facts
