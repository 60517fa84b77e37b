"""Feature maps in NPU memory: where each element lives, and whole-map reads and writes.

The details (the formulas, what is and is not modelled): docs/ethosu-functional.md,
section featuremap.py.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from enum import Enum

import numpy as np

from sdk.errors import ProgramError

BRICK = 16


class Layout(Enum):
    NHWC = 0
    NHCWB16 = 1


def element_dtype(size: int, signed: bool) -> np.dtype:
    """The numpy dtype of an element (IFM/OFM_PRECISION: 8/16/32 bits, signed or not)."""
    kinds = {1: "i1", 2: "<i2", 4: "<i4", 8: "<i8"}
    if size not in kinds:
        raise ProgramError(f"feature map: no {size}-byte element type")
    code = kinds[size]
    return np.dtype(code if signed else code.replace("i", "u"))


@dataclass(frozen=True)
class FeatureMap:
    """One feature map as the registers describe it (heights/widths as counts, not _M1)."""

    height: int
    width: int
    depth: int
    bases: tuple[int, int, int, int]
    height0: int
    height1: int
    width0: int
    stride_y: int
    stride_x: int
    stride_c: int
    layout: Layout
    dtype: np.dtype
    name: str = "feature map"

    def __post_init__(self) -> None:
        if min(self.height, self.width, self.depth) < 1:
            raise ProgramError(f"{self.name}: empty shape {self.shape}")
        if min(self.height0, self.width0) < 1:
            raise ProgramError(
                f"{self.name}: tile 0 is empty (HEIGHT0 {self.height0}, WIDTH0 {self.width0})"
            )
        if self.layout is Layout.NHCWB16 and any(b % 16 for b in self.used_bases()):
            raise ProgramError(f"{self.name}: an NHCWB16 tile base is not 16-byte aligned")

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.height, self.width, self.depth)

    @property
    def elem(self) -> int:
        return np.dtype(self.dtype).itemsize

    def used_tiles(self) -> list[int]:
        """The tiles the shape reaches (the other tiles' bases are don't-care registers)."""
        used = [0]
        if self.width > self.width0:
            used.append(1)
            if self.height > self.height1:
                used.append(3)
        if self.height > self.height0:
            used.append(2)
        return used

    def used_bases(self) -> list[int]:
        """The bases of the tiles the shape reaches."""
        return [self.bases[t] for t in self.used_tiles()]

    @property
    def geometry(self) -> tuple:
        """Everything but the bases and the name: what the element offsets in a tile follow."""
        strides = (self.stride_y, self.stride_x, self.stride_c)
        return (self.shape, self.height0, self.height1, self.width0, strides, self.layout,
                self.elem)  # fmt: skip

    def addresses(self, y: np.ndarray, x: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Byte offsets in the region of elements (y, x, c) (broadcast against each other)."""
        y, x, c = (np.asarray(v, dtype=np.int64) for v in (y, x, c))
        right = x >= self.width0
        x = np.where(right, x - self.width0, x)
        lower = np.where(right, y >= self.height1, y >= self.height0)
        y = y - np.where(lower, np.where(right, self.height1, self.height0), 0)
        tile = right.astype(np.int64) + 2 * lower
        base = np.asarray(self.bases, dtype=np.int64)[tile]
        if self.layout is Layout.NHWC:
            return base + y * self.stride_y + x * self.stride_x + c * self.elem
        return (
            base
            + y * self.stride_y
            + x * (BRICK * self.elem)
            + (c // BRICK) * self.stride_c
            + (c % BRICK) * self.elem
        )

    def grid(self, bases: np.ndarray | None = None) -> np.ndarray:
        """Byte offsets of every element, shape (H, W, C); with `bases`, an (N, 4) array of N
        sets of tile bases, shape (N, H, W, C)."""
        offsets, tile = _tile_offsets(self)
        if bases is None:
            start = np.asarray(self.bases, dtype=np.int64)
            return offsets + (start[0] if tile is None else start[tile])
        bases = np.asarray(bases, dtype=np.int64)
        if self.layout is Layout.NHCWB16 and np.any(bases[:, self.used_tiles()] % 16):
            raise ProgramError(f"{self.name}: an NHCWB16 tile base is not 16-byte aligned")
        if tile is None:
            return offsets + bases[:, 0, None, None, None]
        return offsets + bases[:, tile]

    def overlap(self) -> tuple[tuple[int, int, int], tuple[int, int, int]] | None:
        """Two elements that share a byte, or None. Written as an OFM, such a map leaves what
        the NPU's write order (blocks, and the next operation overlapping the last ones)
        decides: a tile base that wraps back over tile 0, or a stride below the row's size."""
        if self._nested():
            return None
        used = self.used_tiles()  # only where the tiles lie relative to each other counts
        relative = tuple(self.bases[t] - self.bases[0] if t in used else 0 for t in range(4))
        return _overlap(dataclasses.replace(_canonical(self), bases=relative))

    def _nested(self) -> bool:
        """One NHWC tile whose rows hold their elements and whose planes hold their rows, in
        either axis order (transposes swap the strides): no two elements can meet."""
        if self.layout is not Layout.NHWC or len(self.used_bases()) > 1:
            return False
        row = self.depth * self.elem
        sx, sy = abs(self.stride_x), abs(self.stride_y)
        if self.width == 1:
            sx = row
        if self.height == 1:
            sy = sx * self.width
        return (sx >= row and sy >= sx * self.width) or (sy >= row and sx >= sy * self.height)

    def _byte_index(self, region_size: int, bases: np.ndarray | None = None) -> np.ndarray:
        """The region byte of every byte of every element, shape (H, W, C, elem) (or
        (N, H, W, C, elem) for N sets of bases: `grid`); outside the region is refused."""
        start = self.grid(bases)
        if start.size and (start.min() < 0 or start.max() + self.elem > region_size):
            bad = (start < 0) | (start + self.elem > region_size)
            at = tuple(int(v[0]) for v in np.nonzero(bad))
            y, x, c = at[-3:]
            raise ProgramError(
                f"{self.name}: element (y={y}, x={x}, c={c}) at byte {int(start[at])} "
                f"lies outside its region of {region_size} bytes (shape {self.shape}, "
                f"bases {self.bases if bases is None else tuple(bases[at[0]])}, strides "
                f"y/x/c {self.stride_y}/{self.stride_x}/{self.stride_c}, {self.layout.name})"
            )
        if self.elem == 1:
            return start[..., None]
        return start[..., None] + np.arange(self.elem)

    def read(
        self, region: bytes | bytearray | memoryview | np.ndarray, bases: np.ndarray | None = None
    ) -> np.ndarray:
        """The whole map as an (H, W, C) array of its element type; with `bases` (`grid`),
        the N maps at those bases as an (N, H, W, C) array."""
        raw = _as_bytes(region)
        picked = raw[self._byte_index(raw.size, bases)]
        return np.ascontiguousarray(picked).view(self.dtype)[..., 0]

    def write(
        self, region: bytearray | np.ndarray, values: np.ndarray, bases: np.ndarray | None = None
    ) -> None:
        """Store an (H, W, C) array (cast to the element type, so callers clamp first); with
        `bases` (`grid`), N maps from an (N, H, W, C) array (maps that share no byte)."""
        raw = _as_bytes(region, writable=True)
        values = np.asarray(values)
        shape = self.shape if bases is None else (len(bases), *self.shape)
        if values.shape != shape:
            raise ProgramError(f"{self.name}: writing {values.shape} into a {shape} map")
        index = self._byte_index(raw.size, bases)
        data = np.ascontiguousarray(values.astype(self.dtype)).view(np.uint8)
        raw[index] = data.reshape(index.shape)


@functools.lru_cache(maxsize=256)
def _cached_offsets(fm: FeatureMap) -> tuple[np.ndarray, np.ndarray | None]:
    offsets, tile = _offsets_from_tile_base(fm)
    offsets.flags.writeable = False
    if tile is not None:
        tile.flags.writeable = False
    return offsets, tile


def _tile_offsets(fm: FeatureMap) -> tuple[np.ndarray, np.ndarray | None]:
    """Each element's byte offset from its tile's base, (H, W, C), and its tile (None when
    all are in tile 0), computed once per geometry: many operations share one."""
    return _cached_offsets(_canonical(fm))


def _canonical(fm: FeatureMap) -> FeatureMap:
    """The map with its geometry only (bases 0, no name): one cache entry per geometry."""
    return FeatureMap(
        *fm.shape, (0, 0, 0, 0), fm.height0, fm.height1, fm.width0, fm.stride_y, fm.stride_x,
        fm.stride_c, fm.layout, np.dtype(fm.dtype), "",
    )  # fmt: skip


def _offsets_from_tile_base(fm: FeatureMap) -> tuple[np.ndarray, np.ndarray | None]:
    y = np.arange(fm.height)[:, None, None]
    x = np.arange(fm.width)[None, :, None]
    c = np.arange(fm.depth)[None, None, :]
    offsets = fm.addresses(y, x, c)  # the bases are 0
    offsets = np.ascontiguousarray(np.broadcast_to(offsets, fm.shape))
    if fm.used_tiles() == [0]:
        return offsets, None
    right = x >= fm.width0
    lower = np.where(right, y >= fm.height1, y >= fm.height0)
    tile = np.broadcast_to(right.astype(np.int64) + 2 * lower, fm.shape)
    return offsets, np.ascontiguousarray(tile)


@functools.lru_cache(maxsize=256)
def _overlap(fm: FeatureMap) -> tuple[tuple[int, int, int], tuple[int, int, int]] | None:
    """FeatureMap.overlap of a canonical map (tile 0 at 0), once per geometry and placement
    of the tiles: the answer does not change when every base moves by the same amount."""
    start = fm.grid().reshape(-1)
    order = np.argsort(start, kind="stable")
    ordered = start[order]
    # same-size elements: any two overlap only if two neighbours in address order do
    clash = np.nonzero(ordered[1:] < ordered[:-1] + fm.elem)[0]
    if clash.size == 0:
        return None
    first, second = order[clash[0]], order[clash[0] + 1]
    return (
        tuple(int(v) for v in np.unravel_index(first, fm.shape)),  # type: ignore[return-value]
        tuple(int(v) for v in np.unravel_index(second, fm.shape)),
    )


def _as_bytes(region, writable: bool = False) -> np.ndarray:
    if isinstance(region, np.ndarray):
        if region.dtype != np.uint8 or region.ndim != 1:
            raise ProgramError("a region must be a flat uint8 array")
        return region
    if writable and isinstance(region, (bytes, memoryview)):
        raise ProgramError("a region written to must be a bytearray or a uint8 array")
    return np.frombuffer(region, dtype=np.uint8)
