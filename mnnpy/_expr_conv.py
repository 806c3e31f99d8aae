"""Convolution ops of MNN.expr (filled in by the convolution work)."""
__all__ = []
