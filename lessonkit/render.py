"""Markdown for what a page pulls in: code regions, transcripts, provenance, commands.

Everything here is plain Markdown for Python-Markdown with pymdownx.superfences,
pymdownx.highlight and pymdownx.details; values from files are escaped.
"""

from __future__ import annotations

import html
import re

from lessonkit.evidence import EvidenceSet, TranscriptEntry
from lessonkit.regions import Region

_LANGUAGES = {".cu": "cuda", ".cuh": "cuda", ".py": "python", ".cpp": "cpp", ".h": "cpp",
              ".sh": "bash", ".toml": "toml"}
_PROVENANCE_ORDER = (
    ("gpu", "GPU"), ("compute_capability", "compute capability"), ("driver", "driver"),
    ("cuda_driver_api", "CUDA (driver API)"), ("nvcc", "nvcc"), ("compute_sanitizer", "compute-sanitizer"),
    ("python", "Python"), ("numpy", "NumPy"), ("cupy", "CuPy"), ("host", "host"),
)


def _fence(text: str, char: str = "`", shortest: int = 3) -> str:
    """A run of `char` longer than any run of it inside `text`, and at least `shortest` long."""
    longest = max((len(m) for m in re.findall(re.escape(char) + "+", text)), default=0)
    return char * max(shortest, longest + 1)


def _attr(value: str) -> str:
    return html.escape(value, quote=True)


def render_region(region: Region, highlight: list[int]) -> str:
    """A highlighted code block numbered with the source file's own lines."""
    suffix = "." + region.source.rsplit(".", 1)[-1] if "." in region.source else ""
    lang = _LANGUAGES.get(suffix, "text")
    fence = _fence(region.text)
    name = region.source.rsplit("/", 1)[-1]
    title = f"{name}, lines {region.first}\u2013{region.last} ({region.name})"
    attrs = [f'linenums="{region.first}"', f'title="{_attr(title)}"']
    if highlight:
        attrs.append('hl_lines="' + " ".join(str(n - region.first + 1) for n in highlight) + '"')
    return f"{fence} {lang} {' '.join(attrs)}\n{region.text}\n{fence}"


def provenance_sentence(ev: EvidenceSet, entry: TranscriptEntry | None = None) -> str:
    """One sentence naming where and with what the evidence was recorded."""
    p = ev.provenance
    parts = [f"{k_label} {html.escape(str(p[key]))}" for key, k_label in _PROVENANCE_ORDER[1:]
             if key in p and key != "host"]
    when = entry.date if entry else p.get("recorded", "")
    gpu = html.escape(str(p.get("gpu", "an unnamed GPU")))
    return f"Recorded {html.escape(when)} on {gpu}; " + ", ".join(parts) + "."


def _inline_code(text: str) -> str:
    fence = _fence(text, shortest=1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def render_transcript(ev: EvidenceSet, entry: TranscriptEntry, text: str, opened: bool) -> str:
    """A collapsible block with the transcript's command, exit code, provenance and text.

    Finished HTML, escaped here: the page gets a slot for it and the hook fills the slot
    after Markdown ran, so thousands of transcript lines cost neither the Markdown parser
    nor the search index (data-search-exclude) anything.
    """
    status = "timed out" if entry.timed_out else f"exit code {entry.exit_code}"
    title = f"Transcript {ev.name}/{entry.name} ({status}, {entry.wall_s:.1f} s)"
    command = f"<code>{html.escape(entry.command)}</code>"
    build = f"<code>{html.escape(ev.build)}</code>"
    body = html.escape(text.rstrip("\n"))
    return (
        f'<details class="abstract lk-transcript" data-search-exclude{" open" if opened else ""}>\n'
        f"<summary>{html.escape(title)}</summary>\n"
        f"<p><strong>Command</strong> {command}, run in the folder where the program was built with {build}. "
        f"{provenance_sentence(ev, entry)}</p>\n"
        f'<pre class="lk-transcript-text"><code>{body}</code></pre>\n'
        "</details>\n"
    )


def render_provenance(ev: EvidenceSet) -> str:
    """A table of the set's provenance."""
    rows = ["| recorded with | |", "| --- | --- |"]
    for key, label in _PROVENANCE_ORDER:
        if key in ev.provenance:
            rows.append(f"| {label} | {html.escape(str(ev.provenance[key]))} |")
    rows.append(f"| build line | {_inline_code(ev.build)} |")
    dates = sorted(e.date for e in ev.entries.values())
    if dates:
        span = dates[0] if dates[0][:10] == dates[-1][:10] else f"{dates[0]} to {dates[-1]}"
        rows.append(f"| recorded (UTC) | {html.escape(span)} |")
    return "\n".join(rows)


def render_commands(ev: EvidenceSet, names: list[str]) -> str:
    """The build line and the recorded commands, as a console block a reader can copy."""
    lines = [f"$ {ev.build}"] + [f"$ {ev.entries[n].command}" for n in names]
    text = "\n".join(lines)
    fence = _fence(text)
    return f"{fence} console\n{text}\n{fence}"
