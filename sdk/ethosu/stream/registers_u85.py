"""The Ethos-U85 command set: opcodes, bit fields and field enums (command stream version 1).

Written from regor's `ethosu/regor/architecture/ethosu85/ethos_u85_interface.hpp` (Vela 5.1.0;
the wheel has no U85 register module): the same COP1 container and word encoding as the U55
(registers.py holds the layout language), 63 cmd0 and 48 cmd1 commands. Names, field order and
enum spellings are those `vela --verbose-register-command-stream` prints for a U85 stream
(its disassembler calls opcodes 150/151 NPU_SET_RESIZE_X_STEP/Y_STEP).

Unlike the U55: rounding sits in OFM_SCALE (6 modes) and IFM/IFM2_SCALE, the IFM2 scalar in
OP_SCALAR (32 bits), broadcasts are one enum per input, ACTIVATION names a LUT type and a table
slot, OFM_PRECISION carries transpose/reverse, and pooling adds SUM, NONE, MIN and ARGMAX.
"""

from __future__ import annotations

from sdk.ethosu.stream.registers import build_command_set, parse_layouts

STREAM_VERSION = 1

ENUMS: dict[str, dict[int, str]] = {
    "acc_format": {0: "I32", 1: "I48"},
    "acc_input": {0: "RESET", 1: "KEEP", 2: "IFM2"},
    "acc_output": {0: "ENABLE", 1: "DISABLE"},
    "activation_clip_range": {0: "B16", 1: "NONE"},
    "activation_format": {0: "NHWC", 1: "NHCWB16"},
    "activation_function": {
        0: "LUT_NONE",
        1: "LUT_U8_U8",
        4: "LUT_S8_S8",
        5: "LUT_S8_S16",
        7: "LUT_S8_S32",
        8: "LUT_S16_S16",
        9: "LUT_S16_S32",
        10: "LUT_TANH",
        11: "LUT_SIGMOID",
    },
    "activation_precision": {0: "B8", 1: "B16", 2: "B32", 3: "B64"},
    "activation_reverse": {0: "NONE", 1: "H", 2: "W", 3: "C"},
    "activation_storage": {0: "TILE2X2", 1: "TILE3X1", 2: "CHAINED", 3: "NONE"},
    "activation_transpose": {0: "HWC", 1: "WHC", 2: "HCW", 3: "WCH", 6: "CHW", 7: "CWH"},
    "activation_type": {0: "UNSIGNED", 1: "SIGNED"},
    "branch_cond": {0: "ALWAYS", 1: "RF_TRUE"},
    "broadcast_mode": {
        0: "NONE",
        1: "H",
        2: "W",
        3: "HW",
        4: "C",
        5: "CH",
        6: "CW",
        7: "CWH",
        8: "SCALAR",
    },
    "dma_idx_mode": {0: "DISABLED", 1: "ENABLED"},
    "dma_region_mode": {0: "EXTERNAL", 1: "INTERNAL"},
    "dma_stride_mode": {0: "D1", 1: "D2", 2: "D3"},
    "elementwise_mode": {
        0: "MUL",
        1: "ADD",
        2: "SUB",
        3: "MIN",
        4: "MAX",
        5: "LRELU",
        6: "ABS",
        7: "CLZ",
        8: "SHR",
        9: "SHL",
        10: "LSR",
        11: "DIV",
        16: "CMP_EQ",
        17: "CMP_NE",
        18: "CMP_GE",
        19: "CMP_GT",
        33: "AND",
        34: "OR",
        35: "XOR",
        36: "NOT",
        42: "AND_NOT",
    },
    "ifm_upscale_mode": {0: "NONE", 1: "NEAREST", 2: "ZEROS"},
    "kernel_decomposition": {0: "D8X8", 1: "D4X4"},
    "kernel_dilation": {0: "NONE", 1: "X2"},
    "microblock": {0: "U1X1", 1: "U1X2", 2: "U1X4", 3: "U2X2", 4: "U2X4", 5: "U4X4"},
    "ofm_scale_mode": {0: "PER_CHANNEL", 1: "GLOBAL"},
    "pooling_mode": {
        0: "MAX",
        1: "AVERAGE",
        2: "REDUCE_SUM",
        3: "SUM",
        4: "NONE",
        5: "MIN",
        6: "ARGMAX_X",
        7: "ARGMAX_Y",
    },
    "resize_mode": {0: "BILINEAR", 1: "REPLICATE", 2: "NEAREST"},
    "round_mode_ifm": {0: "DOUBLE_SYMMETRIC", 1: "NATURAL"},
    "round_mode_ofm": {
        0: "DOUBLE_SYMMETRIC",
        1: "NATURAL",
        2: "DOUBLE_ASYMMETRIC",
        3: "SYMMETRIC",
        4: "TRUNCATE_TO_ZERO",
        5: "TRUNCATE_TO_LOWER",
    },
    "weight_format": {0: "SWD", 1: "FWD"},
    "weight_order": {0: "DEPTH_FIRST", 1: "PART_KERNEL_FIRST"},
    "weight_sparsity": {0: "NONE", 1: "SPARSE_2_4"},
}

_CMD0 = {
    "NPU_OP_STOP": 0,
    "NPU_OP_IRQ": 1,
    "NPU_OP_CONV": 2,
    "NPU_OP_DEPTHWISE": 3,
    "NPU_OP_POOL": 5,
    "NPU_OP_ELEMENTWISE": 6,
    "NPU_OP_RESIZE": 7,
    "NPU_OP_DMA_START": 16,
    "NPU_OP_DMA_WAIT": 17,
    "NPU_OP_KERNEL_WAIT": 18,
    "NPU_OP_PMU_MASK": 19,
    "NPU_SET_IFM_PAD_TOP": 256,
    "NPU_SET_IFM_PAD_LEFT": 257,
    "NPU_SET_IFM_PAD_RIGHT": 258,
    "NPU_SET_IFM_PAD_BOTTOM": 259,
    "NPU_SET_IFM_DEPTH_M1": 260,
    "NPU_SET_IFM_PRECISION": 261,
    "NPU_SET_IFM_UPSCALE": 263,
    "NPU_SET_IFM_BROADCAST": 264,
    "NPU_SET_IFM_ZERO_POINT": 265,
    "NPU_SET_IFM_WIDTH0_M1": 266,
    "NPU_SET_IFM_HEIGHT0_M1": 267,
    "NPU_SET_IFM_HEIGHT1_M1": 268,
    "NPU_SET_IFM_REGION": 271,
    "NPU_SET_OFM_WIDTH_M1": 273,
    "NPU_SET_OFM_HEIGHT_M1": 274,
    "NPU_SET_OFM_DEPTH_M1": 275,
    "NPU_SET_OFM_PRECISION": 276,
    "NPU_SET_OFM_BLK_WIDTH_M1": 277,
    "NPU_SET_OFM_BLK_HEIGHT_M1": 278,
    "NPU_SET_OFM_BLK_DEPTH_M1": 279,
    "NPU_SET_OFM_ZERO_POINT": 280,
    "NPU_SET_OFM_WIDTH0_M1": 282,
    "NPU_SET_OFM_HEIGHT0_M1": 283,
    "NPU_SET_OFM_HEIGHT1_M1": 284,
    "NPU_SET_OFM_REGION": 287,
    "NPU_SET_KERNEL_WIDTH_M1": 288,
    "NPU_SET_KERNEL_HEIGHT_M1": 289,
    "NPU_SET_KERNEL_STRIDE": 290,
    "NPU_SET_ACC_FORMAT": 292,
    "NPU_SET_ACTIVATION": 293,
    "NPU_SET_ACTIVATION_MIN": 294,
    "NPU_SET_ACTIVATION_MAX": 295,
    "NPU_SET_WEIGHT_REGION": 296,
    "NPU_SET_SCALE_REGION": 297,
    "NPU_SET_RESIZE_X_SCALE_N_M1": 298,
    "NPU_SET_RESIZE_Y_SCALE_N_M1": 299,
    "NPU_SET_RESIZE_X_OFFSET": 300,
    "NPU_SET_RESIZE_Y_OFFSET": 301,
    "NPU_SET_WEIGHT_FORMAT": 302,
    "NPU_SET_BLOCKDEP": 303,
    "NPU_SET_DMA0_SRC_REGION": 304,
    "NPU_SET_DMA0_DST_REGION": 305,
    "NPU_SET_DMA0_SIZE0": 306,
    "NPU_SET_DMA0_SIZE1": 307,
    "NPU_SET_DMA0_IDX_REGION": 308,
    "NPU_SET_IFM2_BROADCAST": 384,
    "NPU_SET_IFM2_PRECISION": 389,
    "NPU_SET_IFM2_ZERO_POINT": 393,
    "NPU_SET_IFM2_WIDTH0_M1": 394,
    "NPU_SET_IFM2_HEIGHT0_M1": 395,
    "NPU_SET_IFM2_HEIGHT1_M1": 396,
    "NPU_SET_IFM2_REGION": 399,
}
_CMD1 = {
    "NPU_SET_IFM_BASE0": 0,
    "NPU_SET_IFM_BASE1": 1,
    "NPU_SET_IFM_BASE2": 2,
    "NPU_SET_IFM_BASE3": 3,
    "NPU_SET_IFM_STRIDE_X": 4,
    "NPU_SET_IFM_STRIDE_Y": 5,
    "NPU_SET_IFM_STRIDE_C": 6,
    "NPU_SET_OFM_BASE0": 16,
    "NPU_SET_OFM_BASE1": 17,
    "NPU_SET_OFM_BASE2": 18,
    "NPU_SET_OFM_BASE3": 19,
    "NPU_SET_OFM_STRIDE_X": 20,
    "NPU_SET_OFM_STRIDE_Y": 21,
    "NPU_SET_OFM_STRIDE_C": 22,
    "NPU_SET_WEIGHT_BASE": 32,
    "NPU_SET_WEIGHT_LENGTH": 33,
    "NPU_SET_SCALE_BASE": 34,
    "NPU_SET_SCALE_LENGTH": 35,
    "NPU_SET_OFM_SCALE": 36,
    "NPU_SET_IFM_SCALE": 37,
    "NPU_SET_IFM2_SCALE": 38,
    "NPU_SET_OP_SCALAR": 39,
    "NPU_SET_DMA0_SRC": 48,
    "NPU_SET_DMA0_DST": 49,
    "NPU_SET_DMA0_LEN": 50,
    "NPU_SET_DMA0_SRC_STRIDE0": 51,
    "NPU_SET_DMA0_SRC_STRIDE1": 52,
    "NPU_SET_DMA0_DST_STRIDE0": 53,
    "NPU_SET_DMA0_DST_STRIDE1": 54,
    "NPU_SET_DMA0_IDX": 55,
    "NPU_SET_DMA0_IDX_MAX": 56,
    "NPU_SET_DMA0_IDX_SKIP1": 57,
    "NPU_SET_IFM2_BASE0": 128,
    "NPU_SET_IFM2_BASE1": 129,
    "NPU_SET_IFM2_BASE2": 130,
    "NPU_SET_IFM2_BASE3": 131,
    "NPU_SET_IFM2_STRIDE_X": 132,
    "NPU_SET_IFM2_STRIDE_Y": 133,
    "NPU_SET_IFM2_STRIDE_C": 134,
    "NPU_SET_WEIGHT1_BASE": 144,
    "NPU_SET_WEIGHT1_LENGTH": 145,
    "NPU_SET_WEIGHT2_BASE": 146,
    "NPU_SET_WEIGHT2_LENGTH": 147,
    "NPU_SET_WEIGHT3_BASE": 148,
    "NPU_SET_WEIGHT3_LENGTH": 149,
    "NPU_SET_RESIZE_X_STEP": 150,
    "NPU_SET_RESIZE_Y_STEP": 151,
    "NPU_OP_BRANCH": 256,
}

# Field layouts in registers.py's language (low bit first; `|` parts a cmd1's parameter from its
# payload; `@addr` a 40-bit address: payload bits 0-31, parameter bits 0-7 above them).
_LAYOUTS = """
NPU_OP_STOP                 mask:16
NPU_OP_IRQ                  mask:16
NPU_OP_CONV                 weights_ifm2:1
NPU_OP_POOL                 pooling_mode:3=pooling_mode
NPU_OP_ELEMENTWISE          elementwise_mode:6=elementwise_mode
NPU_OP_RESIZE               resize_mode:2=resize_mode
NPU_OP_DMA_WAIT             k:2
NPU_OP_KERNEL_WAIT          n:1
NPU_OP_PMU_MASK             enable:1
NPU_SET_IFM_PAD_TOP         pad:7
NPU_SET_IFM_PAD_LEFT        pad:7
NPU_SET_IFM_PAD_RIGHT       pad:8
NPU_SET_IFM_PAD_BOTTOM      pad:8
NPU_SET_IFM_DEPTH_M1        depth_m1:16
NPU_SET_IFM_PRECISION       activation_type:1=activation_type _:1
                            activation_precision:2=activation_precision _:2
                            activation_format:2=activation_format _:6
                            activation_storage:2=activation_storage
NPU_SET_IFM_UPSCALE         mode:2=ifm_upscale_mode
NPU_SET_IFM_BROADCAST       broadcast_mode:4=broadcast_mode
NPU_SET_IFM_ZERO_POINT      zero_point:16
NPU_SET_IFM_WIDTH0_M1       width_m1:16
NPU_SET_IFM_HEIGHT0_M1      height_m1:16
NPU_SET_IFM_HEIGHT1_M1      height_m1:16
NPU_SET_IFM_REGION          region:3
NPU_SET_OFM_WIDTH_M1        width_m1:16
NPU_SET_OFM_HEIGHT_M1       height_m1:16
NPU_SET_OFM_DEPTH_M1        depth_m1:16
NPU_SET_OFM_PRECISION       activation_type:1=activation_type
                            activation_precision:2=activation_precision _:3
                            activation_format:2=activation_format
                            scale_mode:1=ofm_scale_mode
                            activation_reverse:2=activation_reverse
                            activation_transpose:3=activation_transpose
                            activation_storage:2=activation_storage
NPU_SET_OFM_BLK_WIDTH_M1    width_m1:7
NPU_SET_OFM_BLK_HEIGHT_M1   height_m1:7
NPU_SET_OFM_BLK_DEPTH_M1    depth_m1:10
NPU_SET_OFM_ZERO_POINT      zero_point:16
NPU_SET_OFM_WIDTH0_M1       width_m1:16
NPU_SET_OFM_HEIGHT0_M1      height_m1:16
NPU_SET_OFM_HEIGHT1_M1      height_m1:16
NPU_SET_OFM_REGION          region:3
NPU_SET_KERNEL_WIDTH_M1     width_m1:16
NPU_SET_KERNEL_HEIGHT_M1    height_m1:16
NPU_SET_KERNEL_STRIDE       stride_x_lsb:1 stride_y_lsb:1 weight_order:1=weight_order
                            dilation_x:1=kernel_dilation dilation_y:1=kernel_dilation
                            decomposition:1=kernel_decomposition stride_x_msb:1 _:2
                            stride_y_msb:1
NPU_SET_ACC_FORMAT          acc_format:2=acc_format _:2 acc_input:2=acc_input
                            acc_output:1=acc_output _:1 microblock:3=microblock
NPU_SET_ACTIVATION          activation_function:5=activation_function table:3 _:4
                            activation_clip_range:1=activation_clip_range
NPU_SET_ACTIVATION_MIN      clip_boundary:16
NPU_SET_ACTIVATION_MAX      clip_boundary:16
NPU_SET_WEIGHT_REGION       region:3
NPU_SET_SCALE_REGION        region:3
NPU_SET_RESIZE_X_SCALE_N_M1 resize_x_scale_n_m1:11
NPU_SET_RESIZE_Y_SCALE_N_M1 resize_y_scale_n_m1:11
NPU_SET_RESIZE_X_OFFSET     resize_x_offset:12
NPU_SET_RESIZE_Y_OFFSET     resize_y_offset:12
NPU_SET_WEIGHT_FORMAT       weight_format:1=weight_format _:3
                            weight_sparsity:1=weight_sparsity
NPU_SET_BLOCKDEP            blockdep:3
NPU_SET_DMA0_SRC_REGION     region:3 _:5 region_mode:1=dma_region_mode
                            stride_mode:2=dma_stride_mode idx_mode:1=dma_idx_mode
NPU_SET_DMA0_DST_REGION     region:3 _:5 region_mode:1=dma_region_mode _:2
                            idx_mode:1=dma_idx_mode
NPU_SET_DMA0_SIZE0          size:16
NPU_SET_DMA0_SIZE1          size:16
NPU_SET_DMA0_IDX_REGION     region:3
NPU_SET_IFM2_BROADCAST      broadcast_mode:4=broadcast_mode
NPU_SET_IFM2_PRECISION      activation_type:1=activation_type _:1
                            activation_precision:2=activation_precision _:2
                            activation_format:2=activation_format _:6
                            activation_storage:2=activation_storage
NPU_SET_IFM2_ZERO_POINT     zero_point:16
NPU_SET_IFM2_WIDTH0_M1      width_m1:16
NPU_SET_IFM2_HEIGHT0_M1     height_m1:16
NPU_SET_IFM2_HEIGHT1_M1     height_m1:16
NPU_SET_IFM2_REGION         region:3
NPU_SET_IFM_BASE0           @addr
NPU_SET_IFM_BASE1           @addr
NPU_SET_IFM_BASE2           @addr
NPU_SET_IFM_BASE3           @addr
NPU_SET_IFM_STRIDE_X        @addr
NPU_SET_IFM_STRIDE_Y        @addr
NPU_SET_IFM_STRIDE_C        @addr
NPU_SET_OFM_BASE0           @addr
NPU_SET_OFM_BASE1           @addr
NPU_SET_OFM_BASE2           @addr
NPU_SET_OFM_BASE3           @addr
NPU_SET_OFM_STRIDE_X        @addr
NPU_SET_OFM_STRIDE_Y        @addr
NPU_SET_OFM_STRIDE_C        @addr
NPU_SET_WEIGHT_BASE         @addr
NPU_SET_WEIGHT_LENGTH       _:16 | length:32
NPU_SET_SCALE_BASE          @addr
NPU_SET_SCALE_LENGTH        _:16 | length:20
NPU_SET_OFM_SCALE           shift:6 dbl_rnd:5 _:2 round_mode:3=round_mode_ofm | scale:31
NPU_SET_IFM_SCALE           shift:6 dbl_rnd:5 _:2 round_mode:1=round_mode_ifm _:2 | scale:31
NPU_SET_IFM2_SCALE          shift:6 dbl_rnd:5 _:2 round_mode:1=round_mode_ifm _:2 | scale:31
NPU_SET_OP_SCALAR           _:16 | scalar:32
NPU_SET_DMA0_SRC            @addr
NPU_SET_DMA0_DST            @addr
NPU_SET_DMA0_LEN            @addr
NPU_SET_DMA0_SRC_STRIDE0    @addr
NPU_SET_DMA0_SRC_STRIDE1    @addr
NPU_SET_DMA0_DST_STRIDE0    @addr
NPU_SET_DMA0_DST_STRIDE1    @addr
NPU_SET_DMA0_IDX            @addr
NPU_SET_DMA0_IDX_MAX        _:16 | idx_max:31
NPU_SET_DMA0_IDX_SKIP1      @addr
NPU_SET_IFM2_BASE0          @addr
NPU_SET_IFM2_BASE1          @addr
NPU_SET_IFM2_BASE2          @addr
NPU_SET_IFM2_BASE3          @addr
NPU_SET_IFM2_STRIDE_X       @addr
NPU_SET_IFM2_STRIDE_Y       @addr
NPU_SET_IFM2_STRIDE_C       @addr
NPU_SET_WEIGHT1_BASE        @addr
NPU_SET_WEIGHT1_LENGTH      _:16 | length:32
NPU_SET_WEIGHT2_BASE        @addr
NPU_SET_WEIGHT2_LENGTH      _:16 | length:32
NPU_SET_WEIGHT3_BASE        @addr
NPU_SET_WEIGHT3_LENGTH      _:16 | length:32
NPU_SET_RESIZE_X_STEP       one_step_int:4 blk_step_int:11 _:1 | one_step_mod:11 _:5
                            blk_step_mod:11
NPU_SET_RESIZE_Y_STEP       one_step_int:4 blk_step_int:11 _:1 | one_step_mod:11 _:5
                            blk_step_mod:11
NPU_OP_BRANCH               branch_cond:1=branch_cond _:15 | branch_target:32
"""

U85 = build_command_set("Ethos-U85", STREAM_VERSION, (_CMD0, _CMD1), parse_layouts(_LAYOUTS), ENUMS)
