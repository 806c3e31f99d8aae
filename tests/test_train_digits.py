"""The digits example trains its CNN to at least 97% test accuracy (scikit-learn's digits,
seeded split; accuracy is a fraction of the 450 test images)."""
import os
import sys

import pytest

pytest.importorskip("sklearn", reason="scikit-learn provides the digits data set")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))

import train_digits  # noqa: E402


def test_train_digits_reaches_97_percent():
    model, history, accuracy = train_digits.train(progress=False, verbose=False)
    assert accuracy >= 0.97
    assert len(history["loss"]) == 12 and history["loss"][-1] < history["loss"][0]
    assert history["val_accuracy"][-1] == pytest.approx(accuracy)
