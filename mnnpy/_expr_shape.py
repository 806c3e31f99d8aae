"""Shape and data-movement ops of mnnpy.expr (reshape, transpose, concat, slicing, indexing ...)."""
__all__ = []
