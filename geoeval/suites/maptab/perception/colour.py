"""The colour layer of the pixel-only map reader (`reader.read_map_image`, step 2).

Strongly coloured pixels are clustered into a palette of line colours, and every pixel gets the
index of its palette colour (or none). A stroke's anti-aliased rim is its colour mixed with the
white background, so tints are measured as tints of a palette colour, not as new lines.
"""

from __future__ import annotations

import numpy as np

# Colour layer. A pixel belongs to a line stroke when it is clearly chromatic; black,
# grey and white (text, marker outlines, background) are not.
_MIN_CHROMA = 60
_MIN_BRIGHTEST_CHANNEL = 80
_PALETTE_MERGE_DISTANCE = 40.0  # RGB distance under which a colour peak is an earlier one (or its tint)
_PALETTE_ASSIGN_DISTANCE = 90.0  # RGB distance under which a pixel takes a palette colour


_WHITE = np.array([255.0, 255.0, 255.0], dtype=np.float32)


def _blend_distance(pix: np.ndarray, palette: np.ndarray, max_tint: float = 0.8) -> np.ndarray:
    """Distance (N x K) from each pixel to the tints of each palette colour.

    A downsampled stroke's rim is its colour mixed with the white background, so a pixel is
    measured against the segment from the pure colour towards white (up to `max_tint` of the
    way), not just against the pure colour.
    """
    towards_white = _WHITE[None, :] - palette  # K x 3
    norm2 = np.maximum((towards_white**2).sum(axis=1), 1e-6)  # K
    diff = pix[:, None, :] - palette[None, :, :]  # N x K x 3
    t = np.clip((diff * towards_white[None, :, :]).sum(axis=2) / norm2[None, :], 0.0, max_tint)
    closest = palette[None, :, :] + t[:, :, None] * towards_white[None, :, :]
    return np.linalg.norm(pix[:, None, :] - closest, axis=2)


def _colour_layer(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cluster chromatic pixels into a palette of line colours.

    Returns (palette K x 3 float, per-pixel palette index with -1 for none, chroma).
    Works on the distinct colours with their pixel counts, which are far fewer than the
    pixels.
    """
    h, w = rgb.shape[:2]
    rgb16 = rgb.astype(np.int16)
    maxc = rgb16.max(axis=2)
    chroma = maxc - rgb16.min(axis=2)
    chromatic = (chroma >= _MIN_CHROMA) & (maxc >= _MIN_BRIGHTEST_CHANNEL)
    index = np.full((h, w), -1, dtype=np.int8)
    px = rgb[chromatic].astype(np.int32)
    empty = np.zeros((0, 3), np.float32)
    if len(px) == 0:
        return empty, index, chroma
    packed = (px[:, 0] << 16) | (px[:, 1] << 8) | px[:, 2]
    uniq, inverse, weight = np.unique(packed, return_inverse=True, return_counts=True)
    colours = np.stack([(uniq >> 16) & 255, (uniq >> 8) & 255, uniq & 255], axis=1).astype(np.float32)

    q = (colours // 32).astype(np.int32)
    bins = q[:, 0] * 64 + q[:, 1] * 8 + q[:, 2]
    counts = np.bincount(bins, weights=weight, minlength=512)
    # A line is long and thick, so its pure colour owns many pixels. Tints (a colour
    # mixed with white at a stroke's rim) and mixes of two colours are spread over many
    # bins with fewer pixels each; tints are recognised as such, not as new lines.
    min_count = max(60, int(0.0004 * h * w))
    centres: list[np.ndarray] = []
    for b in np.argsort(-counts, kind="stable"):
        if counts[b] < min_count or len(centres) >= 24:
            break
        sel = bins == b
        mean = (colours[sel] * weight[sel, None]).sum(axis=0) / weight[sel].sum()
        if centres and _explained_by(mean, np.stack(centres)):
            continue
        centres.append(mean)
    if not centres:
        return empty, index, chroma

    palette = np.stack(centres).astype(np.float32)
    for _ in range(2):  # refine each centre on the colours it clearly owns
        d = np.linalg.norm(colours[:, None, :] - palette[None, :, :], axis=2)
        nearest = d.argmin(axis=1)
        dmin = d[np.arange(len(colours)), nearest]
        for i in range(len(palette)):
            core = (nearest == i) & (dmin < 45)
            if core.any():
                palette[i] = (colours[core] * weight[core, None]).sum(axis=0) / weight[core].sum()
    d = _blend_distance(colours, palette)
    nearest = d.argmin(axis=1)
    dmin = d[np.arange(len(colours)), nearest]
    assigned = np.where(dmin < _PALETTE_ASSIGN_DISTANCE, nearest, -1)
    # Drop palette entries that own almost nothing after refinement.
    owned = np.bincount(assigned[assigned >= 0], weights=weight[assigned >= 0], minlength=len(palette))
    keep = [i for i in range(len(palette)) if owned[i] >= min_count]
    remap = np.full(len(palette) + 1, -1, dtype=np.int8)
    for new, old in enumerate(keep):
        remap[old] = new
    index[chromatic] = remap[assigned][inverse]  # -1 indexes the last slot, which stays -1
    return palette[keep], index, chroma


def _explained_by(colour: np.ndarray, palette: np.ndarray) -> bool:
    """Whether `colour` is one of the palette colours or one of their tints.

    (Mixes of two line colours are not tested: a mix of, say, green and blue can look
    just like a genuine teal line; such mixes own too few pixels to become peaks anyway.)
    """
    return bool(_blend_distance(colour[None, :], palette, max_tint=0.95).min() < _PALETTE_MERGE_DISTANCE)


def _hex(colour: np.ndarray) -> str:
    r, g, b = (int(round(float(v))) for v in np.clip(colour, 0, 255))
    return f"#{r:02x}{g:02x}{b:02x}"
