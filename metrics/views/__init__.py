"""Researcher pages of the metrics app: jobs.py (values, computing, exports); report.py (analysis)."""
