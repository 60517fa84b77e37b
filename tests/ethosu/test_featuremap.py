"""Feature-map addressing (sdk/ethosu/functional/featuremap.py) agrees element for element
with Vela's own
`get_address` over tiles, both formats, element sizes and negative strides; reads and writes
are vectorised, round-trip, and refuse an access outside the region with the element named.
On real exports, the registers of every NPU operation describe feature maps inside scratch."""

from __future__ import annotations

import numpy as np
import pytest

from sdk.errors import ProgramError
from sdk.ethosu.functional.featuremap import FeatureMap, Layout, element_dtype
from tests.support.cmdscan import signed16
from tests.support.markers import SHARED_EXPORTS

pytestmark = SHARED_EXPORTS


def _vela_address(fm: FeatureMap, y: int, x: int, c: int) -> int:
    from ethosu.vela.api import NpuDataType, NpuFeatureMap, NpuLayout, NpuShape3D, NpuTileBox
    from ethosu.vela.register_command_stream_util import get_address

    v = NpuFeatureMap()
    v.data_type = {1: NpuDataType.INT8, 2: NpuDataType.INT16, 4: NpuDataType.INT32}[fm.elem]
    v.shape = NpuShape3D(height=fm.height, width=fm.width, depth=fm.depth)
    v.tiles = NpuTileBox(
        height_0=fm.height0, height_1=fm.height1, width_0=fm.width0, addresses=list(fm.bases)
    )
    v.layout = NpuLayout.NHWC if fm.layout is Layout.NHWC else NpuLayout.NHCWB16
    strides = NpuShape3D(depth=fm.stride_c, height=fm.stride_y, width=fm.stride_x)
    return get_address(v, strides, y, x, c)


def _maps():
    rng = np.random.default_rng(11)
    for layout in Layout:
        for elem in (1, 2, 4):
            for _ in range(4):
                h, w, c = (int(v) for v in rng.integers(1, 9, 3) * (1, 1, 5))
                h0, h1, w0 = (
                    int(rng.integers(1, h + 1)),
                    int(rng.integers(1, h + 1)),
                    int(rng.integers(1, w + 1)),
                )
                if layout is Layout.NHWC:
                    sx, sy, sc = c * elem, w * c * elem, 1
                else:
                    sx, sc = 16 * elem, 16 * elem * w
                    sy = sc * -(-c // 16)
                sign_y, sign_x = (int(s) for s in rng.choice([-1, 1], 2))
                if layout is Layout.NHCWB16:
                    sign_x = 1
                bases = tuple(int(b) * 16 for b in rng.integers(64, 128, 4))
                yield FeatureMap(
                    h,
                    w,
                    c,
                    bases,
                    h0,
                    h1,
                    w0,
                    sign_y * sy,
                    sign_x * sx,
                    sc,
                    layout,
                    element_dtype(elem, True),
                )


@pytest.mark.parametrize(
    "fm", list(_maps()), ids=lambda fm: f"{fm.layout.name}-{fm.elem}-{fm.shape}"
)
def test_addresses_agree_with_vela_get_address(fm):
    grid = fm.grid()
    for y in range(fm.height):
        for x in range(fm.width):
            for c in range(fm.depth):
                assert grid[y, x, c] == _vela_address(fm, y, x, c), (y, x, c)


@pytest.mark.parametrize("layout", list(Layout))
@pytest.mark.parametrize("elem", [1, 2, 4])
def test_write_then_read_round_trips_and_lands_where_addressed(layout, elem):
    dtype = element_dtype(elem, True)
    h, w, c = 5, 6, 20
    stride_c = 16 * elem * w
    fm = FeatureMap(
        h,
        w,
        c,
        (16 * 10, 16 * 200, 16 * 400, 16 * 600),
        3,
        2,
        4,
        stride_c * 2 if layout is Layout.NHCWB16 else w * c * elem,
        16 * elem if layout is Layout.NHCWB16 else c * elem,
        stride_c,
        layout,
        dtype,
    )
    region = bytearray(16 * 1000)
    values = np.random.default_rng(1).integers(np.iinfo(dtype).min, np.iinfo(dtype).max, (h, w, c))
    fm.write(region, values.astype(dtype))
    np.testing.assert_array_equal(fm.read(bytes(region)), values)
    y, x, ch = 4, 5, 17
    at = int(fm.addresses(y, x, ch))
    assert int.from_bytes(region[at : at + elem], "little", signed=True) == values[y, x, ch]
    assert sum(1 for b in region if b) <= h * w * c * elem  # nothing written elsewhere


def test_negative_strides_read_a_reversed_map():
    data = np.arange(24, dtype=np.int8).reshape(2, 3, 4)
    region = data.tobytes()
    # rows last-to-first: base at the last row, negative STRIDE_Y
    fm = FeatureMap(2, 3, 4, (12, 0, 0, 0), 2, 2, 3, -12, 4, 1, Layout.NHWC, np.dtype(np.int8))
    np.testing.assert_array_equal(fm.read(region), data[::-1])
    # a transpose of H and W: swapped strides
    fm = FeatureMap(3, 2, 4, (0, 0, 0, 0), 3, 3, 2, 4, 12, 1, Layout.NHWC, np.dtype(np.int8))
    np.testing.assert_array_equal(fm.read(region), data.transpose(1, 0, 2))


def test_unsigned_and_16_bit_elements_are_little_endian():
    fm = FeatureMap(1, 1, 2, (0, 0, 0, 0), 1, 1, 1, 4, 4, 1, Layout.NHWC, element_dtype(2, False))
    np.testing.assert_array_equal(fm.read(b"\x01\x80\xff\xff"), [[[0x8001, 0xFFFF]]])


def test_out_of_region_accesses_are_refused_with_the_element():
    fm = FeatureMap(2, 2, 3, (0, 0, 0, 0), 2, 2, 2, 6, 3, 1, Layout.NHWC, np.dtype(np.int8), "OFM")
    with pytest.raises(
        ProgramError, match=r"OFM: element \(y=1, x=1, c=2\) at byte 11 .* 11 bytes"
    ):
        fm.read(bytes(11))
    back = FeatureMap(2, 2, 3, (0, 0, 0, 0), 2, 2, 2, -6, 3, 1, Layout.NHWC, np.dtype(np.int8))
    with pytest.raises(ProgramError, match=r"\(y=1, x=0, c=0\) at byte -6"):
        back.write(bytearray(64), np.zeros((2, 2, 3)))
    with pytest.raises(ProgramError, match="not 16-byte aligned"):
        FeatureMap(1, 1, 16, (8, 0, 0, 0), 1, 1, 1, 16, 16, 16, Layout.NHCWB16, np.dtype(np.int8))
    with pytest.raises(ProgramError, match="bytearray"):
        fm.write(bytes(64), np.zeros((2, 2, 3)))


def test_overlap_names_two_elements_that_share_a_byte():
    """What Vela 5.1.0's MatMul of a slice writes (tile 1 on tile 0's base, a row stride
    below the row), and the maps that must not count: contiguous, reversed, transposed."""
    i8, i16, i32 = np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32)
    nhwc = Layout.NHWC
    assert FeatureMap(2, 16, 4, (0,) * 4, 2, 2, 16, 256, 16, 4, nhwc, i32).overlap() is None
    assert FeatureMap(2, 3, 4, (12, 0, 0, 0), 2, 2, 3, -12, 4, 1, nhwc, i8).overlap() is None
    assert FeatureMap(3, 2, 4, (0,) * 4, 3, 3, 2, 4, 12, 1, nhwc, i8).overlap() is None
    assert FeatureMap(1, 16, 1, (0, 64, 0, 0), 1, 1, 8, 64, 8, 1, nhwc, i8).overlap() is None
    tiled = FeatureMap(1, 16, 1, (64, 64, 0, 0), 1, 1, 8, 64, 8, 1, nhwc, i8)
    assert tiled.overlap() == ((0, 0, 0), (0, 8, 0))
    short_rows = FeatureMap(2, 16, 32, (0,) * 4, 2, 2, 16, 576, 36, 4, nhwc, i32)
    assert short_rows.overlap() == ((0, 0, 9), (0, 1, 0))
    straddling = FeatureMap(1, 2, 2, (0,) * 4, 1, 1, 2, 8, 3, 2, nhwc, i16)  # bytes 2-3, 3-4
    assert straddling.overlap() == ((0, 0, 1), (0, 1, 0))


def _maps_of(op) -> list[FeatureMap]:
    """IFM and OFM of a scanned operation (the IFM's height/width follow the OFM and kernel)."""
    r = op.regs
    fmt = {0: Layout.NHWC, 1: Layout.NHCWB16}
    ofm_h, ofm_w = r["OFM_HEIGHT_M1"] + 1, r["OFM_WIDTH_M1"] + 1
    stride = r.get("KERNEL_STRIDE", 0)
    sy, sx = (
        1 + ((stride >> 1) & 1) + 2 * ((stride >> 9) & 1),
        1 + (stride & 1) + 2 * ((stride >> 6) & 1),
    )
    kh, kw = r.get("KERNEL_HEIGHT_M1", 0) + 1, r.get("KERNEL_WIDTH_M1", 0) + 1
    if op.name == "ELEMENTWISE":
        ifm_h, ifm_w = ofm_h, ofm_w
    else:
        ifm_h = (ofm_h - 1) * sy + kh - r["IFM_PAD_TOP"] - r["IFM_PAD_BOTTOM"]
        ifm_w = (ofm_w - 1) * sx + kw - r["IFM_PAD_LEFT"] - r["IFM_PAD_RIGHT"]
    ifm_prec, ofm_prec = r["IFM_PRECISION"], r["OFM_PRECISION"]
    ifm = FeatureMap(
        ifm_h,
        ifm_w,
        r["IFM_DEPTH_M1"] + 1,
        tuple(r.get(k, 0) for k in ("IFM_BASE0", "cmd1_001", "cmd1_002", "cmd1_003")),
        r["IFM_HEIGHT0_M1"] + 1,
        r["IFM_HEIGHT1_M1"] + 1,
        r["IFM_WIDTH0_M1"] + 1,
        _s32(r["IFM_STRIDE_Y"]),
        _s32(r["IFM_STRIDE_X"]),
        _s32(r["cmd1_006"]),
        fmt[(ifm_prec >> 6) & 3],
        element_dtype(1 << ((ifm_prec >> 2) & 3), bool(ifm_prec & 1)),
        "IFM",
    )
    ofm = FeatureMap(
        ofm_h,
        ofm_w,
        r["OFM_DEPTH_M1"] + 1,
        tuple(r.get(k, 0) for k in ("OFM_BASE0", "cmd1_011", "cmd1_012", "cmd1_013")),
        r["cmd0_11b"] + 1,
        r["cmd0_11c"] + 1,
        r["cmd0_11a"] + 1,
        _s32(r["cmd1_015"]),
        _s32(r["cmd1_014"]),
        _s32(r["cmd1_016"]),
        fmt[(ofm_prec >> 6) & 3],
        element_dtype(1 << ((ofm_prec >> 1) & 3), bool(ofm_prec & 1)),
        "OFM",
    )
    return [ifm, ofm]


def _s32(v: int) -> int:
    return v - (1 << 32) if v & 0x80000000 else v


@pytest.mark.parametrize("model", ["conv", "depthwise", "add", "avgpool"])
def test_real_operations_stay_inside_scratch_and_cover_the_boundary(delegate, model):
    d = delegate(model)
    scratch = max(t.offset + t.nbytes for t in d.inputs + d.outputs)
    written = np.zeros(scratch + 4096, dtype=bool)
    for op in d.of("CONV", "DEPTHWISE", "POOL", "ELEMENTWISE"):
        assert op.regs["IFM_REGION"] == op.regs["OFM_REGION"] == 1
        ifm, ofm = _maps_of(op)
        ifm._byte_index(written.size)  # raises ProgramError if outside
        idx = ofm._byte_index(written.size)
        assert ofm.overlap() is None, op  # every OFM element has bytes of its own
        written[idx.ravel()] = True
    for out in d.outputs:  # every output byte is written by some operation
        assert written[out.offset : out.offset + out.nbytes].all(), out
    assert signed16(0x8000) == -32768
