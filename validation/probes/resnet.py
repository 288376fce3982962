"""ResNet-50 in plain PyTorch: torchvision's architecture (v1.5), random weights, no downloads.

The layer names and shapes equal torchvision's `resnet50()`, so a torchvision state dict loads
into this model and back (bench/h200_model.py does that to cross-check the two). v1.5 puts the
stride-2 of each down-sampling Bottleneck on the 3x3 convolution, not on the first 1x1.
Initialisation follows torchvision: Kaiming-normal (fan_out, relu) convolutions, batch-norm
weight 1 and bias 0, PyTorch's default for the final linear layer.
"""

from __future__ import annotations

import torch
from torch import nn

RESNET50_LAYERS = (3, 4, 6, 3)
NUM_CLASSES = 1000


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (carries the stride), 1x1 expand by 4; identity or projected shortcut."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * self.expansion, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """Stem (7x7/2 conv, 3x3/2 max-pool), four Bottleneck stages, global average pool, linear."""

    def __init__(self, layers: tuple[int, int, int, int] = RESNET50_LAYERS, num_classes: int = NUM_CLASSES) -> None:
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = self._stage(64, layers[0], stride=1)
        self.layer2 = self._stage(128, layers[1], stride=2)
        self.layer3 = self._stage(256, layers[2], stride=2)
        self.layer4 = self._stage(512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * Bottleneck.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def _stage(self, planes: int, blocks: int, stride: int) -> nn.Sequential:
        out_channels = planes * Bottleneck.expansion
        downsample = None
        if stride != 1 or self.inplanes != out_channels:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, out_channels, 1, stride=stride, bias=False), nn.BatchNorm2d(out_channels)
            )
        stage = [Bottleneck(self.inplanes, planes, stride, downsample)]
        self.inplanes = out_channels
        stage += [Bottleneck(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*stage)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet50(seed: int = 0) -> ResNet:
    """A ResNet-50 with random weights drawn from `seed`; the global RNG is left as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return ResNet()


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
