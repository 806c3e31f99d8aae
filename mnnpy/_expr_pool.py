"""Pooling and resize ops of MNN.expr (filled in by the pooling work)."""
__all__ = []
