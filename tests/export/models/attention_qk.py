"""Attention scores from a fused qkv projection, as DeiT writes them: linear -> reshape ->
permute(2, 0, 3, 1, 4) -> select q and k -> q @ k^T (4 heads of 16 over 65 tokens). At INT8,
Vela 5.1.0 lowers the batched MatMul one head at a time with every head reading head 0's q
(sdk.ethosu.functional.execute.STUCK_OPERAND_MATMUL)."""

import torch
from torch import nn

TOKENS, HEADS, HEAD_DIM = 65, 4, 16


class QkScores(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(HEADS * HEAD_DIM, 3 * HEADS * HEAD_DIM)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4)
        q, k = qkv[0], qkv[1]
        return q @ k.transpose(-2, -1)


def model() -> nn.Module:
    torch.manual_seed(0)
    return QkScores().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(1)
    return (torch.randn(1, TOKENS, HEADS * HEAD_DIM),)
