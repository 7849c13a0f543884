"""check_module_agreement: a user's PyTorch module, its JAX port (a function over the state_dict,
or an NNX module by jax_side.params's rule) and a float64 reference, judged by the tolerance table
in each dtype. The tests prove that a faithful port passes in all three dtypes and that an
unfaithful one (tanh GELU for erf GELU, a misnamed layer, a wrong reference) does not."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from flax import nnx  # noqa: E402
from torch import nn  # noqa: E402

from landscape.module_agreement import check_module_agreement  # noqa: E402
from reference.errors import InvalidShape, UnknownName, WeightMismatch  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.jax]

F32 = jnp.float32


def _rows(v, like):
    """A vector broadcast over `like`'s leading axes, explicitly (the suite raises on implicit rank promotion)."""
    return v[(None,) * (like.ndim - 1)]


class Block(nn.Module):
    """The course's pre-norm block: LayerNorm, causal multi-head attention, GELU MLP."""

    def __init__(self, d=64, heads=4, d_ff=256):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, d_ff), nn.Linear(d_ff, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))


def _layernorm(x, w, b, eps=1e-5):
    x32 = x.astype(F32)
    mu = x32.mean(-1, keepdims=True)
    var = ((x32 - mu) ** 2).mean(-1, keepdims=True)
    return ((x32 - mu) * jax.lax.rsqrt(var + eps) * _rows(w, x) + _rows(b, x)).astype(x.dtype)


def _attention(q, k, v, heads):
    """[B, T, D] each; logits and softmax in float32 (XLA:CPU has no f16 x f16 -> f32 dot)."""
    b, t, d = q.shape
    q, k, v = (z.reshape(b, t, heads, -1).astype(F32) for z in (q, k, v))
    logits = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d // heads)
    logits = jnp.where(jnp.tril(jnp.ones((t, t), bool)), logits, -jnp.inf)
    return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(logits, axis=-1), v).reshape(b, t, d)


def jax_block(p, x, heads=4, approximate_gelu=False, eps=1e-5):
    """The port as a function of the state_dict (PyTorch layouts: Linear weights are [out, in])."""

    def linear(x, name):
        y = (x.astype(F32) @ p[f"{name}.weight"].T.astype(F32)).astype(x.dtype)
        return y + _rows(p[f"{name}.bias"], y)

    ln = lambda x, name: _layernorm(x, p[f"{name}.weight"], p[f"{name}.bias"], eps)  # noqa: E731
    q, k, v = jnp.split(linear(ln(x, "ln1"), "qkv"), 3, axis=-1)
    x = x + linear(_attention(q, k, v, heads).astype(x.dtype), "proj")
    return x + linear(jax.nn.gelu(linear(ln(x, "ln2"), "fc1"), approximate=approximate_gelu), "fc2")


class NNXBlock(nnx.Module):
    """The port as an NNX module whose layers bear the PyTorch module's names."""

    def __init__(self, d=64, heads=4, d_ff=256, qkv_name="qkv"):
        rngs = nnx.Rngs(0)
        self.heads = heads
        self.ln1, self.ln2 = nnx.LayerNorm(d, epsilon=1e-5, rngs=rngs), nnx.LayerNorm(d, epsilon=1e-5, rngs=rngs)
        setattr(self, qkv_name, nnx.Linear(d, 3 * d, rngs=rngs))
        self.qkv_name = qkv_name
        self.proj, self.fc1, self.fc2 = (
            nnx.Linear(d, d, rngs=rngs),
            nnx.Linear(d, d_ff, rngs=rngs),
            nnx.Linear(d_ff, d, rngs=rngs),
        )

    def __call__(self, x):
        q, k, v = jnp.split(getattr(self, self.qkv_name)(self.ln1(x)), 3, axis=-1)
        x = x + self.proj(_attention(q, k, v, self.heads).astype(x.dtype))
        return x + self.fc2(jax.nn.gelu(self.fc1(self.ln2(x)), approximate=False))


@pytest.fixture(scope="module")
def block_and_input():
    torch.manual_seed(0)
    return Block(), np.random.default_rng(0).standard_normal((2, 17, 64)).astype(np.float32)


def test_a_faithful_port_agrees_in_every_dtype(block_and_input):
    """Property: the port and the module meet the tolerance table against the module's own
    float64 run in float32, bfloat16 and float16, and the module is left as it was."""
    block, x = block_and_input
    result = check_module_agreement(block, jax_block, [x])
    assert [r.dtype for r in result.results] == ["float32", "bfloat16", "float16"]
    assert result.ok, result.summary()
    assert set(result["bf16"].errors) == {"torch_vs_ref", "jax_vs_ref", "torch_vs_jax"}
    # float32 is nearly exact; bfloat16 is not, and its error is of bfloat16's size (2**-8 units)
    assert result["float32"].errors["jax_vs_ref"].max_abs < 1e-5
    assert result["bfloat16"].errors["jax_vs_ref"].max_abs > 1e-4
    assert next(block.parameters()).dtype == torch.float32 and block.training


def test_an_unfaithful_port_fails(block_and_input):
    """GELU's tanh approximation for torch's erf GELU: 1e-4 off, outside float32's bound."""
    block, x = block_and_input
    result = check_module_agreement(block, lambda p, x: jax_block(p, x, approximate_gelu=True), [x], dtypes=["f32"])
    assert not result.ok
    assert result["float32"].errors["torch_vs_ref"].ok and not result["float32"].errors["jax_vs_ref"].ok


def test_nnx_port_by_the_documented_rule(block_and_input):
    """An NNX module gets the weights by name: Linear's kernel is weight.T, LayerNorm's scale its
    weight; its own random initialisation is overwritten, so it agrees."""
    block, x = block_and_input
    result = check_module_agreement(block, NNXBlock(), [x], dtypes=["float32", "bfloat16"])
    assert result.ok, result.summary()


def test_nnx_port_with_a_misnamed_layer_names_the_weights(block_and_input):
    block, x = block_and_input
    with pytest.raises(WeightMismatch, match="qkv.*nnx.Linear, nnx.Conv"):
        check_module_agreement(block, NNXBlock(qkv_name="attn_in"), [x], dtypes=["float32"])


def test_nnx_port_with_a_layer_of_another_size_is_refused(block_and_input):
    """A port whose MLP is half as wide takes no weight (its names all match): the shapes differ."""
    block, x = block_and_input
    with pytest.raises(WeightMismatch, match=r"shapes differ: fc1.bias \(256,\) \(needs \(128,\)\)"):
        check_module_agreement(block, NNXBlock(d_ff=128), [x], dtypes=["float32"])


def test_an_eps_error_shows_only_where_the_variance_is_small(block_and_input):
    """LayerNorm's eps (1e-6 for 1e-5, nnx.LayerNorm's default against torch's) moves an output of
    unit-variance rows by about eps/2: within float32's bound. Rows of variance 1e-4 expose it:
    the check is as good as its inputs."""
    block, x = block_and_input
    wrong_eps = lambda p, x: jax_block(p, x, eps=1e-6)  # noqa: E731
    assert check_module_agreement(block, wrong_eps, [x], dtypes=["float32"]).ok
    assert not check_module_agreement(block, wrong_eps, [x * 0.01], dtypes=["float32"]).ok
    assert check_module_agreement(block, jax_block, [x * 0.01], dtypes=["float32"]).ok


def test_a_port_returning_another_dtype_is_said(block_and_input):
    block, x = block_and_input
    upcast = lambda p, x: jax_block(p, x).astype(F32)  # noqa: E731
    result = check_module_agreement(block, upcast, [x], dtypes=["bfloat16"])
    assert result.notes == ("jax returns float32 in the bfloat16 run (the table judges it as bfloat16)",)


def test_a_given_reference_is_the_one_judged_against():
    """With a float64 numpy reference the module's own float64 run is not used: a correct one
    passes, one off by 1e-3 fails every side against it, yet the two sides still agree."""
    torch.manual_seed(1)
    lin = nn.Linear(65, 63)
    x = np.random.default_rng(1).standard_normal((3, 65)).astype(np.float32)
    port = lambda p, x: x @ p["weight"].T + _rows(p["bias"], x)  # noqa: E731
    good = lambda w, x: x @ w["weight"].T + w["bias"]  # noqa: E731
    off = lambda w, x: good(w, x) + 1e-3  # noqa: E731
    assert check_module_agreement(lin, port, [x], reference=good, dtypes=["float32"]).ok
    bad = check_module_agreement(lin, port, [x], reference=off, dtypes=["float32"])["float32"]
    assert not bad.errors["torch_vs_ref"].ok and not bad.errors["jax_vs_ref"].ok and bad.errors["torch_vs_jax"].ok


def test_integer_inputs_pass_unchanged():
    """Token ids are not rounded to the dtype: an embedding agrees exactly on every side."""
    torch.manual_seed(2)
    emb = nn.Embedding(129, 16)
    ids = np.random.default_rng(2).integers(0, 129, size=(2, 9))
    result = check_module_agreement(emb, lambda p, ids: p["weight"][ids], [ids])
    assert result.ok and all(e.max_abs == 0 for r in result.results for e in r.errors.values())


def test_outputs_that_are_not_tensors_are_left_out_and_said():
    class WithCache(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            return {"y": self.lin(x), "cache": object()}

    x = np.ones((1, 8), np.float32)
    result = check_module_agreement(
        WithCache(), lambda p, x: {"y": x @ p["lin.weight"].T + _rows(p["lin.bias"], x)}, [x], dtypes=["float32"]
    )
    assert result.ok and any("output.cache" in n for n in result.notes)


def test_a_port_with_another_number_of_outputs_is_refused():
    x = np.ones((1, 8), np.float32)
    with pytest.raises(InvalidShape, match="jax outputs"):
        check_module_agreement(nn.Linear(8, 8), lambda p, x: (x, x), [x], dtypes=["float32"])


def test_an_unknown_dtype_names_the_valid_ones():
    with pytest.raises(UnknownName, match="float32, bfloat16, float16"):
        check_module_agreement(nn.Linear(8, 8), lambda p, x: x, [np.ones((1, 8), np.float32)], dtypes=["int8"])
