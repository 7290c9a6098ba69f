"""The compiled part of editlab: metrics/text/_lz77.c (everything else is configured in pyproject.toml).

optional=True: without a working C compiler the install still succeeds, and metrics.text.compression takes its
pure-Python path with a warning.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("metrics.text._lz77", sources=["metrics/text/_lz77.c"], optional=True)])
