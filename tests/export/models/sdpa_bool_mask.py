"""Scaled-dot-product attention with a bool causal mask (from ExecuTorch's U55 tests): the
mask's index arithmetic becomes a delegate with no inputs and rank-0 outputs."""

import torch
from torch import nn


class Attention(nn.Module):
    def forward(self, q, k, v):
        mask = torch.ones(4, 4, dtype=torch.bool).tril()
        return nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def model():
    return Attention()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8))
