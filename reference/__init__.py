"""Landscape's reference package: kernel specs, float64 references, model configs, tolerances.

Imports none of pytorch_side, jax_side or hardware_models.
"""
