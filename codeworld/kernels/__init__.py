"""Numba kernels: the fallback twins of the C++ kernels in csrc/, and their slow references."""

__all__: list[str] = []  # nothing public here: the kernels serve the planners and the model worker
