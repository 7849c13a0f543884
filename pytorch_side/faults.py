"""The course's three framework bugs on the PyTorch side, as modules the debugger plants
(reference.faults): each replaces the catalogue's softmax."""

from __future__ import annotations

import torch
from torch import nn


class SoftmaxWithoutMax(nn.Module):
    """softmax-no-max: exp(x) / sum(exp(x)), without subtracting the row's max first."""

    def forward(self, x):
        e = torch.exp(x)
        return e / e.sum(dim=-1, keepdim=True)


class SoftmaxWithHostSync(nn.Module):
    """host-sync: the largest logit read back to the host with .item() to pick a branch."""

    def forward(self, x):
        if x.abs().max().item() > 1e4:
            x = x / 1e4
        return torch.softmax(x, dim=-1)


class SoftmaxWithShapeBranch(nn.Module):
    """shape-branch: a row whose length is a multiple of 8 takes a vectorized max (the row as
    groups of 8); any other length, torch.softmax. Both are right; the capture keeps one."""

    def forward(self, x):
        if x.shape[-1] % 8 == 0:
            peak = x.reshape(*x.shape[:-1], -1, 8).amax(dim=-1).amax(dim=-1, keepdim=True)
            e = torch.exp(x - peak)
            return e / e.sum(dim=-1, keepdim=True)
        return torch.softmax(x, dim=-1)


FRAMEWORK_FAULTS = {
    "softmax-no-max": ("softmax", SoftmaxWithoutMax),
    "host-sync": ("softmax", SoftmaxWithHostSync),
    "shape-branch": ("softmax", SoftmaxWithShapeBranch),
}


def planted_module(fault: str, entry: str):
    """The buggy module for a framework fault on `entry`, or None where the fault has no site there."""
    site, module = FRAMEWORK_FAULTS.get(fault, (None, None))
    return module() if site == entry else None
