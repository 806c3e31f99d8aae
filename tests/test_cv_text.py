"""mnnpy.cv's putText and getTextSize against OpenCV (cv2 5.0).

OpenCV 5 draws FONT_HERSHEY_* text with outline fonts built into its binary (anti-aliased even
for LINE_8, thickness only switching to a bold weight, FONT_ITALIC ignored). mnnpy draws it with
the Hershey stroke fonts OpenCV 4 used, scaled to OpenCV 5's capital height and baseline, so the
pixels differ but size and position agree. What holds:
- Every cv2 FONT_* constant exists with the same value.
- getTextSize: height within 1 px of cv2's; baseLine within 1 px + 10% of the height (script
  faces: + 25%, their Hershey descenders are longer); width within 15% (script faces: 35%) for
  strings of 4 or more characters, thickness 1..3, scales 0.5..4, every face with and without
  FONT_ITALIC, '\\n' line breaks included (cv2 5's rules: leading breaks skipped, one trailing
  break adds no line, baseLine grows by one line step per break).
- putText's ink bounding box on a blank uint8 image (1 and 3 channels) overlaps cv2's (any
  changed pixel counts as ink) with IoU >= 0.5 in every case of the grid (strings of 4 or more
  characters, scales 0.5..2, thickness 1..3, LINE_8 and LINE_AA, bottomLeftOrigin both ways,
  every face), >= 0.7 for thickness 1 with LINE_8, and a median >= 0.8 over the grid. Thick
  strokes make the difference: Hershey strokes grow with thickness, OpenCV 5's bold weight
  barely does.
- Drawing is in place (the same array is returned); an mnnpy Var gives a new Var and stays
  unchanged; LINE_8 ink is exactly the requested color; pixels away from the text are unchanged.
- As in cv2 5: only uint8 images with 1, 3 or 4 channels are drawn on (others raise
  mnnpy.cv.error where cv2 raises cv2.error); thickness <= 0 draws as 1; any lineType is
  accepted; bytes text is decoded as UTF-8; bad argument types raise mnnpy.cv.error, as cv2's
  overloaded putText/getTextSize raise cv2.error.
What differs on purpose: characters without a Hershey glyph (non-ASCII, control characters
other than '\\n') are drawn as '?', as OpenCV 4 drew them (cv2 5 draws them with its own fonts);
FONT_ITALIC gives italic glyphs for PLAIN, COMPLEX, TRIPLEX and COMPLEX_SMALL as in OpenCV 4.
"""
import numpy as np
import pytest

import cv2
import mnnpy
import mnnpy.cv as mcv

FACES = [cv2.FONT_HERSHEY_SIMPLEX, cv2.FONT_HERSHEY_PLAIN, cv2.FONT_HERSHEY_DUPLEX, cv2.FONT_HERSHEY_COMPLEX,
         cv2.FONT_HERSHEY_TRIPLEX, cv2.FONT_HERSHEY_COMPLEX_SMALL, cv2.FONT_HERSHEY_SCRIPT_SIMPLEX,
         cv2.FONT_HERSHEY_SCRIPT_COMPLEX]
ALL_FACES = FACES + [f | cv2.FONT_ITALIC for f in FACES]
STRINGS = ["Hello World", "FPS: 29.97", "person 0.87", "Quick jumps!", "line one\nline two"]


def _is_script(face):
    return (face & 15) in (cv2.FONT_HERSHEY_SCRIPT_SIMPLEX, cv2.FONT_HERSHEY_SCRIPT_COMPLEX)


def _ink_box(img):
    """(x0, y0, x1, y1) of the pixels that differ from zero, or None."""
    ink = img.any(-1) if img.ndim == 3 else img != 0
    ys, xs = np.flatnonzero(ink.any(1)), np.flatnonzero(ink.any(0))
    if len(ys) == 0:
        return None
    return xs[0], ys[0], xs[-1] + 1, ys[-1] + 1


def _iou(a, b):
    w = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def _raises_as_cv2(*args, **kwargs):
    """Calls putText or getTextSize (name first) in both libraries: the same outcome, with
    cv2.error mapped to mnnpy.cv.error."""
    name, *args = args
    try:
        getattr(cv2, name)(*args, **kwargs)
        expected = None
    except cv2.error:
        expected = mcv.error
    except TypeError:
        expected = TypeError
    if expected is None:
        getattr(mcv, name)(*args, **kwargs)
    else:
        with pytest.raises(expected):
            getattr(mcv, name)(*args, **kwargs)


def test_font_constants_match_cv2():
    names = [n for n in dir(cv2) if n.startswith("FONT_")]
    assert names
    for name in names:
        assert getattr(mcv, name) == getattr(cv2, name), name


@pytest.mark.parametrize("face", ALL_FACES)
def test_get_text_size_against_cv2(face):
    script = _is_script(face)
    for scale in (0.5, 0.8, 1.0, 1.5, 2.5, 4.0):
        for text in STRINGS + ["Agy", "x", "W", "g\nx\nx", "\nab", "ab\n", "ab\n\n"]:
            for thickness in (1, 2, 3):
                (w, h), base = mcv.getTextSize(text, face, scale, thickness)
                (cw, ch), cbase = cv2.getTextSize(text, face, scale, thickness)
                assert all(type(v) is int for v in (w, h, base))
                case = (text, face, scale, thickness, (w, h), base, (cw, ch), cbase)
                assert abs(h - ch) <= 1, case
                assert abs(base - cbase) <= 1 + (0.25 if script else 0.1) * ch, case
                if max(len(line) for line in text.split("\n")) >= 4:
                    assert abs(w - cw) <= (0.35 if script else 0.15) * cw, case


def test_get_text_size_empty_and_keywords():
    assert mcv.getTextSize("", cv2.FONT_HERSHEY_SIMPLEX, 1.0, 1) == cv2.getTextSize("", 0, 1.0, 1)
    ours = mcv.getTextSize(text="ab", fontFace=0, fontScale=1, thickness=1)
    assert ours[0][1] == cv2.getTextSize(text="ab", fontFace=0, fontScale=1, thickness=1)[0][1]


def test_put_text_ink_box_against_cv2():
    ious = []
    for face in FACES + [cv2.FONT_HERSHEY_PLAIN | cv2.FONT_ITALIC, cv2.FONT_HERSHEY_COMPLEX | cv2.FONT_ITALIC]:
        for scale in (0.5, 1.0, 2.0):
            for text in STRINGS[:2] + STRINGS[4:]:
                for thickness in (1, 2, 3):
                    for flipped in (False, True):
                        for line_type in (cv2.LINE_8, cv2.LINE_AA):
                            org = (12, 40 if flipped else 70)
                            shape = (200, 520) if (scale + thickness) % 2 else (200, 520, 3)
                            ours, theirs = np.zeros(shape, np.uint8), np.zeros(shape, np.uint8)
                            color = 255 if len(shape) == 2 else (255, 128, 40)
                            mcv.putText(ours, text, org, face, scale, color, thickness, line_type, flipped)
                            cv2.putText(theirs, text, org, face, scale, color, thickness, line_type, flipped)
                            box, expected = _ink_box(ours), _ink_box(theirs)
                            iou = _iou(box, expected)
                            case = (face, scale, text, thickness, flipped, line_type, box, expected)
                            assert iou >= 0.5, case
                            if thickness == 1 and line_type == cv2.LINE_8:
                                assert iou >= 0.7, case
                            ious.append(iou)
    assert np.median(ious) >= 0.8


def test_put_text_in_place_color_and_untouched_pixels():
    rng = np.random.default_rng(3)
    for shape, color in (((120, 300, 3), (10, 200, 30)), ((120, 300), 77), ((120, 300, 4), (1, 2, 3, 4))):
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        before = img.copy()
        result = mcv.putText(img, "Drawn 42", (20, 60), cv2.FONT_HERSHEY_DUPLEX, 1.2, color, 2)
        assert result is img
        changed = (img != before).reshape(shape[0], shape[1], -1).any(-1)
        assert changed.any()
        # LINE_8 ink is exactly the color, channel by channel.
        want = np.array(color if isinstance(color, tuple) else (color,), np.uint8)
        assert np.all(img.reshape(shape[0], shape[1], -1)[changed] == want)
        # Nothing changes outside the text's box (getTextSize grown by the stroke).
        (w, h), base = mcv.getTextSize("Drawn 42", cv2.FONT_HERSHEY_DUPLEX, 1.2, 2)
        ys, xs = np.nonzero(changed)
        assert xs.min() >= 20 - 2 and xs.max() <= 20 + w + 2
        assert ys.min() >= 60 - h - 2 and ys.max() <= 60 + base + 2


def test_put_text_uint8_max_equals_color_on_blank():
    for face in FACES:
        img = np.zeros((80, 400), np.uint8)
        mcv.putText(img, "Colour 9", (5, 50), face, 1.0, 200)
        assert img.max() == 200 and set(np.unique(img)) == {0, 200}


def test_put_text_var_and_row_slice():
    base = np.zeros((60, 200, 3), np.uint8)
    var = mnnpy._core.const(base.copy(), None, "NCHW")
    out = mcv.putText(var, "Var", (5, 40), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (0, 255, 0))
    assert out is var  # drawn into in place, as MNN draws into a Var
    assert np.asarray(out).any()
    expected = mcv.putText(base.copy(), "Var", (5, 40), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (0, 255, 0))
    np.testing.assert_array_equal(np.asarray(out), expected)
    big = np.zeros((100, 200, 3), np.uint8)
    rows = big[20:80]
    assert mcv.putText(rows, "Rows", (5, 40), 0, 1.0, (9, 9, 9)) is rows
    assert big[:20].max() == 0 and big[20:80].max() == 9


def test_put_text_newlines_and_unknown_characters():
    def drawn(text, face=cv2.FONT_HERSHEY_SIMPLEX, flipped=False):
        img = np.zeros((200, 300), np.uint8)
        return mcv.putText(img, text, (10, 60), face, 1.0, 255, 1, cv2.LINE_8, flipped)

    # cv2 5 skips leading line breaks and starts a line one line step lower for each other one.
    np.testing.assert_array_equal(drawn("\nab"), drawn("ab"))
    np.testing.assert_array_equal(drawn("ab\n"), drawn("ab"))
    step = mcv.getTextSize("a\na", 0, 1.0, 1)[1] - mcv.getTextSize("a", 0, 1.0, 1)[1]
    assert step == cv2.getTextSize("a\na", 0, 1.0, 1)[1] - cv2.getTextSize("a", 0, 1.0, 1)[1]
    two = drawn("ab\ncd")
    np.testing.assert_array_equal(two[:60 + 10], drawn("ab")[:60 + 10])
    np.testing.assert_array_equal(two[60 + 10:], np.roll(drawn("cd"), step, axis=0)[60 + 10:])
    flipped_two = drawn("ab\ncd", flipped=True)
    theirs = cv2.putText(np.zeros((200, 300), np.uint8), "ab\ncd", (10, 60), 0, 1.0, 255, 1, 8, True)
    assert _iou(_ink_box(flipped_two), _ink_box(theirs)) >= 0.7
    # No Hershey glyph: drawn as '?', as OpenCV 4 did.
    for text in ("é", "中", "\t", "\r", "\x01"):
        np.testing.assert_array_equal(drawn("a" + text + "b"), drawn("a?b"))
    # Bytes are decoded as UTF-8, as cv2 does.
    np.testing.assert_array_equal(drawn(b"ab"), drawn("ab"))
    # Empty text draws nothing.
    assert not drawn("").any() and not drawn("\n\n").any()


def test_put_text_italic_and_thickness_semantics():
    def drawn(face, thickness=1, line_type=cv2.LINE_8):
        img = np.zeros((80, 300), np.uint8)
        return mcv.putText(img, "Italic", (10, 50), face, 1.0, 255, thickness, line_type)

    for face in (cv2.FONT_HERSHEY_PLAIN, cv2.FONT_HERSHEY_COMPLEX, cv2.FONT_HERSHEY_TRIPLEX,
                 cv2.FONT_HERSHEY_COMPLEX_SMALL):
        assert not np.array_equal(drawn(face), drawn(face | cv2.FONT_ITALIC))
    # cv2 5 draws thickness <= 0 as 1 and accepts any line type.
    for thickness in (0, -1, -5):
        np.testing.assert_array_equal(drawn(0, thickness), drawn(0, 1))
    np.testing.assert_array_equal(drawn(0, 1, 3), drawn(0, 1, cv2.LINE_8))
    assert drawn(0, 3).sum() > drawn(0, 1).sum()
    aa = drawn(0, 1, cv2.LINE_AA)
    assert len(np.unique(aa)) > 2


def test_put_text_far_outside_and_extreme_scales():
    img = np.zeros((20, 20), np.uint8)
    assert mcv.putText(img, "ab", (-2**31, 2**31 - 1), 0, 1.0, 255) is img and not img.any()
    assert not mcv.putText(img, "ab", (5000, 10), 0, 1.0, 255).any()
    # Scales cv2 5 crashes on: drawn or refused, never a crash.
    for scale in (1e6, 1e12):
        try:
            mcv.putText(img, "ab", (1, 5), 0, scale, 255)
        except mcv.error:
            pass
    for scale in (float("nan"), float("inf")):
        with pytest.raises(mcv.error):
            mcv.putText(img, "ab", (1, 5), 0, scale, 255)
        with pytest.raises(mcv.error):
            mcv.getTextSize("ab", 0, scale, 1)
    # A negative scale turns the text half a turn about org, as OpenCV 4 did.
    turned = mcv.putText(np.zeros((100, 200), np.uint8), "ab", (100, 50), 0, -1.0, 255)
    ys, xs = np.nonzero(turned)
    assert xs.max() <= 101 and ys.min() >= 49


def test_bad_arguments_raise_as_cv2():
    img = np.zeros((50, 100, 3), np.uint8)
    good = dict(text="ab", org=(5, 30), fontFace=0, fontScale=1.0, color=(255, 0, 0))
    cases = [dict(text=5), dict(text=None), dict(text=["a"]), dict(text=b"ab"), dict(text=bytearray(b"ab")),
             dict(org=(1.5, 2)), dict(org=(1, 2, 3)),
             dict(org="ab"), dict(fontFace=8), dict(fontFace=15), dict(fontFace=24), dict(fontFace=-1),
             dict(fontFace=32), dict(fontFace=1.0), dict(fontFace=True), dict(fontFace=2**40),
             dict(fontScale="1"), dict(fontScale=True), dict(color="red"), dict(color=(1, 2, 3, 4, 5)),
             dict(thickness=1.5), dict(thickness=2**40), dict(lineType=2.0), dict(bottomLeftOrigin="x"),
             dict(fontFace=cv2.FONT_HERSHEY_PLAIN | cv2.FONT_ITALIC), dict(fontFace=23)]
    for change in cases:
        args = {**good, **change}
        _raises_as_cv2("putText", img.copy(), **args)
    for image in (np.zeros((10, 40), np.float32), np.zeros((10, 40), np.float64), np.zeros((10, 40), np.int16),
                  np.zeros((10, 40), np.uint16), np.zeros((10, 40), np.int8), np.zeros((10, 40), bool),
                  np.zeros((10, 40, 2), np.uint8), np.zeros((10, 40, 5), np.uint8), np.zeros((0, 40), np.uint8),
                  np.zeros((10, 40, 3), np.uint8)[:, ::2], [[0, 0]], "img"):
        _raises_as_cv2("putText", image, **good)
    assert mcv.putText(None, **good) is None
    for change in (dict(text=5), dict(text=None), dict(fontFace=8), dict(fontFace=1.0), dict(fontScale="x"),
                   dict(thickness=1.5), dict(text=bytearray(b"ab"))):
        args = {**dict(text="ab", fontFace=0, fontScale=1.0, thickness=1), **change}
        _raises_as_cv2("getTextSize", **args)
