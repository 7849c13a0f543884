"""Dimension letters used in einsum strings and array-name suffixes, on every side.

An array named `x_btd` has axes (batch, query seq, model); `w_df` maps model to ffn width.
"""

GLOSSARY = {
    "B": "batch",
    "T": "query sequence (tokens processed now)",
    "S": "key/value sequence (cache length plus new tokens)",
    "D": "model width (hidden size)",
    "N": "query heads",
    "K": "key/value heads",
    "G": "query heads per key/value head (N // K)",
    "H": "head dimension",
    "F": "feed-forward width",
    "V": "vocabulary",
    "E": "experts",
    "C": "channels",
}
