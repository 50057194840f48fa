"""Structural similarity (Wang et al. 2004) of two images, on luminance with 7x7 uniform windows (numpy only).

1.0 for identical images; a copy, a re-encode or a small resize stays above ~0.95, while a network that
repaints the image's textures lands well below.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from PIL import Image

WINDOW = 7
C1 = (0.01 * 255) ** 2
C2 = (0.03 * 255) ** 2


def ssim(a: Image.Image, b: Image.Image) -> float:
    if a.size != b.size:
        b = b.resize(a.size, Image.Resampling.BILINEAR)
    x = np.asarray(a.convert("L"), dtype=np.float64)
    y = np.asarray(b.convert("L"), dtype=np.float64)
    wx = sliding_window_view(x, (WINDOW, WINDOW))
    wy = sliding_window_view(y, (WINDOW, WINDOW))
    mx, my = wx.mean(axis=(-1, -2)), wy.mean(axis=(-1, -2))
    vx, vy = wx.var(axis=(-1, -2)), wy.var(axis=(-1, -2))
    cov = ((wx - mx[..., None, None]) * (wy - my[..., None, None])).mean(axis=(-1, -2))
    num = (2 * mx * my + C1) * (2 * cov + C2)
    den = (mx**2 + my**2 + C1) * (vx + vy + C2)
    return float((num / den).mean())
