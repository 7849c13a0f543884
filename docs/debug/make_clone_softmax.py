"""Writes docs/debug/clone_softmax.mlir: the course's stick case as a StableHLO file.

A 65-element fp16 vector is copied onto the device (on Spyre: into 128-byte sticks of 64 fp16
elements, so two sticks, the second holding one element and 63 of padding), then a softmax and
its argmax, the top token: the end-to-end check a user runs.

    python docs/debug/make_clone_softmax.py
"""

import pathlib

import jax
import jax.numpy as jnp


def clone_softmax(x):
    probabilities = jax.nn.softmax(x.astype(jnp.float32))
    return jnp.argmax(probabilities).astype(jnp.int32)


if __name__ == "__main__":
    lowered = jax.jit(clone_softmax).lower(jax.ShapeDtypeStruct((65,), jnp.float16))
    path = pathlib.Path(__file__).with_name("clone_softmax.mlir")
    path.write_text(lowered.as_text(debug_info=True))
    print(f"wrote {path}")
