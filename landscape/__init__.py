"""The application: the `landscape` command line, its renderings, the HTML report, and the
lowering-for-serving glue that the CLI and the benchmarks share.

It sits on top of the four packages (reference, pytorch_side, jax_side, hardware_models) and is
the only one that reaches into all of them, always lazily, inside the function that needs them.
"""
