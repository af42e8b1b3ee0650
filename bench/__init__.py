"""Benchmark suite for sessiontree: a deterministic generator of realistic pi sessions and a runner.

``bench/run.py`` is the one command; nothing in the library imports from here.
"""
