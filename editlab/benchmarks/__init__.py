"""Benchmark scripts: python -m editlab.benchmarks.<name>."""
