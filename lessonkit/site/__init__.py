"""The site flow: every page and evidence set checked together (check), its results kept on
disk (sitecache), the engine's configuration (config), the built HTML verified (verify) and
the Markdown extension for engines without hooks (mdext).

Layer 4 of 5 (base < evidence < pages < site < cli); tests/test_layout.py holds every module
to its layer.
"""
