"""Saving and loading Vars in mnnpy's own file format."""
__all__ = []
