"""Colour conversions (cvtColor, cvtColorTwoPlane) and channel split/merge.

Every conversion is one op (CvColor) whose C++ kernel handles a family of OpenCV codes: channel
reorders with or without alpha, gray, YCrCb/YUV, XYZ, HSV/HLS, Lab/Luv, the 16-bit 565/555
packings, YUV 4:2:0 (NV12, NV21, I420, YV12) and packed 4:2:2 (UYVY, YUY2, YVYU) both ways, and
premultiplied alpha, and bilinear Bayer demosaicing to BGR/RGB(A)/GRAY. uint8 images follow
OpenCV's fixed-point arithmetic; float32 images compute in float as OpenCV does. The Bayer _VNG
and _EA variants are not implemented; uint16 images are refused until the core has the type.
"""
import numpy as _np

from .. import _core
from .._core import Var
from ._common import as_image, channels, error, image_op

# OpenCV's conversion codes (cv2 5.0 values).
COLOR_BGR2BGRA = 0
COLOR_RGB2RGBA = 0
COLOR_BGRA2BGR = 1
COLOR_RGBA2RGB = 1
COLOR_BGR2RGBA = 2
COLOR_RGB2BGRA = 2
COLOR_BGRA2RGB = 3
COLOR_RGBA2BGR = 3
COLOR_BGR2RGB = 4
COLOR_RGB2BGR = 4
COLOR_BGRA2RGBA = 5
COLOR_RGBA2BGRA = 5
COLOR_BGR2GRAY = 6
COLOR_RGB2GRAY = 7
COLOR_GRAY2BGR = 8
COLOR_GRAY2RGB = 8
COLOR_GRAY2BGRA = 9
COLOR_GRAY2RGBA = 9
COLOR_BGRA2GRAY = 10
COLOR_RGBA2GRAY = 11
COLOR_BGR2BGR565 = 12
COLOR_RGB2BGR565 = 13
COLOR_BGR5652BGR = 14
COLOR_BGR5652RGB = 15
COLOR_BGRA2BGR565 = 16
COLOR_RGBA2BGR565 = 17
COLOR_BGR5652BGRA = 18
COLOR_BGR5652RGBA = 19
COLOR_GRAY2BGR565 = 20
COLOR_BGR5652GRAY = 21
COLOR_BGR2BGR555 = 22
COLOR_RGB2BGR555 = 23
COLOR_BGR5552BGR = 24
COLOR_BGR5552RGB = 25
COLOR_BGRA2BGR555 = 26
COLOR_RGBA2BGR555 = 27
COLOR_BGR5552BGRA = 28
COLOR_BGR5552RGBA = 29
COLOR_GRAY2BGR555 = 30
COLOR_BGR5552GRAY = 31
COLOR_BGR2XYZ = 32
COLOR_RGB2XYZ = 33
COLOR_XYZ2BGR = 34
COLOR_XYZ2RGB = 35
COLOR_BGR2YCR_CB = 36
COLOR_BGR2YCrCb = 36
COLOR_RGB2YCR_CB = 37
COLOR_RGB2YCrCb = 37
COLOR_YCR_CB2BGR = 38
COLOR_YCrCb2BGR = 38
COLOR_YCR_CB2RGB = 39
COLOR_YCrCb2RGB = 39
COLOR_BGR2HSV = 40
COLOR_RGB2HSV = 41
COLOR_BGR2LAB = 44
COLOR_BGR2Lab = 44
COLOR_RGB2LAB = 45
COLOR_RGB2Lab = 45
COLOR_BAYER_BG2BGR = 46
COLOR_BAYER_BGGR2RGB = 46
COLOR_BAYER_RG2RGB = 46
COLOR_BAYER_RGGB2BGR = 46
COLOR_BayerBG2BGR = 46
COLOR_BayerBGGR2RGB = 46
COLOR_BayerRG2RGB = 46
COLOR_BayerRGGB2BGR = 46
COLOR_BAYER_GB2BGR = 47
COLOR_BAYER_GBRG2RGB = 47
COLOR_BAYER_GR2RGB = 47
COLOR_BAYER_GRBG2BGR = 47
COLOR_BayerGB2BGR = 47
COLOR_BayerGBRG2RGB = 47
COLOR_BayerGR2RGB = 47
COLOR_BayerGRBG2BGR = 47
COLOR_BAYER_BG2RGB = 48
COLOR_BAYER_BGGR2BGR = 48
COLOR_BAYER_RG2BGR = 48
COLOR_BAYER_RGGB2RGB = 48
COLOR_BayerBG2RGB = 48
COLOR_BayerBGGR2BGR = 48
COLOR_BayerRG2BGR = 48
COLOR_BayerRGGB2RGB = 48
COLOR_BAYER_GB2RGB = 49
COLOR_BAYER_GBRG2BGR = 49
COLOR_BAYER_GR2BGR = 49
COLOR_BAYER_GRBG2RGB = 49
COLOR_BayerGB2RGB = 49
COLOR_BayerGBRG2BGR = 49
COLOR_BayerGR2BGR = 49
COLOR_BayerGRBG2RGB = 49
COLOR_BGR2LUV = 50
COLOR_BGR2Luv = 50
COLOR_RGB2LUV = 51
COLOR_RGB2Luv = 51
COLOR_BGR2HLS = 52
COLOR_RGB2HLS = 53
COLOR_HSV2BGR = 54
COLOR_HSV2RGB = 55
COLOR_LAB2BGR = 56
COLOR_Lab2BGR = 56
COLOR_LAB2RGB = 57
COLOR_Lab2RGB = 57
COLOR_LUV2BGR = 58
COLOR_Luv2BGR = 58
COLOR_LUV2RGB = 59
COLOR_Luv2RGB = 59
COLOR_HLS2BGR = 60
COLOR_HLS2RGB = 61
COLOR_BAYER_BG2BGR_VNG = 62
COLOR_BAYER_BGGR2RGB_VNG = 62
COLOR_BAYER_RG2RGB_VNG = 62
COLOR_BAYER_RGGB2BGR_VNG = 62
COLOR_BayerBG2BGR_VNG = 62
COLOR_BayerBGGR2RGB_VNG = 62
COLOR_BayerRG2RGB_VNG = 62
COLOR_BayerRGGB2BGR_VNG = 62
COLOR_BAYER_GB2BGR_VNG = 63
COLOR_BAYER_GBRG2RGB_VNG = 63
COLOR_BAYER_GR2RGB_VNG = 63
COLOR_BAYER_GRBG2BGR_VNG = 63
COLOR_BayerGB2BGR_VNG = 63
COLOR_BayerGBRG2RGB_VNG = 63
COLOR_BayerGR2RGB_VNG = 63
COLOR_BayerGRBG2BGR_VNG = 63
COLOR_BAYER_BG2RGB_VNG = 64
COLOR_BAYER_BGGR2BGR_VNG = 64
COLOR_BAYER_RG2BGR_VNG = 64
COLOR_BAYER_RGGB2RGB_VNG = 64
COLOR_BayerBG2RGB_VNG = 64
COLOR_BayerBGGR2BGR_VNG = 64
COLOR_BayerRG2BGR_VNG = 64
COLOR_BayerRGGB2RGB_VNG = 64
COLOR_BAYER_GB2RGB_VNG = 65
COLOR_BAYER_GBRG2BGR_VNG = 65
COLOR_BAYER_GR2BGR_VNG = 65
COLOR_BAYER_GRBG2RGB_VNG = 65
COLOR_BayerGB2RGB_VNG = 65
COLOR_BayerGBRG2BGR_VNG = 65
COLOR_BayerGR2BGR_VNG = 65
COLOR_BayerGRBG2RGB_VNG = 65
COLOR_BGR2HSV_FULL = 66
COLOR_RGB2HSV_FULL = 67
COLOR_BGR2HLS_FULL = 68
COLOR_RGB2HLS_FULL = 69
COLOR_HSV2BGR_FULL = 70
COLOR_HSV2RGB_FULL = 71
COLOR_HLS2BGR_FULL = 72
COLOR_HLS2RGB_FULL = 73
COLOR_LBGR2LAB = 74
COLOR_LBGR2Lab = 74
COLOR_LRGB2LAB = 75
COLOR_LRGB2Lab = 75
COLOR_LBGR2LUV = 76
COLOR_LBGR2Luv = 76
COLOR_LRGB2LUV = 77
COLOR_LRGB2Luv = 77
COLOR_LAB2LBGR = 78
COLOR_Lab2LBGR = 78
COLOR_LAB2LRGB = 79
COLOR_Lab2LRGB = 79
COLOR_LUV2LBGR = 80
COLOR_Luv2LBGR = 80
COLOR_LUV2LRGB = 81
COLOR_Luv2LRGB = 81
COLOR_BGR2YUV = 82
COLOR_RGB2YUV = 83
COLOR_YUV2BGR = 84
COLOR_YUV2RGB = 85
COLOR_BAYER_BG2GRAY = 86
COLOR_BAYER_RGGB2GRAY = 86
COLOR_BayerBG2GRAY = 86
COLOR_BayerRGGB2GRAY = 86
COLOR_BAYER_GB2GRAY = 87
COLOR_BAYER_GRBG2GRAY = 87
COLOR_BayerGB2GRAY = 87
COLOR_BayerGRBG2GRAY = 87
COLOR_BAYER_BGGR2GRAY = 88
COLOR_BAYER_RG2GRAY = 88
COLOR_BayerBGGR2GRAY = 88
COLOR_BayerRG2GRAY = 88
COLOR_BAYER_GBRG2GRAY = 89
COLOR_BAYER_GR2GRAY = 89
COLOR_BayerGBRG2GRAY = 89
COLOR_BayerGR2GRAY = 89
COLOR_YUV2RGB_NV12 = 90
COLOR_YUV2BGR_NV12 = 91
COLOR_YUV2RGB_NV21 = 92
COLOR_YUV420SP2RGB = 92
COLOR_YUV420sp2RGB = 92
COLOR_YUV2BGR_NV21 = 93
COLOR_YUV420SP2BGR = 93
COLOR_YUV420sp2BGR = 93
COLOR_YUV2RGBA_NV12 = 94
COLOR_YUV2BGRA_NV12 = 95
COLOR_YUV2RGBA_NV21 = 96
COLOR_YUV420SP2RGBA = 96
COLOR_YUV420sp2RGBA = 96
COLOR_YUV2BGRA_NV21 = 97
COLOR_YUV420SP2BGRA = 97
COLOR_YUV420sp2BGRA = 97
COLOR_YUV2RGB_YV12 = 98
COLOR_YUV420P2RGB = 98
COLOR_YUV420p2RGB = 98
COLOR_YUV2BGR_YV12 = 99
COLOR_YUV420P2BGR = 99
COLOR_YUV420p2BGR = 99
COLOR_YUV2RGB_I420 = 100
COLOR_YUV2RGB_IYUV = 100
COLOR_YUV2BGR_I420 = 101
COLOR_YUV2BGR_IYUV = 101
COLOR_YUV2RGBA_YV12 = 102
COLOR_YUV420P2RGBA = 102
COLOR_YUV420p2RGBA = 102
COLOR_YUV2BGRA_YV12 = 103
COLOR_YUV420P2BGRA = 103
COLOR_YUV420p2BGRA = 103
COLOR_YUV2RGBA_I420 = 104
COLOR_YUV2RGBA_IYUV = 104
COLOR_YUV2BGRA_I420 = 105
COLOR_YUV2BGRA_IYUV = 105
COLOR_YUV2GRAY_420 = 106
COLOR_YUV2GRAY_I420 = 106
COLOR_YUV2GRAY_IYUV = 106
COLOR_YUV2GRAY_NV12 = 106
COLOR_YUV2GRAY_NV21 = 106
COLOR_YUV2GRAY_YV12 = 106
COLOR_YUV420P2GRAY = 106
COLOR_YUV420SP2GRAY = 106
COLOR_YUV420p2GRAY = 106
COLOR_YUV420sp2GRAY = 106
COLOR_YUV2RGB_UYNV = 107
COLOR_YUV2RGB_UYVY = 107
COLOR_YUV2RGB_Y422 = 107
COLOR_YUV2BGR_UYNV = 108
COLOR_YUV2BGR_UYVY = 108
COLOR_YUV2BGR_Y422 = 108
COLOR_YUV2RGBA_UYNV = 111
COLOR_YUV2RGBA_UYVY = 111
COLOR_YUV2RGBA_Y422 = 111
COLOR_YUV2BGRA_UYNV = 112
COLOR_YUV2BGRA_UYVY = 112
COLOR_YUV2BGRA_Y422 = 112
COLOR_YUV2RGB_YUNV = 115
COLOR_YUV2RGB_YUY2 = 115
COLOR_YUV2RGB_YUYV = 115
COLOR_YUV2BGR_YUNV = 116
COLOR_YUV2BGR_YUY2 = 116
COLOR_YUV2BGR_YUYV = 116
COLOR_YUV2RGB_YVYU = 117
COLOR_YUV2BGR_YVYU = 118
COLOR_YUV2RGBA_YUNV = 119
COLOR_YUV2RGBA_YUY2 = 119
COLOR_YUV2RGBA_YUYV = 119
COLOR_YUV2BGRA_YUNV = 120
COLOR_YUV2BGRA_YUY2 = 120
COLOR_YUV2BGRA_YUYV = 120
COLOR_YUV2RGBA_YVYU = 121
COLOR_YUV2BGRA_YVYU = 122
COLOR_YUV2GRAY_UYNV = 123
COLOR_YUV2GRAY_UYVY = 123
COLOR_YUV2GRAY_Y422 = 123
COLOR_YUV2GRAY_YUNV = 124
COLOR_YUV2GRAY_YUY2 = 124
COLOR_YUV2GRAY_YUYV = 124
COLOR_YUV2GRAY_YVYU = 124
COLOR_RGBA2M_RGBA = 125
COLOR_RGBA2mRGBA = 125
COLOR_M_RGBA2RGBA = 126
COLOR_mRGBA2RGBA = 126
COLOR_RGB2YUV_I420 = 127
COLOR_RGB2YUV_IYUV = 127
COLOR_BGR2YUV_I420 = 128
COLOR_BGR2YUV_IYUV = 128
COLOR_RGBA2YUV_I420 = 129
COLOR_RGBA2YUV_IYUV = 129
COLOR_BGRA2YUV_I420 = 130
COLOR_BGRA2YUV_IYUV = 130
COLOR_RGB2YUV_YV12 = 131
COLOR_BGR2YUV_YV12 = 132
COLOR_RGBA2YUV_YV12 = 133
COLOR_BGRA2YUV_YV12 = 134
COLOR_BAYER_BG2BGR_EA = 135
COLOR_BAYER_BGGR2RGB_EA = 135
COLOR_BAYER_RG2RGB_EA = 135
COLOR_BAYER_RGGB2BGR_EA = 135
COLOR_BayerBG2BGR_EA = 135
COLOR_BayerBGGR2RGB_EA = 135
COLOR_BayerRG2RGB_EA = 135
COLOR_BayerRGGB2BGR_EA = 135
COLOR_BAYER_GB2BGR_EA = 136
COLOR_BAYER_GBRG2RGB_EA = 136
COLOR_BAYER_GR2RGB_EA = 136
COLOR_BAYER_GRBG2BGR_EA = 136
COLOR_BayerGB2BGR_EA = 136
COLOR_BayerGBRG2RGB_EA = 136
COLOR_BayerGR2RGB_EA = 136
COLOR_BayerGRBG2BGR_EA = 136
COLOR_BAYER_BG2RGB_EA = 137
COLOR_BAYER_BGGR2BGR_EA = 137
COLOR_BAYER_RG2BGR_EA = 137
COLOR_BAYER_RGGB2RGB_EA = 137
COLOR_BayerBG2RGB_EA = 137
COLOR_BayerBGGR2BGR_EA = 137
COLOR_BayerRG2BGR_EA = 137
COLOR_BayerRGGB2RGB_EA = 137
COLOR_BAYER_GB2RGB_EA = 138
COLOR_BAYER_GBRG2BGR_EA = 138
COLOR_BAYER_GR2BGR_EA = 138
COLOR_BAYER_GRBG2RGB_EA = 138
COLOR_BayerGB2RGB_EA = 138
COLOR_BayerGBRG2BGR_EA = 138
COLOR_BayerGR2BGR_EA = 138
COLOR_BayerGRBG2RGB_EA = 138
COLOR_BAYER_BG2BGRA = 139
COLOR_BAYER_BGGR2RGBA = 139
COLOR_BAYER_RG2RGBA = 139
COLOR_BAYER_RGGB2BGRA = 139
COLOR_BayerBG2BGRA = 139
COLOR_BayerBGGR2RGBA = 139
COLOR_BayerRG2RGBA = 139
COLOR_BayerRGGB2BGRA = 139
COLOR_BAYER_GB2BGRA = 140
COLOR_BAYER_GBRG2RGBA = 140
COLOR_BAYER_GR2RGBA = 140
COLOR_BAYER_GRBG2BGRA = 140
COLOR_BayerGB2BGRA = 140
COLOR_BayerGBRG2RGBA = 140
COLOR_BayerGR2RGBA = 140
COLOR_BayerGRBG2BGRA = 140
COLOR_BAYER_BG2RGBA = 141
COLOR_BAYER_BGGR2BGRA = 141
COLOR_BAYER_RG2BGRA = 141
COLOR_BAYER_RGGB2RGBA = 141
COLOR_BayerBG2RGBA = 141
COLOR_BayerBGGR2BGRA = 141
COLOR_BayerRG2BGRA = 141
COLOR_BayerRGGB2RGBA = 141
COLOR_BAYER_GB2RGBA = 142
COLOR_BAYER_GBRG2BGRA = 142
COLOR_BAYER_GR2BGRA = 142
COLOR_BAYER_GRBG2RGBA = 142
COLOR_BayerGB2RGBA = 142
COLOR_BayerGBRG2BGRA = 142
COLOR_BayerGR2BGRA = 142
COLOR_BayerGRBG2RGBA = 142
COLOR_RGB2YUV_UYNV = 143
COLOR_RGB2YUV_UYVY = 143
COLOR_RGB2YUV_Y422 = 143
COLOR_BGR2YUV_UYNV = 144
COLOR_BGR2YUV_UYVY = 144
COLOR_BGR2YUV_Y422 = 144
COLOR_RGBA2YUV_UYNV = 145
COLOR_RGBA2YUV_UYVY = 145
COLOR_RGBA2YUV_Y422 = 145
COLOR_BGRA2YUV_UYNV = 146
COLOR_BGRA2YUV_UYVY = 146
COLOR_BGRA2YUV_Y422 = 146
COLOR_RGB2YUV_YUNV = 147
COLOR_RGB2YUV_YUY2 = 147
COLOR_RGB2YUV_YUYV = 147
COLOR_BGR2YUV_YUNV = 148
COLOR_BGR2YUV_YUY2 = 148
COLOR_BGR2YUV_YUYV = 148
COLOR_RGB2YUV_YVYU = 149
COLOR_BGR2YUV_YVYU = 150
COLOR_RGBA2YUV_YUNV = 151
COLOR_RGBA2YUV_YUY2 = 151
COLOR_RGBA2YUV_YUYV = 151
COLOR_BGRA2YUV_YUNV = 152
COLOR_BGRA2YUV_YUY2 = 152
COLOR_BGRA2YUV_YUYV = 152
COLOR_RGBA2YUV_YVYU = 153
COLOR_BGRA2YUV_YVYU = 154
COLOR_COLORCVT_MAX = 155

__all__ = ["cvtColor", "cvtColorTwoPlane", "split", "merge"] + sorted(
    name for name in dir() if name.startswith("COLOR_"))


# Kinds of the CvColor op (cpu::cv_color::Kind).
_REORDER, _TO_GRAY, _YCRCB, _YCRCB_INV, _XYZ, _XYZ_INV, _HSV, _HSV_INV, _HLS, _HLS_INV = range(10)
_LAB, _LAB_INV, _LUV, _LUV_INV, _TO16, _FROM16, _GRAY_TO16, _FROM16_GRAY = range(10, 18)
_YUV420_TO_RGB, _YUV420_TO_GRAY, _RGB_TO_YUV420, _YUV422_TO_RGB, _YUV422_TO_GRAY, _RGB_TO_YUV422 = range(18, 24)
_PREMULTIPLY, _UNPREMULTIPLY, _BAYER = 24, 25, 26

_U8 = (_np.dtype(_np.uint8),)
_U8_F32 = (_np.dtype(_np.uint8), _np.dtype(_np.float32))


class _Conversion:
    """One code: the op kind, accepted source channels, the default destination channels,
    whether dstCn may change them, accepted dtypes, and the op's other attributes."""

    def __init__(self, kind, scn, dcn, dtypes=_U8_F32, dcn_choice=False, **attrs):
        self.kind, self.scn, self.dcn, self.dtypes, self.dcn_choice = kind, scn, dcn, dtypes, dcn_choice
        self.attrs = attrs


def _build_table():
    t = {}
    blue_of = {"BGR": 0, "RGB": 2}
    # Channel reorders: dstCn picks 3 or 4 output channels; alpha is kept when both have it.
    for code, swap, dcn in ((0, False, 4), (1, False, 3), (2, True, 4), (3, True, 3), (4, True, 3), (5, True, 4)):
        t[code] = _Conversion(_REORDER, (3, 4), dcn, dcn_choice=True, swap=swap)
    t[8] = _Conversion(_REORDER, (1,), 3, dcn_choice=True, swap=False)
    t[9] = _Conversion(_REORDER, (1,), 4, dcn_choice=True, swap=False)
    for code, blue in ((6, 0), (7, 2), (10, 0), (11, 2)):
        t[code] = _Conversion(_TO_GRAY, (3, 4), 1, blue=blue)
    # 565 (green_bits 6) and 555 (5): to, from, from gray, to gray.
    for base, bits in ((12, 6), (22, 5)):
        for offset, blue, scn in ((0, 0, (3,)), (1, 2, (3,)), (4, 0, (4,)), (5, 2, (4,))):
            t[base + offset] = _Conversion(_TO16, scn, 2, _U8, blue=blue, green_bits=bits)
        for offset, blue, dcn in ((2, 0, 3), (3, 2, 3), (6, 0, 4), (7, 2, 4)):
            t[base + offset] = _Conversion(_FROM16, (2,), dcn, _U8, dcn_choice=True, blue=blue, green_bits=bits)
        t[base + 8] = _Conversion(_GRAY_TO16, (1,), 2, _U8, green_bits=bits)
        t[base + 9] = _Conversion(_FROM16_GRAY, (2,), 1, _U8, green_bits=bits)
    pairs = [  # (forward BGR code, forward RGB code, inverse to BGR, inverse to RGB, kinds, attrs)
        (32, 33, 34, 35, (_XYZ, _XYZ_INV), {}),
        (36, 37, 38, 39, (_YCRCB, _YCRCB_INV), {"yuv": 0}),
        (82, 83, 84, 85, (_YCRCB, _YCRCB_INV), {"yuv": 1}),
        (40, 41, 54, 55, (_HSV, _HSV_INV), {"hue_range": 180}),
        (66, 67, 70, 71, (_HSV, _HSV_INV), {"hue_range": 256}),
        (52, 53, 60, 61, (_HLS, _HLS_INV), {"hue_range": 180}),
        (68, 69, 72, 73, (_HLS, _HLS_INV), {"hue_range": 256}),
        (44, 45, 56, 57, (_LAB, _LAB_INV), {"srgb": 1}),
        (74, 75, 78, 79, (_LAB, _LAB_INV), {"srgb": 0}),
        (50, 51, 58, 59, (_LUV, _LUV_INV), {"srgb": 1}),
        (76, 77, 80, 81, (_LUV, _LUV_INV), {"srgb": 0}),
    ]
    for fwd_bgr, fwd_rgb, inv_bgr, inv_rgb, (fwd, inv), attrs in pairs:
        t[fwd_bgr] = _Conversion(fwd, (3, 4), 3, blue=0, **attrs)
        t[fwd_rgb] = _Conversion(fwd, (3, 4), 3, blue=2, **attrs)
        t[inv_bgr] = _Conversion(inv, (3,), 3, dcn_choice=True, blue=0, **attrs)
        t[inv_rgb] = _Conversion(inv, (3,), 3, dcn_choice=True, blue=2, **attrs)
    # YUV 4:2:0 -> RGB: (RGB, BGR, RGBA, BGRA) codes per layout.
    for codes, u_first, interleaved in (((90, 91, 94, 95), 1, 1), ((92, 93, 96, 97), 0, 1),
                                        ((98, 99, 102, 103), 0, 0), ((100, 101, 104, 105), 1, 0)):
        for code, blue, dcn in zip(codes, (2, 0, 2, 0), (3, 3, 4, 4)):
            t[code] = _Conversion(_YUV420_TO_RGB, (1,), dcn, _U8, blue=blue, u_first=u_first,
                                  interleaved_chroma=interleaved)
    t[106] = _Conversion(_YUV420_TO_GRAY, (1,), 1, _U8)
    # Packed 4:2:2 -> RGB: byte offsets of the first Y and of U in each 4-byte pair of pixels.
    for codes, luma, u in (((107, 108, 111, 112), 1, 0), ((115, 116, 119, 120), 0, 1),
                           ((117, 118, 121, 122), 0, 3)):
        for code, blue, dcn in zip(codes, (2, 0, 2, 0), (3, 3, 4, 4)):
            t[code] = _Conversion(_YUV422_TO_RGB, (2,), dcn, _U8, blue=blue, luma_index=luma, u_index=u)
    t[123] = _Conversion(_YUV422_TO_GRAY, (2,), 1, _U8, luma_index=1)
    t[124] = _Conversion(_YUV422_TO_GRAY, (2,), 1, _U8, luma_index=0)
    t[125] = _Conversion(_PREMULTIPLY, (4,), 4, _U8)
    t[126] = _Conversion(_UNPREMULTIPLY, (4,), 4, _U8)
    # RGB -> planar 4:2:0 (I420: U plane first; YV12: V first).
    for codes, u_first in (((127, 128, 129, 130), 1), ((131, 132, 133, 134), 0)):
        for code, blue, scn in zip(codes, (2, 0, 2, 0), ((3,), (3,), (4,), (4,))):
            t[code] = _Conversion(_RGB_TO_YUV420, scn, 1, _U8, blue=blue, u_first=u_first)
    # Bayer mosaics (bilinear), by the colours of the top-left 2x2 block: RGGB, GRBG, BGGR, GBRG.
    # OpenCV's *2RGB codes are the *2BGR codes of the mosaic with red and blue exchanged.
    for pattern in range(4):
        t[46 + pattern] = _Conversion(_BAYER, (1,), 3, _U8, dcn_choice=True, bayer_pattern=pattern)
        t[139 + pattern] = _Conversion(_BAYER, (1,), 4, _U8, dcn_choice=True, bayer_pattern=pattern)
        t[86 + pattern] = _Conversion(_BAYER, (1,), 1, _U8, bayer_pattern=pattern)
    # RGB -> packed 4:2:2.
    for codes, luma, u in (((143, 144, 145, 146), 1, 0), ((147, 148, 151, 152), 0, 1),
                           ((149, 150, 153, 154), 0, 3)):
        for code, blue, scn in zip(codes, (2, 0, 2, 0), ((3,), (3,), (4,), (4,))):
            t[code] = _Conversion(_RGB_TO_YUV422, scn, 2, _U8, blue=blue, luma_index=luma, u_index=u)
    return t


_TABLE = _build_table()
_TWO_PLANE_CODES = frozenset(range(90, 98))
# The dtypes split/merge take; conversions check their own (uint16 waits for the core to have it).
_COLOR_DTYPES = tuple(_np.dtype(d) for d in ("uint8", "int8", "int16", "int32", "float32", "float64"))


def _as_code(func, code):
    if not isinstance(code, (int, _np.integer)) or isinstance(code, bool):
        raise TypeError(f"mnnpy.cv.{func}: 'code' must be an integer, got {type(code).__name__}")
    return int(code)


def _as_dst_channels(func, dstCn):  # noqa: N803 (OpenCV's name)
    if not isinstance(dstCn, (int, _np.integer)) or isinstance(dstCn, bool):
        raise TypeError(f"mnnpy.cv.{func}: 'dstCn' must be an integer, got {type(dstCn).__name__}")
    dstCn = int(dstCn)
    if dstCn < 0 and dstCn != -1 or dstCn > 4:
        raise error(func, f"dstCn {dstCn} is out of range (0 to 4)")
    return dstCn


def _conversion(func, code):
    conv = _TABLE.get(code)
    if conv is None:
        detail = " (the Bayer _VNG and _EA demosaicing variants are not implemented)" if code in _BAYER_CODES else ""
        raise error(func, f"unknown or unsupported color conversion code {code}{detail}")
    return conv


_BAYER_CODES = frozenset(list(range(46, 50)) + list(range(62, 66)) + list(range(86, 90)) + list(range(135, 143)))


def _check_dtype(func, image, conv):
    dtype = _np.dtype(image.dtype)
    if dtype not in conv.dtypes:
        raise error(func, f"unsupported image dtype {dtype} for this conversion; expected "
                          f"{' or '.join(str(d) for d in conv.dtypes)}")


def _attrs(conv, scn, dcn):
    attrs = {k: v for k, v in conv.attrs.items() if k != "swap"}
    attrs.update(kind=conv.kind, scn=scn, dcn=dcn)
    if conv.kind == _REORDER:
        source = [0, 0, 0] if scn == 1 else [2, 1, 0] if conv.attrs["swap"] else [0, 1, 2]
        if dcn == 4:
            source.append(3 if scn == 4 else -1)
        attrs["order"] = source
    return attrs


def cvtColor(src, code, dst=None, dstCn=0):  # noqa: N802,N803 (OpenCV's names)
    """OpenCV's ``cvtColor``: ``src`` converted by ``code`` (a ``COLOR_*`` constant).

    uint8 and float32 images (uint8 only for the 565/555, YUV 4:2:0/4:2:2 and premultiplied
    alpha codes). ``dstCn`` chooses 3 or 4 output channels where OpenCV lets it (reorders, gray
    to colour, conversions back to BGR/RGB). ``dst`` is accepted for OpenCV's signature; the
    result is always a new Var."""
    func = "cvtColor"
    if type(code) is not int or type(dstCn) is not int:
        code, dstCn = _as_code(func, code), _as_dst_channels(func, dstCn)
    conv = _TABLE.get(code)
    if conv is None or not 0 <= dstCn <= 4:
        _as_dst_channels(func, dstCn)
        _conversion(func, code)
    image = as_image(src, func, dtypes=_COLOR_DTYPES)
    shape = image.shape
    key = (code, dstCn, 1 if len(shape) == 2 else shape[2], image.dtype.char)
    attrs = _CONVERSION_ATTRS.get(key)
    if attrs is None:
        attrs = _conversion_attrs(func, conv, key, image)
    if conv.kind in (_YUV420_TO_RGB, _YUV420_TO_GRAY):
        if shape[1] % 2 or shape[0] % 3:
            raise error(func, f"a 4:2:0 image needs a width divisible by 2 and a height divisible by 3 "
                              f"(3/2 of the picture's), got {shape[1]}x{shape[0]}")
    elif conv.kind == _RGB_TO_YUV420:
        if shape[1] % 2 or shape[0] % 2:
            raise error(func, f"conversion to 4:2:0 needs an even width and height, got {shape[1]}x{shape[0]}")
    elif conv.kind in (_YUV422_TO_RGB, _YUV422_TO_GRAY, _RGB_TO_YUV422):
        if shape[1] % 2:
            raise error(func, f"4:2:2 images need an even width, got {shape[1]}")
    return _core.op("CvColor", [image], attrs)


# The CvColor attributes of each (code, dstCn, source channels, dtype char) seen so far: the
# checks and the attribute dictionary are worked out once, not at every call.
_CONVERSION_ATTRS = {}


def _conversion_attrs(func, conv, key, image):
    code, dstCn, scn, _ = key
    _check_dtype(func, image, conv)
    if scn not in conv.scn:
        raise error(func, f"conversion code {code} needs an image of {' or '.join(map(str, conv.scn))} "
                          f"channel(s), got {scn}")
    dcn = conv.dcn
    if conv.dcn_choice and dstCn > 0:
        if dstCn not in (3, 4):
            raise error(func, f"dstCn must be 3 or 4 for conversion code {code}, got {dstCn}")
        dcn = dstCn
    attrs = _attrs(conv, scn, dcn)
    if "hue_range" in attrs:
        if _np.dtype(image.dtype) == _np.float32:
            attrs["hue_range"] = 360  # float hues are degrees, for the _FULL codes too
        elif attrs["hue_range"] == 256 and conv.kind != _HSV:
            attrs["hue_range"] = 255  # uint8 _FULL hues other than BGR->HSV's division tables span 0..255
    _CONVERSION_ATTRS[key] = attrs
    return attrs


def cvtColorTwoPlane(src1, src2, code, dst=None):  # noqa: N802 (OpenCV's name)
    """OpenCV's ``cvtColorTwoPlane``: a 4:2:0 image given as its luma plane ``src1`` (HxW) and
    its interleaved chroma plane ``src2`` ((H/2)x(W/2) pixels of 2 channels), for the NV12 and
    NV21 codes to BGR, RGB, BGRA or RGBA."""
    func = "cvtColorTwoPlane"
    code = _as_code(func, code)
    if code not in _TWO_PLANE_CODES:
        raise error(func, f"unknown or unsupported two-plane conversion code {code}; expected an NV12 or NV21 "
                          "code to BGR, RGB, BGRA or RGBA")
    conv = _TABLE[code]
    luma = as_image(src1, func, "src1", dtypes=_COLOR_DTYPES)
    chroma = as_image(src2, func, "src2", dtypes=_COLOR_DTYPES)
    for name, image in (("src1", luma), ("src2", chroma)):
        if _np.dtype(image.dtype) != _np.uint8:
            raise error(func, f"'{name}' must be uint8, got {_np.dtype(image.dtype)}")
    h, w = tuple(luma.shape)[:2]
    if channels(luma) != 1:
        raise error(func, f"'src1' must be one channel, got {channels(luma)}")
    if channels(chroma) != 2 or h % 2 or w % 2 or tuple(chroma.shape)[:2] != (h // 2, w // 2):
        raise error(func, f"'src2' must be (H/2)x(W/2) pixels of 2 channels for a {w}x{h} luma plane "
                          f"with even sizes, got shape {tuple(chroma.shape)}")
    return image_op("CvColor", [luma, chroma], **_attrs(conv, 1, conv.dcn))


# The most channels OpenCV 5's bindings read from the last axis of a 3-D array (CV_CN_MAX).
_CN_MAX = 128
# What a Var can hold (int64 arrays are narrowed to int32 first, as OpenCV's bindings narrow them).
_MAT_DTYPES = tuple(_np.dtype(d) for d in ("bool", "uint8", "int8", "int16", "int32", "float16", "float32",
                                           "float64"))


def _mat(value, func, name):
    """``(var, dims, channels)``: an array as OpenCV 5's bindings read it (the Var shaped dims,
    or dims + (channels,) for several). A 3-D array whose
    last axis has at most 128 entries is HxW pixels of that many channels; every other array
    (1-D, 2-D, 4-D and more) is one channel of its own shape. int64 is narrowed to int32 (its
    low 32 bits), as OpenCV's bindings narrow it."""
    if not isinstance(value, (Var, _np.ndarray)):
        raise TypeError(f"mnnpy.cv.{func}: '{name}' must be a NumPy array or Var, got {type(value).__name__}")
    shape, dtype = tuple(value.shape), _np.dtype(value.dtype)
    if not shape:
        raise error(func, f"'{name}' must be an array of at least one dimension, got a scalar")
    if 2 <= len(shape) <= 3 and 0 not in shape and dtype in _COLOR_DTYPES:
        v = as_image(value, func, name, dtypes=_COLOR_DTYPES)  # a NumPy image is read in place
    else:
        if isinstance(value, _np.ndarray):
            if dtype.kind in "iu" and dtype.itemsize == 8:
                value = value.astype(_np.int32)
                dtype = value.dtype
            if dtype not in _MAT_DTYPES:
                raise error(func, f"'{name}' has unsupported dtype {dtype}; expected one of "
                                  f"{', '.join(str(d) for d in _MAT_DTYPES)} or int64")
            v = _core.const(_np.ascontiguousarray(value), None, "NCHW")
        else:
            v = _core.cast(value, _np.int32) if dtype == _np.int64 else value
    dims, c = (shape[:2], shape[2]) if len(shape) == 3 and shape[2] <= _CN_MAX else (shape, 1)
    if c == 1 and tuple(v.shape) != dims:
        v = _core.reshape(v, dims)  # one channel: its own shape (HxW for HxWx1)
    return v, dims, c


def split(m, mv=None):
    """OpenCV's ``split``: a tuple with one Var per channel of ``m`` (HxW planes of an HxWxC
    image); an array of one channel (1-D, 2-D, HxWx1, 4-D and more) gives itself, as OpenCV 5
    gives it, and an empty array gives an empty tuple."""
    v, dims, c = _mat(m, "split", "m")
    if 0 in dims:
        return ()
    if c == 1:
        return (v,)
    if _np.dtype(v.dtype) in _COLOR_DTYPES:
        out = image_op("CvSplit", [v])
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)
    return tuple(_core.reshape(plane, dims) for plane in _core.split_sections(v, c, 2))


def merge(mv, dst=None):
    """OpenCV's ``merge``: one array of the channels of every array of ``mv`` (read as
    ``split`` reads them), which share one size and dtype: HxWxC for HxW planes (HxW when there
    is a single channel), NxC for 1-D arrays of N, and an axis of C added to 4-D and larger ones,
    as OpenCV 5 gives them; at most 128 channels in all."""
    if isinstance(mv, (Var, _np.ndarray)) or not hasattr(mv, "__len__"):
        raise TypeError("mnnpy.cv.merge: 'mv' must be a sequence of images")
    if len(mv) == 0:
        raise error("merge", "'mv' is empty")
    mats = [_mat(x, "merge", f"mv[{i}]") for i, x in enumerate(mv)]
    first, dims, _ = mats[0]
    if 0 in dims:
        raise error("merge", "'mv[0]' is empty")
    for i, (v, size, _) in enumerate(mats):
        if size != dims or v.dtype != first.dtype:
            raise error("merge", f"mv[{i}] has shape {tuple(v.shape)} and dtype {_np.dtype(v.dtype)}; all "
                                 f"arrays must share the size and dtype of mv[0] ({tuple(first.shape)}, "
                                 f"{_np.dtype(first.dtype)})")
    total = sum(c for _, _, c in mats)
    if total > _CN_MAX:
        raise error("merge", f"the arrays have {total} channels in all; at most {_CN_MAX} can be merged")
    if len(mats) == 1:
        return first
    if len(dims) == 2 and _np.dtype(first.dtype) in _COLOR_DTYPES:
        return image_op("CvMerge", [v for v, _, _ in mats])
    return _core.concat([_core.reshape(v, dims + (c,)) for v, _, c in mats], len(dims))
