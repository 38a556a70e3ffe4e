"""Rendering without a build: code regions and the provenance table, as Markdown."""

from __future__ import annotations

from pathlib import Path

from lessonkit.evidence.sets import load_evidence_set
from lessonkit.pages.marks import Marks, strip
from lessonkit.pages.regions import Region
from lessonkit.pages.render import render_provenance, render_region


def test_region_is_dedented_and_numbered_with_the_file_lines():
    region = Region("demo/demo.cu", "body", 4, 6, "        if (i < n) {\n            a[i] += 1.0f;\n        }")
    assert strip(render_region(region, [5], Marks())) == ("\n\n" 
        '``` {.cuda .lk-region linenums="4" title="demo.cu, lines 4\u20136 (body)" hl_lines="2"}\n'
        "if (i < n) {\n"
        "    a[i] += 1.0f;\n"
        "}\n"
        "```\n\n")


def test_region_blank_lines_do_not_stop_the_dedent():
    region = Region("demo/run.py", "main", 10, 12, "    x = 1\n\n    y = 2")
    assert strip(render_region(region, [], Marks())) == ("\n\n" 
        '``` {.python .lk-region linenums="10" title="run.py, lines 10\u201312 (main)"}\n'
        "x = 1\n\n"
        "y = 2\n"
        "```\n\n")


def test_region_fence_outgrows_backticks_inside():
    region = Region("demo/notes.sh", "doc", 1, 1, "  echo '````'")
    assert strip(render_region(region, [], Marks())) == ("\n\n" 
        '````` {.bash .lk-region linenums="1" title="notes.sh, lines 1\u20131 (doc)"}\n'
        "echo '````'\n"
        "`````\n\n")


def test_provenance_table_names_both_columns_and_stays_out_of_the_search(demo_repo: Path):
    """The provenance is finished HTML for a slot, inside an element Material's search leaves out (a GPU's
    UUID and clocks are nobody's search, and its sessions' rows grow with every session)."""
    slots: list[str] = []
    placeholder = render_provenance(load_evidence_set(demo_repo, "demo"), Marks(), lambda block: slots.append(block) or "SLOT")
    assert placeholder == "SLOT" and len(slots) == 1
    block = strip(slots[0])
    assert block.startswith('<div class="lk-provenance" data-search-exclude>\n<table>\n'
                            "<thead><tr><th>recorded with</th><th>value</th></tr></thead>")
    assert ('<tr><td>GPU</td><td><span class="lk-v" data-lk-why="generated from the provenance of set demo: the field '
            'gpu, as its manifest records it">NVIDIA H200</span></td></tr>') in block
    assert block.count("<div") == 1  # a nested div would end Material's exclusion early
