"""ATen's part of minikernel: the operators, declared once (``native_functions.py``), and
their registration with the dispatcher (``registration.py``)."""
from .native_functions import NATIVE_FUNCTIONS, NativeFunction, native_function

__all__ = ["NATIVE_FUNCTIONS", "NativeFunction", "native_function"]
