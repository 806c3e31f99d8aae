"""Matrix products of mnnpy.expr."""
__all__ = []
