"""mnnpy.audio (MNN.audio's names) against torch.stft / torch windows and NumPy formulas."""
import struct
import wave

import numpy as np
import pytest
import torch

import mnnpy as MNN
from mnnpy._core import Var

A = MNN.audio
UNIT = 2.0 ** -24  # float32 unit roundoff


@pytest.fixture
def rng():
    return np.random.default_rng(24)


def signal(rng, n, sample_rate=16000):
    """Noise plus a 440 Hz sine, float32."""
    t = np.arange(n) / sample_rate
    return (0.3 * rng.standard_normal(n) + 0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)


def stft_reference(x, n_fft, hop, window, center=False, pad_mode="reflect"):
    """Complex STFT [frames, n_fft // 2 + 1] in float64 by torch."""
    return torch.stft(torch.tensor(x, dtype=torch.float64), n_fft, hop, window=window.double(),
                      center=center, pad_mode=pad_mode, return_complex=True).T.numpy()


def largest_frame_l1(x, n_fft):
    """Largest sum |x| over any n_fft consecutive samples (any frame, padding adds none)."""
    return np.lib.stride_tricks.sliding_window_view(np.abs(x.astype(np.float64)), n_fft).sum(axis=1).max()


def dft_error_bound(x, n_fft, gain=1.0):
    """Error of one real or imaginary DFT part in float32: ~n_fft * u * sum|x| (the GEMM's
    accumulation over a frame, each term also carrying a matrix entry rounded once),
    ``gain`` the largest weight applied to a sample (window, pre-emphasis)."""
    return 2 * n_fft * UNIT * largest_frame_l1(x, n_fft) * gain


def power_error_bound(x, n_fft, window, magnitude):
    """Bound of |ours - reference| for |X|^2 = re^2 + im^2 with each part off by e."""
    dft_error = dft_error_bound(x, n_fft, float(window.abs().max()))
    return 2 * 2 * magnitude * dft_error + 2 * dft_error ** 2


def assert_within(ours, expected, bound):
    """Elementwise |ours - expected| <= bound (an array bound, unlike assert_allclose's atol)."""
    error = np.abs(np.asarray(ours, dtype=np.float64) - expected)
    worst = np.unravel_index(np.argmax(error - bound), error.shape)
    assert np.all(error <= bound), f"error {error[worst]} over its bound {np.broadcast_to(bound, error.shape)[worst]} at {worst}"


def htk_banks(n_mels, n_fft, sample_rate, f_min=0.0, f_max=None, htk=True, norm=False):
    """torchaudio's melscale_fbanks formula, transposed to [n_mels, n_freqs]."""
    f_max = sample_rate / 2 if f_max is None else f_max
    if htk:
        to_mel = lambda f: 2595 * np.log10(1 + f / 700)  # noqa: E731
        to_hz = lambda m: 700 * (10 ** (m / 2595) - 1)  # noqa: E731
    else:
        step = np.log(6.4) / 27
        to_mel = lambda f: np.where(f >= 1000, 15 + np.log(np.maximum(f, 1e-9) / 1000) / step, 3 * f / 200)  # noqa: E731
        to_hz = lambda m: np.where(m >= 15, 1000 * np.exp(step * (m - 15)), 200 * m / 3)  # noqa: E731
    all_freqs = np.linspace(0, sample_rate // 2, n_fft // 2 + 1)
    f_pts = to_hz(np.linspace(to_mel(np.float64(f_min)), to_mel(np.float64(f_max)), n_mels + 2))
    f_diff = np.diff(f_pts)
    slopes = f_pts[None, :] - all_freqs[:, None]
    down = -slopes[:, :-2] / f_diff[:-1]
    up = slopes[:, 2:] / f_diff[1:]
    banks = np.maximum(0, np.minimum(down, up))
    if norm:
        banks *= 2.0 / (f_pts[2:n_mels + 2] - f_pts[:n_mels])
    return banks.T


# ----------------------------------------------------------------------------- windows


@pytest.mark.parametrize("size", [1, 2, 7, 64, 400])
@pytest.mark.parametrize("periodic", [False, True])
def test_windows_match_torch(size, periodic):
    hann = A.hann_window(size, periodic)
    hamming = A.hamming_window(size, periodic)
    assert isinstance(hann, Var) and hann.shape == (size,)
    np.testing.assert_allclose(hann.read(), torch.hann_window(size, periodic=periodic, dtype=torch.float64).numpy(), atol=4 * UNIT)
    np.testing.assert_allclose(hamming.read(), torch.hamming_window(size, periodic=periodic, dtype=torch.float64).numpy(), atol=4 * UNIT)


def test_hamming_window_alpha_beta_and_symmetric_default():
    alpha, beta, n = 0.5, 0.5, 9
    expected = alpha - beta * np.cos(2 * np.pi * np.arange(n) / (n - 1))
    np.testing.assert_allclose(A.hamming_window(n, False, alpha, beta).read(), expected, atol=4 * UNIT)
    np.testing.assert_allclose(A.hann_window(n).read(), A.hamming_window(n, False, 0.5, 0.5).read(), atol=4 * UNIT)


# ----------------------------------------------------------------------------- mel banks


@pytest.mark.parametrize("htk", [True, False])
@pytest.mark.parametrize("norm", [False, True])
def test_melscale_fbanks_match_torchaudio_formula(htk, norm):
    ours = A.melscale_fbanks(40, 512, 22050, htk, norm, 30.0, 8000.0)
    expected = htk_banks(40, 512, 22050, 30.0, 8000.0, htk, norm)
    assert ours.shape == expected.shape == (40, 257)
    np.testing.assert_allclose(ours.read(), expected, rtol=8 * UNIT, atol=8 * UNIT * expected.max())


def test_melscale_fbanks_defaults_cover_zero_to_nyquist():
    np.testing.assert_allclose(A.melscale_fbanks(10, 64).read(), htk_banks(10, 64, 16000), atol=8 * UNIT)


# ----------------------------------------------------------------------------- spectrograms


@pytest.mark.parametrize("n_fft,hop,win_length,window_type", [
    (400, 0, 0, A.HANNING), (64, 16, 0, A.HAMMING), (512, 160, 400, A.HANNING), (63, 10, 0, A.HANNING)])
def test_spectrogram_matches_torch_stft(rng, n_fft, hop, win_length, window_type):
    x = signal(rng, 4000)
    ours = A.spectrogram(x, n_fft, hop, win_length, window_type)
    win = win_length or n_fft
    make = torch.hann_window if window_type == A.HANNING else torch.hamming_window
    window = make(win, periodic=False, dtype=torch.float64)
    # torch centres a shorter window in the frame, as mnnpy does.
    padded_window = torch.nn.functional.pad(window, ((n_fft - win) // 2, n_fft - win - (n_fft - win) // 2))
    reference = stft_reference(x, n_fft, hop or n_fft // 2, padded_window)
    power = np.abs(reference) ** 2
    assert ours.shape == power.shape
    bound = power_error_bound(x, n_fft, window, np.abs(reference))
    assert_within(ours.read(), power, bound)


@pytest.mark.parametrize("pad_mode,torch_mode", [(1, "reflect"), (0, "constant"), ("REFLECT", "reflect")])
def test_spectrogram_center_padding_normalized_and_powers(rng, pad_mode, torch_mode):
    x = signal(rng, 3000)
    window = torch.hann_window(128, periodic=False, dtype=torch.float64)
    reference = stft_reference(x, 128, 32, window, center=True, pad_mode=torch_mode)
    ours = A.spectrogram(x, 128, 32, 0, A.HANNING, 0, 0, True, False, pad_mode)
    bound = power_error_bound(x, 128, window, np.abs(reference))
    assert_within(ours.read(), np.abs(reference) ** 2, bound)
    energy = float((window ** 2).sum())
    normalized = A.spectrogram(x, 128, 32, 0, A.HANNING, 0, 0, True, True, pad_mode)
    assert_within(normalized.read(), np.abs(reference) ** 2 / energy, (bound + 2 * UNIT * np.abs(reference) ** 2) / energy)
    magnitude = A.spectrogram(x, 128, 32, 0, A.HANNING, 0, 0, True, False, pad_mode, 1.0)
    # sqrt of a power with error e: at most sqrt(e) absolute
    assert_within(magnitude.read(), np.abs(reference), np.sqrt(bound))
    cubed = A.spectrogram(x, 128, 32, 0, A.HANNING, 0, 0, True, False, pad_mode, 3.0)
    # p^1.5 with p off by b: off by ~1.5 sqrt(p) b, plus pow's own rounding
    assert_within(cubed.read(), np.abs(reference) ** 3, 1.5 * np.sqrt(np.abs(reference) ** 2 + bound) * bound + 8 * UNIT * np.abs(reference) ** 3)


def test_spectrogram_pad_left_right_are_zeros_before_framing(rng):
    x = signal(rng, 1000)
    ours = A.spectrogram(x, 64, 16, 0, A.HANNING, 1, 5)
    window = torch.hann_window(64, periodic=False, dtype=torch.float64)
    reference = stft_reference(np.pad(x, (1, 5)), 64, 16, window)
    bound = power_error_bound(x, 64, window, np.abs(reference))
    assert_within(ours.read(), np.abs(reference) ** 2, bound)


def test_sine_peaks_in_its_bin():
    sample_rate, n_fft, frequency = 16000, 400, 1000.0
    x = np.sin(2 * np.pi * frequency * np.arange(8000) / sample_rate).astype(np.float32)
    power = A.spectrogram(x, n_fft, 160).read()
    assert np.all(np.argmax(power, axis=1) == round(frequency * n_fft / sample_rate))


def test_mel_spectrogram_is_power_spectrum_times_mel_banks(rng):
    x = signal(rng, 4000)
    ours = A.mel_spectrogram(x, 40, 256, 16000, True, False, 0.0, 0.0, 128)
    window = torch.hann_window(256, periodic=False, dtype=torch.float64)
    reference = stft_reference(x, 256, 128, window)
    banks = htk_banks(40, 256, 16000)
    expected = np.abs(reference) ** 2 @ banks.T
    bound = power_error_bound(x, 256, window, np.abs(reference)) @ banks.T
    assert ours.shape == expected.shape
    assert_within(ours.read(), expected, bound + 8 * UNIT * expected)


# ----------------------------------------------------------------------------- Kaldi fbank


def kaldi_fbank_reference(x, sample_rate, n_mels, frame_length, hop, preemphasis):
    """Kaldi's compute-fbank steps in float64 with NumPy's FFT."""
    n_frames = 1 + (len(x) - frame_length) // hop
    frames = x[np.arange(n_frames)[:, None] * hop + np.arange(frame_length)].astype(np.float64)
    frames -= frames.mean(axis=1, keepdims=True)
    previous = np.concatenate([frames[:, :1], frames[:, :-1]], axis=1)
    frames = frames - preemphasis * previous
    n = np.arange(frame_length)
    frames *= (0.5 - 0.5 * np.cos(2 * np.pi * n / (frame_length - 1))) ** 0.85
    padded = 1 << (frame_length - 1).bit_length()
    power = np.abs(np.fft.rfft(frames, padded, axis=1)) ** 2
    mel = lambda f: 1127 * np.log(1 + f / 700)  # noqa: E731
    edges = np.linspace(mel(20.0), mel(sample_rate / 2), n_mels + 2)
    bin_mel = mel(np.arange(padded // 2) * sample_rate / padded)
    rising = (bin_mel[None, :] - edges[:-2, None]) / (edges[1:-1, None] - edges[:-2, None])
    falling = (edges[2:, None] - bin_mel[None, :]) / (edges[2:, None] - edges[1:-1, None])
    banks = np.maximum(0, np.minimum(rising, falling))
    energies = power[:, : padded // 2] @ banks.T
    return np.log(np.maximum(energies, np.finfo(np.float32).eps)), energies, power, banks


@pytest.mark.parametrize("n_mels,n_fft,hop,preemphasis", [(80, 400, 160, 0.97), (23, 200, 80, 0.0)])
def test_fbank_matches_kaldi_algorithm(rng, n_mels, n_fft, hop, preemphasis):
    x = (signal(rng, 6000) * 32768).astype(np.float32)  # Kaldi's int16 sample scale
    ours = A.fbank(x, 16000, n_mels, n_fft, hop, 0.0, preemphasis)
    expected, energies, power, banks = kaldi_fbank_reference(x, 16000, n_mels, n_fft, hop, preemphasis)
    assert ours.shape == expected.shape
    # log error = relative error of the energy; a bin's power error is 2 |X| e + e^2 per part,
    # e from the frame's samples weighted by up to (1 + preemphasis) (DC removal, window <= 1)
    # and the mean removed (up to twice the frame's magnitude).
    e = dft_error_bound(x, n_fft, 2 * (1 + preemphasis))
    energy_error = (2 * 2 * np.sqrt(power[:, :-1]) * e + 2 * e ** 2) @ banks.T
    assert_within(ours.read(), expected, energy_error / energies + 8 * UNIT * np.abs(expected))


def test_fbank_dither_changes_only_by_noise(rng):
    x = (signal(rng, 4000) * 32768).astype(np.float32)
    plain, dithered = A.fbank(x).read(), A.fbank(x, 16000, 80, 400, 160, 1.0).read()
    assert plain.shape == dithered.shape
    assert not np.array_equal(plain, dithered)
    np.testing.assert_allclose(dithered, plain, atol=0.05)  # noise of +-1 against ~1e4 amplitude


# ----------------------------------------------------------------------------- Whisper


def whisper_reference(x, n_mels, chunk_len, sample_rate=16000):
    """openai-whisper's log_mel_spectrogram in float64 with torch."""
    audio = torch.tensor(x, dtype=torch.float64)
    missing = chunk_len * sample_rate - len(x)
    if missing > 0:
        audio = torch.nn.functional.pad(audio, (0, missing))
    stft = torch.stft(audio, 400, 160, window=torch.hann_window(400, dtype=torch.float64), return_complex=True)
    power = stft[..., :-1].abs() ** 2
    banks = torch.tensor(htk_banks(n_mels, 400, sample_rate, htk=False, norm=True))
    mel = banks @ power
    log_spec = torch.clamp(mel, min=1e-10).log10()
    log_spec = torch.maximum(log_spec, log_spec.max() - 8.0)
    return ((log_spec + 4.0) / 4.0).numpy(), mel.numpy(), power.numpy()


@pytest.mark.parametrize("n_mels,chunk_len", [(80, 0), (128, 1)])
def test_whisper_fbank_matches_whisper(rng, n_mels, chunk_len):
    x = signal(rng, 8000)
    ours = A.whisper_fbank(x, 16000, n_mels, 400, 160, chunk_len)
    expected, mel, power = whisper_reference(x, n_mels, chunk_len)
    assert ours.shape == (1,) + expected.shape
    e = dft_error_bound(x, 400)
    banks = htk_banks(n_mels, 400, 16000, htk=False, norm=True)
    mel_error = banks @ (2 * 2 * np.sqrt(power) * e + 2 * e ** 2)
    floor = mel.max() * 1e-8  # below the max - 8 floor both are clamped (clamping never widens a gap)
    log_error = (mel_error / np.maximum(mel, floor) + mel_error.max() / mel.max()) / np.log(10)
    assert_within(ours.read()[0], expected, log_error / 4 + 8 * UNIT * np.abs(expected))


def test_whisper_fbank_default_pads_to_thirty_seconds(rng):
    ours = A.whisper_fbank(signal(rng, 16000), 16000, 80)
    assert ours.shape == (1, 80, 3000)


# ----------------------------------------------------------------------------- WAV files


def write_wav(path, frames_bytes, channels, sample_width, sample_rate):
    with wave.open(str(path), "wb") as f:
        f.setnchannels(channels)
        f.setsampwidth(sample_width)
        f.setframerate(sample_rate)
        f.writeframes(frames_bytes)


def test_save_writes_16_bit_pcm_read_back_by_wave(tmp_path, rng):
    x = (rng.uniform(-1.2, 1.2, 1000)).astype(np.float32)
    path = tmp_path / "out.wav"
    assert A.save(str(path), MNN.expr.const(x, [1000]), 22050) is True
    with wave.open(str(path), "rb") as f:
        assert (f.getnchannels(), f.getsampwidth(), f.getframerate(), f.getnframes()) == (1, 2, 22050, 1000)
        pcm = np.frombuffer(f.readframes(1000), dtype="<i2")
    np.testing.assert_array_equal(pcm, np.trunc(np.clip(x, -1, 1) * np.float32(32767)).astype(np.int16))
    loaded, rate = A.load(str(path))
    assert isinstance(loaded, Var) and rate == 22050
    np.testing.assert_array_equal(loaded.read(), pcm / np.float32(32768))


@pytest.mark.parametrize("width,dtype,scale,offset", [(1, np.uint8, 128.0, -1.0), (2, np.int16, 32768.0, 0.0), (4, np.int32, 2.0 ** 31, 0.0)])
def test_load_pcm_widths_first_channel(tmp_path, rng, width, dtype, scale, offset):
    info = np.iinfo(dtype)
    data = rng.integers(info.min, info.max, (500, 2), endpoint=True).astype(dtype)
    path = tmp_path / "in.wav"
    write_wav(path, data.astype(data.dtype.newbyteorder("<")).tobytes(), 2, width, 8000)
    loaded, rate = A.load(path)
    assert rate == 8000
    np.testing.assert_allclose(loaded.read(), data[:, 0] / scale + offset, rtol=UNIT * 2)


def test_load_float32_wav_offset_count_and_resample(tmp_path, rng):
    x = rng.uniform(-1, 1, 1000).astype("<f4")
    header = struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", 36 + x.nbytes, b"WAVE", b"fmt ", 16, 3, 1, 16000, 64000, 4, 32, b"data", x.nbytes)
    path = tmp_path / "float.wav"
    path.write_bytes(header + x.tobytes())
    np.testing.assert_array_equal(A.load(path)[0].read(), x)
    np.testing.assert_array_equal(A.load(path, 0, 100, 50)[0].read(), x[100:150])
    np.testing.assert_array_equal(A.load(path, 0, 900, 500)[0].read(), x[900:])
    resampled, rate = A.load(path, 8000)
    positions = np.arange(500) * 2.0  # 16 kHz -> 8 kHz: every other sample, interpolation exact
    assert rate == 8000
    np.testing.assert_array_equal(resampled.read(), x[positions.astype(int)])
    up, _ = A.load(path, 32000)
    np.testing.assert_allclose(up.read()[1:-2:2], (x[:-1] + x[1:])[: len(up.read()[1:-2:2])] / 2, atol=2 * UNIT)


def test_load_rejects_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such audio file"):
        A.load(tmp_path / "missing.wav")
    (tmp_path / "text.wav").write_bytes(b"hello, this is not a wave file")
    with pytest.raises(ValueError, match="not a WAV file"):
        A.load(tmp_path / "text.wav")
    (tmp_path / "cut.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00")
    with pytest.raises(ValueError, match="damaged"):
        A.load(tmp_path / "cut.wav")
    adpcm = struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", 40, b"WAVE", b"fmt ", 16, 2, 1, 8000, 4000, 1, 4, b"data", 4) + b"\0" * 4
    (tmp_path / "adpcm.wav").write_bytes(adpcm)
    with pytest.raises(ValueError, match="unsupported WAV encoding"):
        A.load(tmp_path / "adpcm.wav")
    write_wav(tmp_path / "ok.wav", b"\0\0" * 10, 1, 2, 8000)
    with pytest.raises(ValueError, match="frame_offset"):
        A.load(tmp_path / "ok.wav", 0, 10)


# ----------------------------------------------------------------------------- errors, access


def test_bad_arguments_raise_clear_errors(rng):
    x = signal(rng, 1000)
    with pytest.raises(ValueError, match="1-D"):
        A.spectrogram(x.reshape(10, 100))
    with pytest.raises(ValueError, match="fewer than one frame"):
        A.spectrogram(x[:100])
    with pytest.raises(ValueError, match="window_type"):
        A.spectrogram(x, 64, 16, 0, 9)
    with pytest.raises(ValueError, match="pad_mode"):
        A.spectrogram(x, 64, 16, 0, 1, 0, 0, True, False, 7)
    with pytest.raises(ValueError, match="win_length"):
        A.spectrogram(x, 64, 16, 128)
    with pytest.raises(ValueError, match="n_mels"):
        A.melscale_fbanks(0, 64)
    with pytest.raises(ValueError, match="f_min"):
        A.melscale_fbanks(10, 64, 16000, True, False, 9000.0)
    with pytest.raises(TypeError, match="Var or an array"):
        A.fbank(np.array(["a", "b"]))


def test_inputs_are_not_modified(rng):
    x = signal(rng, 2000)
    copy = x.copy()
    A.fbank(x).read()
    A.whisper_fbank(x, 16000, 80, 400, 160, 0).read()
    np.testing.assert_array_equal(x, copy)


def test_audio_is_a_lazy_submodule_of_mnnpy():
    assert MNN.audio is __import__("mnnpy.audio").audio
    assert "audio" in dir(MNN)


def test_import_mnnpy_does_not_load_audio_until_used():
    import subprocess
    import sys
    from helpers import python_env
    code = ("import sys, mnnpy as MNN\n"
            "assert 'mnnpy.audio' not in sys.modules\n"
            "assert MNN.audio.hann_window is sys.modules['mnnpy.audio'].hann_window\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=python_env())
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_load_24_bit_pcm(tmp_path, rng):
    values = rng.integers(-2 ** 23, 2 ** 23, 400)
    packed = (values.astype("<i4").view(np.uint8).reshape(-1, 4)[:, :3]).tobytes()  # little-endian low 3 bytes
    write_wav(tmp_path / "s24.wav", np.frombuffer(packed, dtype=np.uint8), 1, 3, 48000)
    loaded, rate = A.load(tmp_path / "s24.wav")
    assert rate == 48000
    np.testing.assert_array_equal(loaded.read(), (values / 2.0 ** 23).astype(np.float32))
