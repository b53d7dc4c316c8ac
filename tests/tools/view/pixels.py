"""Reading the viewer's pictures: pixels near a colour, colours at points."""

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402
import numpy as np  # noqa: E402

TOLERANCE = 12  # per channel, 0..255 (antialiased edges are excluded by it)


def hex_rgb(color):
    c = color.lstrip("#")
    return np.array([int(c[i:i + 2], 16) for i in (0, 2, 4)], dtype=np.int16)


def load_png(path):
    """H x W x 3 array of 0..255 ints."""
    img = mpimg.imread(str(path))
    if img.dtype != np.uint8:
        img = np.round(img * 255.0)
    return img[:, :, :3].astype(np.int16)


def mask(img, color, tol=TOLERANCE):
    return np.all(np.abs(img - hex_rgb(color)) <= tol, axis=2)


def count(img, color, tol=TOLERANCE):
    return int(mask(img, color, tol).sum())


def near(img, x, y, color, radius=1, tol=TOLERANCE):
    """Whether a pixel within ``radius`` of (x, y) has ``color``."""
    h, w, _ = img.shape
    xi, yi = int(round(x)), int(round(y))
    y0, y1 = max(0, yi - radius), min(h, yi + radius + 1)
    x0, x1 = max(0, xi - radius), min(w, xi + radius + 1)
    if y0 >= y1 or x0 >= x1:
        return False
    return bool(mask(img[y0:y1, x0:x1], color, tol).any())


def load_meta(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)
