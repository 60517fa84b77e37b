"""A YOLO-style detector head (written here): features -> boxes in pixels and class scores,
concatenated into one (1, 4 + classes, anchors) output, as YOLO11's head returns them; and the
same head returning boxes and scores as separate outputs, or with normalised coordinates (the
fixes for the collapse)."""

import torch

IMAGE = 544.0  # pixels: boxes span 0..~545 like YOLO11n's on a 544 px image


class Detector(torch.nn.Module):
    def __init__(self, classes: int = 8) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.stem = torch.nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.box = torch.nn.Conv2d(16, 4, 1)
        self.cls = torch.nn.Conv2d(16, classes, 1)

    def heads(self, x):
        f = torch.relu(self.stem(x))
        boxes = torch.sigmoid(self.box(f)).flatten(2) * IMAGE  # (1, 4, N) pixels
        scores = torch.sigmoid(self.cls(f)).flatten(2)  # (1, C, N) in 0..1
        return boxes, scores

    def forward(self, x):
        return torch.cat(self.heads(x), dim=1)

    @staticmethod
    def example_inputs():
        torch.manual_seed(1)
        return (torch.rand(1, 3, 16, 16),)


class SeparateOutputs(Detector):
    def forward(self, x):
        return self.heads(x)


class NormalisedBoxes(Detector):
    """The other fix: the coordinates divided by the image size (0..1 like the scores)."""

    def forward(self, x):
        boxes, scores = self.heads(x)
        return torch.cat((boxes * (1.0 / IMAGE), scores), dim=1)


def model():
    return Detector().eval()


def example_inputs():
    return Detector.example_inputs()
