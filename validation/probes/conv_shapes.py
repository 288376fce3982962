"""Convolution layer shapes shared by the PyTorch conv2d probe and the MIOpenDriver commands, so
the two measure the same layers and cross-check each other. No torch import: native probes use it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class ConvShape:
    """One conv2d layer: batch n, channels c -> k, input h x w, filter r x s."""

    name: str
    n: int
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    stride: int = 1
    pad: int = 0

    @property
    def out_hw(self) -> tuple[int, int]:
        p = (self.h + 2 * self.pad - self.r) // self.stride + 1
        q = (self.w + 2 * self.pad - self.s) // self.stride + 1
        return p, q

    @property
    def forward_flops(self) -> int:
        """2 * N * K * P * Q * C * R * S (one multiply-add = 2 flops)."""
        p, q = self.out_hw
        return 2 * self.n * self.k * p * q * self.c * self.r * self.s


# ResNet-50 layers (batch 64): the 7x7 stem, a stage-2 3x3 and 1x1, a stage-4 3x3.
RESNET50_SHAPES = (
    ConvShape(name="stem_7x7", n=64, c=3, h=224, w=224, k=64, r=7, s=7, stride=2, pad=3),
    ConvShape(name="res2_3x3", n=64, c=64, h=56, w=56, k=64, r=3, s=3, pad=1),
    ConvShape(name="res2_1x1", n=64, c=256, h=56, w=56, k=64, r=1, s=1),
    ConvShape(name="res4_3x3", n=64, c=256, h=14, w=14, k=256, r=3, s=3, pad=1),
)
