"""Numba kernels: the fallback twins of the C++ kernels in csrc/, and their slow references."""
