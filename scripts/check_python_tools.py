"""Exit 0 when the Python test tools in requirements-test.txt are importable at the pinned versions."""
import importlib
import sys

try:
    onnx = importlib.import_module("onnx")
    importlib.import_module("onnxruntime")
    importlib.import_module("numpy")
    importlib.import_module("nanobind")
    importlib.import_module("scikit_build_core")
    importlib.import_module("pytest")
except ImportError:
    sys.exit(1)
sys.exit(0 if onnx.__version__ == "1.17.0" else 1)
