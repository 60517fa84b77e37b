"""A small classifier trained here on four Gaussian blobs in 8 dimensions (fixed seed): the
`--dataset` tests' trained model, with its held-out samples (`held_out`)."""

import torch

CLASSES = 4
FEATURES = 8


def _blobs(count: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    centres = torch.randn(CLASSES, FEATURES, generator=torch.Generator().manual_seed(1)) * 2.0
    labels = torch.randint(0, CLASSES, (count,), generator=generator)
    points = centres[labels] + torch.randn(count, FEATURES, generator=generator) * 1.1
    return points, labels


def held_out(count: int = 48) -> tuple[torch.Tensor, torch.Tensor]:
    """Samples the model never saw in training, with their labels."""
    return _blobs(count, seed=7)


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 16), torch.nn.ReLU(), torch.nn.Linear(16, CLASSES)
    )
    points, labels = _blobs(400, seed=3)
    optimiser = torch.optim.Adam(net.parameters(), lr=0.05)
    for _ in range(150):
        optimiser.zero_grad()
        torch.nn.functional.cross_entropy(net(points), labels).backward()
        optimiser.step()
    return net.eval()


def example_inputs():
    return (held_out(1)[0],)


def calibration_inputs():
    points, _ = _blobs(64, seed=5)
    return [(points[i : i + 1],) for i in range(len(points))]
