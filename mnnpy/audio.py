"""Audio features and WAV files with MNN's ``MNN.audio`` names, argument orders and defaults.

Every feature is a few graph ops on a 1-D float waveform Var: frames are gathered with one
index matrix, each frame's windowed real DFT is one matrix product with a cosine/sine matrix
(the window, and for ``fbank`` the DC removal and pre-emphasis, are folded into that matrix,
built once per size on the host in float64), and mel filter banks are one more small matrix
product. Results are Vars.

Where MNN 3.6.1 is wrong, this module follows the documented meaning instead (listed in
docs/audio.md): ``norm`` of ``melscale_fbanks`` divides by the band width only when asked,
``win_length < n_fft`` centres the window in the frame (as torch.stft does), ``fbank`` frames
and windows as Kaldi does, ``whisper_fbank`` returns Whisper's ``[1, n_mels, frames]`` features,
and bad input raises a Python exception instead of returning None.
"""

import functools as _functools
import os as _os
import struct as _struct
import wave as _wave

import numpy as _np

from . import expr as _F
from ._core import Var as _Var

__all__ = ["HAMMING", "HANNING", "POVEY", "RECTANGULAR", "BLACKMAN", "load", "save",
           "hamming_window", "hann_window", "melscale_fbanks", "spectrogram", "mel_spectrogram",
           "fbank", "whisper_fbank"]

# Window kinds, numbered as MNN's AUDIO::WINDOW_TYPE.
HAMMING, HANNING, POVEY, RECTANGULAR, BLACKMAN = 0, 1, 2, 3, 4
_WINDOW_NAMES = {HAMMING: "hamming", HANNING: "hann", POVEY: "povey", RECTANGULAR: "rectangular",
                 BLACKMAN: "blackman"}
# MNN's PadValueMode numbers (CONSTANT, REFLECT, SYMMETRIC) and expr's names for them.
_PAD_MODES = {0: "CONSTANT", 1: "REFLECT", 2: "SYMMETRIC"}
_FLOAT_EPSILON = float(_np.finfo(_np.float32).eps)  # Kaldi's log floor


# ----------------------------------------------------------------------------- argument checks

def _positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, _np.integer)) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _waveform(waveform, name="waveform"):
    """The 1-D float32 Var of a waveform given as a Var, an array or a list."""
    if not isinstance(waveform, _Var):
        array = _np.asarray(waveform)
        if array.dtype.kind not in "iuf":
            raise TypeError(f"{name} must be a Var or an array of numbers, got {array.dtype}")
        waveform = _F.const(array.astype(_np.float32), list(array.shape))
    if len(waveform.shape) != 1:
        raise ValueError(f"{name} must be 1-D (samples), got shape {tuple(waveform.shape)}")
    if waveform.dtype != _np.float32:
        waveform = _F.cast(waveform, _np.float32)
    return waveform


def _pad_mode_name(pad_mode):
    if isinstance(pad_mode, (int, _np.integer)) and not isinstance(pad_mode, bool):
        if int(pad_mode) not in _PAD_MODES:
            raise ValueError(f"pad_mode must be 0 (CONSTANT), 1 (REFLECT) or 2 (SYMMETRIC), "
                             f"got {pad_mode!r}")
        return _PAD_MODES[int(pad_mode)]
    name = str(pad_mode).upper()
    if name not in _PAD_MODES.values():
        raise ValueError(f"pad_mode must be CONSTANT, REFLECT or SYMMETRIC, got {pad_mode!r}")
    return name


# ----------------------------------------------------------------------------- windows

def _window_values(kind, length, periodic=False, alpha=0.54, beta=0.46):
    """Window of ``length`` samples in float64; periodic windows have period ``length``."""
    if kind not in _WINDOW_NAMES:
        raise ValueError(f"window_type must be one of {sorted(_WINDOW_NAMES)} "
                         f"(HAMMING, HANNING, POVEY, RECTANGULAR, BLACKMAN), got {kind!r}")
    if kind == RECTANGULAR or length == 1:
        return _np.ones(length)  # one sample: [1], torch's convention, rather than 0 / 0
    period = length if periodic else length - 1
    phase = 2 * _np.pi * _np.arange(length) / period
    if kind == HAMMING:
        return alpha - beta * _np.cos(phase)
    hann = 0.5 - 0.5 * _np.cos(phase)
    if kind == HANNING:
        return hann
    if kind == POVEY:
        return hann ** 0.85
    return 0.42 - 0.5 * _np.cos(phase) + 0.08 * _np.cos(2 * phase)


def hamming_window(window_size, periodic=False, alpha=0.54, beta=0.46):
    """``alpha - beta * cos(2 pi n / N)``, N = window_size (periodic) or window_size - 1."""
    size = _positive_int(window_size, "window_size")
    values = _window_values(HAMMING, size, bool(periodic), float(alpha), float(beta))
    return _F.const(values.astype(_np.float32), [size])


def hann_window(window_size, periodic=False):
    """``0.5 - 0.5 * cos(2 pi n / N)``, N = window_size (periodic) or window_size - 1."""
    size = _positive_int(window_size, "window_size")
    return _F.const(_window_values(HANNING, size, bool(periodic)).astype(_np.float32), [size])


# ----------------------------------------------------------------------------- mel scales

def _hz_to_mel(freq, htk):
    freq = _np.asarray(freq, dtype=_np.float64)
    if htk:
        return 2595.0 * _np.log10(1.0 + freq / 700.0)
    # Slaney: linear below 1 kHz (200/3 Hz per mel), logarithmic above.
    linear = freq / (200.0 / 3.0)
    logarithmic = 15.0 + _np.log(_np.maximum(freq, 1e-30) / 1000.0) / (_np.log(6.4) / 27.0)
    return _np.where(freq >= 1000.0, logarithmic, linear)


def _mel_to_hz(mel, htk):
    mel = _np.asarray(mel, dtype=_np.float64)
    if htk:
        return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)
    linear = mel * (200.0 / 3.0)
    logarithmic = 1000.0 * _np.exp((_np.log(6.4) / 27.0) * (mel - 15.0))
    return _np.where(mel >= 15.0, logarithmic, linear)


@_functools.lru_cache(maxsize=32)
def _mel_banks(n_mels, n_fft, sample_rate, htk, norm, f_min, f_max):
    """Triangular filters [n_mels, n_fft // 2 + 1] in float64, linear in Hz between mel points
    (torchaudio's melscale_fbanks); ``norm`` divides each by half its width in Hz (Slaney)."""
    nyquist = sample_rate / 2.0
    f_max = nyquist if f_max <= 0 else f_max
    if not 0 <= f_min < f_max:
        raise ValueError(f"need 0 <= f_min < f_max, got f_min={f_min}, f_max={f_max}")
    bin_freqs = _np.linspace(0.0, nyquist, n_fft // 2 + 1)
    mel_points = _np.linspace(_hz_to_mel(f_min, htk), _hz_to_mel(f_max, htk), n_mels + 2)
    hz_points = _mel_to_hz(mel_points, htk)
    left, center, right = hz_points[:-2, None], hz_points[1:-1, None], hz_points[2:, None]
    rising = (bin_freqs - left) / (center - left)
    falling = (right - bin_freqs) / (right - center)
    banks = _np.maximum(0.0, _np.minimum(rising, falling))
    if norm:
        banks *= 2.0 / (right - left)
    return banks


def melscale_fbanks(n_mels, n_fft, sample_rate=16000, htk=True, norm=False, f_min=0.0, f_max=0.0):
    """Mel filter bank [n_mels, n_fft // 2 + 1]: HTK (``htk=True``) or Slaney mel scale;
    ``norm=True`` divides each triangle by half its width in Hz; ``f_max <= 0`` means
    ``sample_rate / 2``."""
    banks = _mel_banks(_positive_int(n_mels, "n_mels"), _positive_int(n_fft, "n_fft"),
                       _positive_int(sample_rate, "sample_rate"), bool(htk), bool(norm),
                       float(f_min), float(f_max))
    return _F.const(banks.astype(_np.float32), list(banks.shape))


# ----------------------------------------------------------------------------- DFT by GEMM

def _dft_of_operator(n_fft, operator):
    """[frame_length, 2 * (n_fft // 2 + 1)] float32: ``frame @ M`` gives the real parts then the
    imaginary parts of the real DFT of ``operator @ frame`` zero-padded to n_fft."""
    n_freqs = n_fft // 2 + 1
    # (n * k) mod n_fft keeps the angles exact for any size.
    angles = 2 * _np.pi * (_np.outer(_np.arange(n_fft), _np.arange(n_freqs)) % n_fft) / n_fft
    basis = _np.concatenate([_np.cos(angles), -_np.sin(angles)], axis=1)
    return (operator.T @ basis[: operator.shape[0]]).astype(_np.float32)


@_functools.lru_cache(maxsize=32)
def _windowed_dft(n_fft, window_type, win_length, periodic):
    """DFT matrix of frames times a window of win_length centred in n_fft samples."""
    window = _np.zeros(n_fft)
    offset = (n_fft - win_length) // 2
    window[offset: offset + win_length] = _window_values(window_type, win_length, periodic)
    return _dft_of_operator(n_fft, _np.diag(window)), float(_np.sum(window ** 2))


def _frames(waveform, frame_length, hop_length):
    """[frames, frame_length] Var of the frames starting every hop_length samples."""
    n_samples = waveform.shape[0]
    if n_samples < frame_length:
        raise ValueError(f"the waveform has {n_samples} samples, fewer than one frame "
                         f"({frame_length})")
    n_frames = 1 + (n_samples - frame_length) // hop_length
    starts = _np.arange(n_frames, dtype=_np.int32)[:, None] * hop_length
    return _F.gather(waveform, starts + _np.arange(frame_length, dtype=_np.int32), 0)


def _power_spectrum(frames, dft):
    """|DFT|^2 [frames, n_freqs] of the frames through a _windowed_dft / _kaldi_dft matrix."""
    n_freqs = dft.shape[1] // 2
    parts = _F.matmul(frames, _F.const(dft, list(dft.shape)))
    squared = _F.square(parts)
    return _F.reshape(_F.reduce_sum(_F.reshape(squared, [-1, 2, n_freqs]), [1]), [-1, n_freqs])


def spectrogram(waveform, n_fft=400, hop_length=0, win_length=0, window_type=HANNING, pad_left=0,
                pad_right=0, center=False, normalized=False, pad_mode=1, power=2.0):
    """|STFT|^power [frames, n_fft // 2 + 1] of a 1-D waveform (torch.stft semantics).

    ``hop_length`` 0 means n_fft // 2, ``win_length`` 0 means n_fft (a shorter window is
    centred in the frame); windows are symmetric (``periodic=False``); ``pad_left`` /
    ``pad_right`` zeros are added first, then ``center`` pads n_fft // 2 on each side with
    ``pad_mode`` (0 CONSTANT, 1 REFLECT, 2 SYMMETRIC); ``normalized`` divides the STFT by the
    window's L2 norm."""
    signal = _waveform(waveform)
    n_fft = _positive_int(n_fft, "n_fft")
    hop_length = _positive_int(hop_length, "hop_length") if hop_length else n_fft // 2
    win_length = _positive_int(win_length, "win_length") if win_length else n_fft
    if win_length > n_fft:
        raise ValueError(f"win_length ({win_length}) must not exceed n_fft ({n_fft})")
    if power <= 0:
        raise ValueError(f"power must be positive, got {power!r}")
    if pad_left < 0 or pad_right < 0:
        raise ValueError(f"pad_left and pad_right must be >= 0, got {pad_left}, {pad_right}")
    if pad_left or pad_right:
        signal = _F.pad(signal, [[int(pad_left), int(pad_right)]], "CONSTANT")
    if center:
        mode = _pad_mode_name(pad_mode)
        if mode != "CONSTANT" and signal.shape[0] <= n_fft // 2:
            raise ValueError(f"{mode} padding for center=True needs more than n_fft // 2 = "
                             f"{n_fft // 2} samples, got {signal.shape[0]}")
        signal = _F.pad(signal, [[n_fft // 2, n_fft // 2]], mode)
    dft, window_energy = _windowed_dft(n_fft, window_type, win_length, False)
    spectrum = _power_spectrum(_frames(signal, n_fft, hop_length), dft)
    if normalized:
        spectrum = spectrum * _F.scalar(1.0 / window_energy)
    if power == 2:
        return spectrum
    if power == 1:
        return _F.sqrt(spectrum)
    return _F.pow(spectrum, _F.scalar(float(power) / 2.0))


def mel_spectrogram(waveform, n_mels=128, n_fft=400, sample_rate=16000, htk=True, norm=False,
                    f_min=0.0, f_max=0.0, hop_length=0, win_length=0, window_type=HANNING,
                    pad_left=0, pad_right=0, center=False, normalized=False, pad_mode=1,
                    power=2.0):
    """``spectrogram(...) @ melscale_fbanks(...).T``: [frames, n_mels]."""
    spectrum = spectrogram(waveform, n_fft, hop_length, win_length, window_type, pad_left,
                           pad_right, center, normalized, pad_mode, power)
    banks = melscale_fbanks(n_mels, n_fft, sample_rate, htk, norm, f_min, f_max)
    return _F.matmul(spectrum, banks, False, True)


# ----------------------------------------------------------------------------- Kaldi / Whisper

@_functools.lru_cache(maxsize=32)
def _kaldi_mel_banks(n_mels, padded_n_fft, sample_rate, low_freq, high_freq):
    """Kaldi's filters [n_mels, padded_n_fft // 2 + 1]: triangles in the mel domain
    (1127 ln(1 + f / 700)); the Nyquist bin gets no weight, as in Kaldi."""
    mel = lambda f: 1127.0 * _np.log(1.0 + _np.asarray(f, dtype=_np.float64) / 700.0)  # noqa: E731
    mel_low, mel_high = mel(low_freq), mel(high_freq)
    delta = (mel_high - mel_low) / (n_mels + 1)
    left = mel_low + delta * _np.arange(n_mels)[:, None]
    bin_mels = mel(_np.arange(padded_n_fft // 2) * (sample_rate / padded_n_fft))
    rising = (bin_mels - left) / delta
    falling = (left + 2 * delta - bin_mels) / delta
    banks = _np.maximum(0.0, _np.minimum(rising, falling))
    return _np.pad(banks, [(0, 0), (0, 1)])


@_functools.lru_cache(maxsize=32)
def _kaldi_dft(frame_length, padded_n_fft, preemphasis):
    """DFT matrix of Kaldi's per-frame linear steps composed: remove the mean, pre-emphasise
    (y[j] = x[j] - p x[j-1], y[0] = x[0] - p x[0]), multiply by the Povey window."""
    remove_mean = _np.eye(frame_length) - 1.0 / frame_length
    emphasis = _np.eye(frame_length) - preemphasis * _np.eye(frame_length, k=-1)
    emphasis[0, 0] -= preemphasis
    operator = _np.diag(_window_values(POVEY, frame_length)) @ emphasis @ remove_mean
    return _dft_of_operator(padded_n_fft, operator)


def fbank(waveform, sampling_rate=16000, n_mels=80, n_fft=400, hop_length=160, dither=0.0,
          preemphasis=0.97):
    """Kaldi's log mel filter-bank energies [frames, n_mels] (torchaudio.compliance.kaldi.fbank
    with frames of ``n_fft`` samples every ``hop_length``, snip_edges, dither, DC removal,
    pre-emphasis, Povey window, zero-padding to a power of two, power spectrum, mel filters
    from 20 Hz to Nyquist, log floored at float32 epsilon). Samples are used as given (Kaldi
    tools usually pass 16-bit integer values rather than [-1, 1] floats)."""
    signal = _waveform(waveform)
    sampling_rate = _positive_int(sampling_rate, "sampling_rate")
    n_mels = _positive_int(n_mels, "n_mels")
    frame_length = _positive_int(n_fft, "n_fft")
    hop_length = _positive_int(hop_length, "hop_length")
    if dither < 0:
        raise ValueError(f"dither must be >= 0, got {dither!r}")
    frames = _frames(signal, frame_length, hop_length)
    if dither > 0:
        noise = _np.random.default_rng().uniform(-dither, dither, frames.shape)
        frames = frames + _F.const(noise.astype(_np.float32), list(frames.shape))
    padded = 1 << (frame_length - 1).bit_length()
    dft = _kaldi_dft(frame_length, padded, float(preemphasis))
    banks = _kaldi_mel_banks(n_mels, padded, sampling_rate, 20.0, sampling_rate / 2.0)
    energies = _F.matmul(_power_spectrum(frames, dft),
                         _F.const(banks.astype(_np.float32), list(banks.shape)), False, True)
    return _F.log(_F.maximum(energies, _F.scalar(_FLOAT_EPSILON)))


def whisper_fbank(waveform, sample_rate=16000, n_mels=128, n_fft=400, hop_length=160,
                  chunk_len=30):
    """Whisper's log-mel input [1, n_mels, frames]: zeros appended up to ``chunk_len`` seconds
    (0: none), centred reflect-padded STFT with a periodic Hann window, power spectrum, Slaney
    mel filters (normalised), last frame dropped, log10 floored at 1e-10, values below
    max - 8 raised to it, then (x + 4) / 4."""
    signal = _waveform(waveform)
    sample_rate = _positive_int(sample_rate, "sample_rate")
    n_fft = _positive_int(n_fft, "n_fft")
    hop_length = _positive_int(hop_length, "hop_length")
    if chunk_len < 0:
        raise ValueError(f"chunk_len must be >= 0 seconds, got {chunk_len!r}")
    missing = int(chunk_len) * sample_rate - signal.shape[0]
    if missing > 0:
        signal = _F.pad(signal, [[0, missing]], "CONSTANT")
    if signal.shape[0] <= n_fft // 2:
        raise ValueError(f"whisper_fbank needs more than n_fft // 2 = {n_fft // 2} samples, "
                         f"got {signal.shape[0]}")
    signal = _F.pad(signal, [[n_fft // 2, n_fft // 2]], "REFLECT")
    dft, _ = _windowed_dft(n_fft, HANNING, n_fft, True)
    spectrum = _power_spectrum(_frames(signal, n_fft, hop_length), dft)
    banks = _mel_banks(_positive_int(n_mels, "n_mels"), n_fft, sample_rate, False, True, 0.0, 0.0)
    # [n_mels, frames] directly: banks @ spectrum^T, without the last frame.
    mel = _F.matmul(_F.const(banks.astype(_np.float32), list(banks.shape)), spectrum, False, True)
    mel = mel[:, :-1]
    log_mel = _F.log10(_F.maximum(mel, _F.scalar(1e-10)))
    log_mel = _F.maximum(log_mel, _F.reduce_max(log_mel) - _F.scalar(8.0))
    return _F.expand_dims((log_mel + _F.scalar(4.0)) / _F.scalar(4.0), 0)


# ----------------------------------------------------------------------------- WAV files

_PCM, _IEEE_FLOAT, _EXTENSIBLE = 1, 3, 0xFFFE


def _read_wav(filename):
    """(samples of the first channel as float32 in [-1, 1], sample rate) of a RIFF/WAVE file:
    PCM 8/16/24/32-bit or IEEE float 32/64-bit."""
    if not _os.path.isfile(filename):
        raise FileNotFoundError(f"no such audio file: '{filename}'")
    with open(filename, "rb") as file:
        content = file.read()
    if len(content) < 12 or content[:4] != b"RIFF" or content[8:12] != b"WAVE":
        raise ValueError(f"'{filename}' is not a WAV file (no RIFF/WAVE header)")
    fmt, data, position = None, None, 12
    while position + 8 <= len(content):
        chunk_id, chunk_size = _struct.unpack_from("<4sI", content, position)
        body = content[position + 8: position + 8 + chunk_size]
        if chunk_id == b"fmt ":
            if len(body) < 16:
                raise ValueError(f"'{filename}': damaged WAV file (fmt chunk of {len(body)} bytes)")
            fmt = _struct.unpack_from("<HHIIHH", body)
            if fmt[0] == _EXTENSIBLE and len(body) >= 26:
                fmt = (_struct.unpack_from("<H", body, 24)[0],) + fmt[1:]
        elif chunk_id == b"data":
            data = body
            break
        position += 8 + chunk_size + (chunk_size & 1)  # chunks are padded to even sizes
    if fmt is None or data is None:
        raise ValueError(f"'{filename}': damaged WAV file (missing "
                         f"{'fmt' if fmt is None else 'data'} chunk)")
    audio_format, channels, sample_rate, _, block_align, bits = fmt
    kinds = {(_PCM, 8): "u1", (_PCM, 16): "<i2", (_PCM, 32): "<i4", (_IEEE_FLOAT, 32): "<f4",
             (_IEEE_FLOAT, 64): "<f8"}
    if (audio_format, bits) not in kinds and (audio_format, bits) != (_PCM, 24):
        raise ValueError(f"'{filename}': unsupported WAV encoding (format {audio_format}, {bits} "
                         f"bits); supported: PCM 8/16/24/32-bit and float 32/64-bit")
    if channels < 1 or sample_rate < 1 or block_align != channels * bits // 8:
        raise ValueError(f"'{filename}': damaged WAV file (channels {channels}, sample rate "
                         f"{sample_rate}, block align {block_align}, {bits} bits)")
    n_frames = len(data) // block_align
    frames = _np.frombuffer(data, dtype=_np.uint8, count=n_frames * block_align)
    first_channel = frames.reshape(n_frames, block_align)[:, : bits // 8]
    if bits == 24:
        # Sign-extend the three little-endian bytes into the top of an int32.
        padded = _np.zeros((n_frames, 4), dtype=_np.uint8)
        padded[:, 1:] = first_channel
        return padded.view("<i4")[:, 0].astype(_np.float64) / 2.0 ** 31, sample_rate
    values = _np.ascontiguousarray(first_channel).view(kinds[audio_format, bits])[:, 0]
    if audio_format == _IEEE_FLOAT:
        return values.astype(_np.float64), sample_rate
    if bits == 8:
        return values / 128.0 - 1.0, sample_rate
    return values / float(2 ** (bits - 1)), sample_rate


def _resample_linear(samples, rate, new_rate):
    """Linear interpolation at i * rate / new_rate, in float32 as MNN computes it (so results
    agree bit for bit); positions past the end take the last sample."""
    ratio = _np.float32(new_rate) / _np.float32(rate)
    positions = _np.arange(int(len(samples) * ratio), dtype=_np.float32) / ratio
    low = positions.astype(_np.int64)
    high = _np.minimum(low + 1, len(samples) - 1)
    fraction = positions - low.astype(_np.float32)
    return (_np.float32(1) - fraction) * samples[low] + fraction * samples[high]


def load(filename, sr=0, frame_offset=0, num_frames=-1):
    """Reads a WAV file: ``(Var [samples] float32, sample_rate)`` of its first channel, from
    ``frame_offset`` for ``num_frames`` samples (<= 0 or too many: to the end), linearly
    resampled to ``sr`` when ``sr > 0`` differs from the file's rate."""
    samples, sample_rate = _read_wav(_os.fspath(filename))
    total = len(samples)
    if not 0 <= frame_offset < total:
        raise ValueError(f"frame_offset {frame_offset} is out of range for {total} samples")
    if num_frames <= 0 or frame_offset + num_frames > total:
        num_frames = total - frame_offset
    samples = samples[frame_offset: frame_offset + num_frames]
    if sr and sr != sample_rate:
        if sr < 0:
            raise ValueError(f"sr must be >= 0, got {sr}")
        samples = _resample_linear(samples.astype(_np.float32), sample_rate, int(sr))
        sample_rate = int(sr)
    samples = samples.astype(_np.float32)
    return _F.const(samples, [len(samples)]), sample_rate


def save(filename, audio, sample_rate):
    """Writes ``audio`` (all its values, clipped to [-1, 1]) as a mono 16-bit PCM WAV file;
    returns True."""
    sample_rate = _positive_int(sample_rate, "sample_rate")
    values = audio.read() if isinstance(audio, _Var) else _np.asarray(audio)
    if values.dtype.kind not in "iuf":
        raise TypeError(f"audio must hold numbers, got {values.dtype}")
    # Truncation toward zero of float32 x * 32767, as MNN writes them.
    clipped = _np.clip(values.astype(_np.float32).ravel(), -1.0, 1.0)
    pcm = (clipped * _np.float32(32767)).astype("<i2")
    with _wave.open(_os.fspath(filename), "wb") as file:
        file.setnchannels(1)
        file.setsampwidth(2)
        file.setframerate(sample_rate)
        file.writeframes(pcm.tobytes())
    return True
