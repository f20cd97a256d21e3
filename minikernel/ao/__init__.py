"""Chapter 10: architecture optimization (``torch.ao``): quantization and fusion."""
from . import quantization

__all__ = ["quantization"]
