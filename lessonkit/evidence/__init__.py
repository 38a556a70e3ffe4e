"""The evidence flow: a lesson's runs.toml (spec), the refresh that runs it on a GPU machine and
records transcripts with a manifest, the transcript parsers, and the evidence sets read back.

Layer 2 of 5 (base < evidence < pages < site < cli): imports only lessonkit's base modules
and itself; tests/test_layout.py holds every module to its layer.
"""
