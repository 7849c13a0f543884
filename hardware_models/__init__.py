"""Analytical hardware models (targets, target compilers, cost models); filled by later issues.

Imports only `reference`, never torch or jax.
"""
