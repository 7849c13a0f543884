"""The serving simulator's properties (hardware_models/serving), on a hand-made step cost so each
is quick and checkable by hand; tests/landscape/test_serve_cli.py runs it on lowered models."""

from __future__ import annotations

import json

import pytest

from hardware_models.serving import SLO, EngineConfig, RequestSpec, Workload, read_trace, search, simulate
from hardware_models.serving.kv_cache import BlockPool
from hardware_models.serving.step_cost import StepCosts, batch_grid, token_grid
from reference.errors import InvalidShape, MalformedInput

# A step costs 5 ms of weights until 256 tokens make it compute bound (then 0.02 ms a token), plus
# attention: a prompt chunk c costs 1e-8 x c^2 s, a decode 1 us + 40 ns a cached token.
COSTS = StepCosts(
    dense=((1, 0.005), (256, 0.005), (8192, 0.16)),
    prefill_attention=((1, 1e-8, 1.0), (8192, 0.67, 1.0)),
    decode_attention=((1, 1e-6, 4e-8), (256, 1e-6, 4e-8)),
    chips=1,
)
ROOMY = 10**6  # cache blocks: never full


def run(workload: Workload, engine: EngineConfig = EngineConfig(), blocks: int = ROOMY, costs=COSTS, **kw):
    return simulate(workload.specs(), costs, engine, cache_blocks=blocks, concurrency=workload.in_flight, **kw)


def test_block_arithmetic_by_hand():
    pool = BlockPool(100, 16)
    assert pool.blocks(1000) == 63 and pool.blocks(1008) == 63 and pool.blocks(1009) == 64  # the ceiling, computed once
    assert pool.blocks(1) == 1 and pool.blocks(16) == 1 and pool.blocks(17) == 2


@pytest.mark.parametrize("tokens", [1, 63, 65, 129, 1000])
def test_a_sliding_window_holds_at_most_its_window_and_a_block(tokens):
    """Rule of a windowed cache (vLLM's sliding-window manager): the blocks behind the window are
    freed, so a request holds blocks(min(tokens, window + block)) whatever its length."""
    pool = BlockPool(100, 16, window=64)
    assert pool.blocks(tokens) == -(-min(tokens, 64 + 16) // 16)


def test_with_a_window_a_decode_step_reads_at_most_the_window():
    """One request alone: its decode steps cost the window's keys once past it, not its length."""
    result = run(Workload(requests=1, input_len=512, output_len=65, concurrency=1), window=100)
    steps = [COSTS.step_s([], 1, min(512 + j, 100)) for j in range(1, 65)]
    assert result.summary["tpot_s"]["mean"] == pytest.approx(sum(steps) / 64)
    assert result.summary["kv_cache"]["peak_occupancy"] * ROOMY == -(-(100 + 16) // 16)


def test_grids_cover_their_ends():
    assert token_grid(8192) == (
        1,
        4,
        16,
        64,
        96,
        128,
        192,
        256,
        384,
        512,
        768,
        1024,
        1536,
        2048,
        3072,
        4096,
        6144,
        8192,
    )
    assert token_grid(100, (63, 65)) == (1, 4, 16, 63, 64, 65, 96, 100)
    assert batch_grid(256) == (1, 8, 64, 256) and batch_grid(1) == (1,)


def test_step_cost_by_hand():
    # 8 decodes at 1000 cached tokens each: dense(8) = 5 ms; attention 1 us + 40 ns x 8000 = 321 us
    assert COSTS.step_s([], 8, 8000) == pytest.approx(0.005 + 1e-6 + 4e-8 * 8000)
    # a 1024-token chunk after 1024 cached: dense(1024) + 1e-8 x 1024^2 x (1024 + 1024) / 1024
    dense = 0.005 + (0.16 - 0.005) * (1024 - 256) / (8192 - 256)
    assert COSTS.step_s([(1024, 1024)], 0, 0) == pytest.approx(dense + 2 * 1e-8 * 1024**2, rel=1e-3)


def test_a_chunk_after_a_long_context_pays_its_scores_and_the_launches_once():
    # attention 0.1 ms of launches + 1e-8 s a score: a 3-token chunk after 8,189 computes 3 x 8,192
    # scores, 0.1 ms + 0.25 ms, not its own time (~0.1 ms) scaled by 8,192 / 3 (the 275 ms it once cost)
    costs = StepCosts(
        dense=((1, 0.005), (8192, 0.16)),
        prefill_attention=((1, 1e-4 + 1e-8, 1.0), (8192, 1e-4 + 1e-8 * 8192**2, 1.0)),
        decode_attention=((1, 1e-6, 4e-8),),
        chips=1,
    )
    assert costs.prefill_attention_s(3, 8189) == pytest.approx(1e-4 + 1e-8 * 3 * 8192, rel=1e-6)
    assert costs.prefill_attention_s(8192) == pytest.approx(1e-4 + 1e-8 * 8192**2)
    # two chunks of a prompt cost its scores below the diagonal block's (c x (k + c) each): less than one
    halves = costs.prefill_attention_s(4096) + costs.prefill_attention_s(4096, 4096)
    assert halves == pytest.approx(
        2e-4 + 1e-8 * (4096**2 + 4096 * 8192), rel=1e-6
    ) and halves < costs.prefill_attention_s(8192)


def test_a_causal_kernel_chunk_pays_the_keys_before_it_whole_and_its_own_square_by_share():
    # a kernel computing half of each square (share 0.5, 1e-8 s a computed score): a prompt of 8192
    # costs 0.5 x 8192^2 scores; a chunk of 4096 after 4096 sees those 4096 keys whole (4096 x 4096)
    # and half its own square, so the two halves of a prompt cost what the whole prompt does
    costs = StepCosts(
        dense=((1, 0.005), (8192, 0.16)),
        prefill_attention=((1, 1e-8, 1.0), (4096, 1e-8 * 0.5 * 4096**2, 0.5), (8192, 1e-8 * 0.5 * 8192**2, 0.5)),
        decode_attention=((1, 1e-6, 4e-8),),
        chips=1,
    )
    assert costs.prefill_attention_s(4096, 4096) == pytest.approx(1e-8 * (4096**2 + 0.5 * 4096**2), rel=1e-6)
    halves = costs.prefill_attention_s(4096) + costs.prefill_attention_s(4096, 4096)
    assert halves == pytest.approx(costs.prefill_attention_s(8192), rel=1e-6)


def test_one_request_alone_is_its_prefill_then_its_decode_steps():
    result = run(Workload(requests=3, input_len=512, output_len=65, concurrency=1))
    ttft = COSTS.step_s([(512, 0)], 0, 0)
    steps = [COSTS.step_s([], 1, 512 + j) for j in range(1, 65)]
    assert result.summary["ttft_s"]["mean"] == pytest.approx(ttft)
    assert result.summary["tpot_s"]["mean"] == pytest.approx(sum(steps) / 64)
    assert result.summary["e2e_s"]["mean"] == pytest.approx(ttft + sum(steps))


@pytest.mark.parametrize("scheduler", ["chunked", "prefill-first"])
def test_throughput_rises_with_concurrency_until_compute_saturates(scheduler):
    engine = EngineConfig(scheduler=scheduler)
    rates = [
        run(Workload(requests=4 * c, input_len=256, output_len=64, concurrency=c), engine).summary[
            "output_tokens_per_s"
        ]
        for c in (1, 2, 8, 32, 256, 1024)
    ]
    assert all(b > a for a, b in zip(rates[:4], rates[1:5])), rates
    # past the batch cap (256 running) more requests only queue: throughput stops rising
    assert rates[5] <= rates[4] * 1.1, rates


def test_a_paged_cache_admits_more_requests_than_a_reserved_one():
    workload = Workload(requests=64, input_len=100, output_len=400, concurrency=32)
    blocks = 32 * 500 // 16 // 2  # half of what 32 whole requests reserve
    paged = run(workload, EngineConfig(cache="paged"), blocks)
    reserved = run(workload, EngineConfig(cache="reserved"), blocks)
    assert max(paged.timeline.running) > max(reserved.timeline.running)
    assert reserved.summary["preemptions"] == 0
    assert max(reserved.timeline.cache_blocks) <= blocks and max(paged.timeline.cache_blocks) <= blocks


def test_a_full_paged_cache_preempts_the_youngest_and_every_request_still_finishes():
    workload = Workload(requests=40, input_len=100, output_len=400, concurrency=20)
    result = run(workload, EngineConfig(cache="paged"), blocks=200)
    assert result.summary["preemptions"] > 0
    assert result.summary["requests"] == 40 and all(row[-1] >= 0 for row in result.requests)
    assert sum(1 for row in result.requests if row[-1]) > 0


def test_without_preemption_a_paged_cache_still_finishes():
    result = run(
        Workload(requests=30, input_len=100, output_len=400, concurrency=20),
        EngineConfig(cache="paged", preempt=False),
        blocks=200,
    )
    assert result.summary["requests"] == 30


def test_littles_law_holds_on_an_open_stream():
    # mean in flight (the time average of requests queued or running, from each request's interval)
    # = the offered rate x the mean latency; 20,000 requests keep the Poisson stream's own rate
    # within about 0.7% (one standard deviation) of the offered 20 per second
    workload = Workload(requests=20000, input_len=256, output_len=32, length_dist="exponential", rate=20.0, seed=3)
    s = run(workload).summary
    assert s["mean_in_flight"] == pytest.approx(20.0 * s["e2e_s"]["mean"], rel=0.02)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_percentiles_are_ordered(seed):
    s = run(Workload(requests=300, input_len=300, output_len=50, length_dist="uniform", rate=30.0, seed=seed)).summary
    for key in ("ttft_s", "tpot_s", "itl_s", "e2e_s"):
        assert s[key]["p99"] >= s[key]["p90"] >= s[key]["p50"] > 0


def test_a_seed_replays_byte_for_byte():
    workload = Workload(requests=200, input_len=300, output_len=40, length_dist="exponential", rate=15.0, seed=7)
    first, again = (json.dumps(run(workload).to_dict(), sort_keys=True) for _ in range(2))
    other = json.dumps(run(Workload(**{**workload.__dict__, "seed": 8})).to_dict(), sort_keys=True)
    assert first == again and first != other


def test_chunked_prefill_keeps_decodes_going_prefill_first_stalls_them():
    workload = Workload(requests=64, input_len=4000, output_len=64, concurrency=16)
    chunked = run(workload, EngineConfig(scheduler="chunked", token_budget=512)).summary
    first = run(workload, EngineConfig(scheduler="prefill-first", token_budget=512)).summary
    assert chunked["itl_s"]["p99"] < first["itl_s"]["p99"]  # a whole 4000-token prefill stalls every decode


def test_a_cache_too_small_for_one_request_is_refused():
    with pytest.raises(InvalidShape, match="one request needs"):
        run(Workload(requests=2, input_len=1000, output_len=10, concurrency=1), blocks=10)


def test_capacity_search_finds_a_rate_that_meets_the_slo_and_one_just_above_that_does_not():
    workload = Workload(requests=300, input_len=512, output_len=64, rate=1.0, seed=1)
    slo = SLO(ttft_s=0.2, tpot_s=0.02)

    def at(rate, cap):
        return run(workload.at(rate=rate), EngineConfig(max_batch=cap)).summary

    best, trials = search(at, slo, mode="rate", batch_caps=(64,), start=1.0)
    assert best is not None and not slo.misses(best.summary)
    above = [t for t in trials if t.load > best.load]
    assert above and all(not t.met for t in above if t.load <= best.load * 1.03)
    with pytest.raises(InvalidShape):
        SLO(ttft_s=None, tpot_s=None)
    impossible, _ = search(at, SLO(ttft_s=1e-6, tpot_s=None), mode="rate", batch_caps=(64,), start=1.0)
    assert impossible is None


def test_capacity_search_over_concurrency():
    def at(c, cap):
        return run(
            Workload(requests=4 * int(c), input_len=256, output_len=32, concurrency=int(c)), EngineConfig(max_batch=cap)
        ).summary

    best, trials = search(at, SLO(ttft_s=None, tpot_s=0.008), mode="concurrency", batch_caps=(128,), start=1)
    assert best is not None and best.summary["tpot_s"]["p90"] <= 0.008
    assert any(t.load == best.load + 1 and not t.met for t in trials)


@pytest.mark.parametrize(
    "text, problem",
    [
        ("input_len,output_len\n10,5\nabc,5\n", "line 3: input_len must be an integer >= 1"),
        ("input_len,output_len\n10,0\n", "line 2: output_len must be an integer >= 1"),
        ("input_len\n10\n", "the header lacks output_len"),
        ("arrival_s,input_len,output_len\n1,10,5\n0.5,10,5\n", "line 3: arrival_s 0.5 is before"),
        ("arrival_s,input_len,output_len\n1,10,5\n,10,5\n", "line 3: arrival_s is missing"),
        ("arrival_s,input_len,output_len\nnan,10,5\n", "line 2: arrival_s must be a number"),
        ('{"input_len": 10, "output_len": 5}\n{"input_len": 10}\n', "line 2: output_len is missing"),
        ('{"input_len": 10, "output_len": 5}\nnot json\n', "line 2: not a JSON object"),
        ("input_len,output_len\n", "no requests"),
    ],
)
def test_a_bad_trace_row_is_refused_naming_its_line(tmp_path, text, problem):
    path = tmp_path / "trace.csv"
    path.write_text(text)
    with pytest.raises(MalformedInput, match=problem):
        read_trace(str(path))


def test_a_trace_is_read_in_both_formats(tmp_path):
    (tmp_path / "a.csv").write_text("arrival_s,input_len,output_len\n0,100,10\n0.5,200,20\n")
    (tmp_path / "b.jsonl").write_text('{"input_len": 100, "output_len": 10}\n{"input_len": 200, "output_len": 20}\n')
    assert read_trace(str(tmp_path / "a.csv")) == [RequestSpec(100, 10, 0.0), RequestSpec(200, 20, 0.5)]
    assert read_trace(str(tmp_path / "b.jsonl")) == [RequestSpec(100, 10), RequestSpec(200, 20)]
    timed = Workload(trace=tuple(read_trace(str(tmp_path / "a.csv"))))
    result = run(timed)
    assert not timed.closed and sorted(r[0] for r in result.requests) == [0.0, 0.5]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rate": 0.0},
        {"rate": -1.0},
        {"rate": float("nan")},
        {"rate": float("inf")},
        {"concurrency": 0},
        {"concurrency": 2, "rate": 1.0},
        {"requests": 0},
    ],
)
def test_bad_loads_are_refused(kwargs):
    with pytest.raises(InvalidShape):
        Workload(**kwargs)
