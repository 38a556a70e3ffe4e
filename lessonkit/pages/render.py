"""Markdown for what a page pulls in: code regions, transcripts, provenance, commands.

Everything here is plain Markdown for Python-Markdown with pymdownx.superfences,
pymdownx.highlight and pymdownx.details; values from files are escaped.
"""

from __future__ import annotations

import html
import re
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from lessonkit.evidence.sets import EvidenceSet, TranscriptEntry
from lessonkit.pages.marks import VALUE, Marks
from lessonkit.pages.published import Published, evidence_link, recordings_of
from lessonkit.pages.regions import Region

_LANGUAGES = {".cu": "cuda", ".cuh": "cuda", ".py": "python", ".cpp": "cpp", ".h": "cpp",
              ".sh": "bash", ".toml": "toml"}
_PROVENANCE_ORDER = (
    ("gpu", "GPU"), ("compute_capability", "compute capability"), ("driver", "driver"),
    ("cuda_driver_api", "CUDA (driver API)"), ("nvcc", "nvcc"), ("compute_sanitizer", "compute-sanitizer"),
    ("toolkit", "CUDA toolkit folder"), ("python", "Python"), ("numpy", "NumPy"), ("cupy", "CuPy"), ("host", "host"),
)


# The classes of what the core writes, for the site's stylesheet and script; the audit trusts none of
# them (it reads the marks, lessonkit.pages.marks).
PRODUCED_CLASS = "lk-v"  # a claim's or a generated figure's value: the script opens its data-lk-why
REGION_CLASS = "lk-region"  # a code block a region directive cut from a recorded input
COMMANDS_CLASS = "lk-commands"  # the build line and recorded commands (commands directive)
TRANSCRIPT_CLASS = "lk-transcript"  # a transcript directive's block: what the runs printed
PROVENANCE_CLASS = "lk-provenance"  # the provenance and sessions tables (provenance directive)
BODY_CLASS = "lk-transcript-body"  # all of it but the summary line: kept out of the search index


def produced(marks: Marks, text: str, why: str | None = None, kind: str = VALUE,
             runs: tuple[tuple[str, str], ...] = (), line: int | None = None, unit: str | None = None) -> str:
    """`text` (HTML), which a claim or directive produced from the evidence, between the marks of a
    record of `marks` (lessonkit.pages.marks), which is what the rendered-page audit reads.

    For the reader it is inline Markdown (raw HTML), `<span class="lk-v">TEXT</span>`: `why`, what
    backs the figure in plain words (lessonkit.pages.meaning), goes in `data-lk-why`, which the site's
    script lets a reader open by hover, tap or keyboard.
    """
    return marks.wrap(f"{value_span(why)}{text}</span>", why, kind, runs, line, unit)


def value_span(why: str | None) -> str:
    """The opening tag of the span a produced value sits in for the reader (its tooltip's words)."""
    return f'<span class="{PRODUCED_CLASS}" data-lk-why="{_attr(why)}">' if why else f'<span class="{PRODUCED_CLASS}">'


def language_of(path: str) -> str:
    """The highlighting language a code block of file `path` is shown in ("cuda" for a .cu file)."""
    suffix = "." + path.rsplit(".", 1)[-1] if "." in path.rsplit("/", 1)[-1] else ""
    return _LANGUAGES.get(suffix, "text")


def _fence(text: str, char: str = "`", shortest: int = 3) -> str:
    """A run of `char` longer than any run of it inside `text`, and at least `shortest` long."""
    longest = max((len(m) for m in re.findall(re.escape(char) + "+", text)), default=0)
    return char * max(shortest, longest + 1)


def _attr(value: str) -> str:
    return html.escape(value, quote=True)


def render_region(region: Region, highlight: list[int], marks: Marks) -> str:
    """A highlighted code block numbered with the source file's own lines, dedented.

    The block carries the class `lk-region`: the site's stylesheet wraps its long lines
    (a teaching comment stays readable on a phone) and keeps each file line number beside
    the first row of its line.
    """
    lang = language_of(region.source)
    # The region's indent is the enclosing function's, not part of the lesson.
    text = textwrap.dedent(region.text)
    fence = _fence(text)
    name = region.source.rsplit("/", 1)[-1]
    title = f"{name}, lines {region.first}\u2013{region.last} ({region.name})"
    attrs = [f".{lang}", f".{REGION_CLASS}", f'linenums="{region.first}"', f'title="{_attr(title)}"']
    if highlight:
        attrs.append('hl_lines="' + " ".join(str(n - region.first + 1) for n in highlight) + '"')
    return marks.block(f"{fence} {{{' '.join(attrs)}}}\n{text}\n{fence}",
                       f"cut from {region.source}, lines {region.first}\u2013{region.last}", "region")


INLINE_BYTES = 3 * 1024  # a first recording up to this size is shown whole; a larger one, its first lines
_PYTHON_RE = re.compile(r"""(?:^|[\s/])python[\d.]*\s|\.py\b""")


def render_transcript(ev: EvidenceSet, group: str, first: str, sizes: Sequence[int], *, title: str | None = None,
                      opened: bool = False, figures: Sequence[dict[str, Any]] | None = None,
                      inline: int = INLINE_BYTES) -> str:
    """A collapsible box for a run: its title and status, command and provenance, the table of its
    recordings (each a link to its file) and the first recording (`first`, its text; whole up to
    `inline` bytes, else its first lines).

    Finished HTML, escaped here: the page gets a slot for it and the hook fills the slot after
    Markdown ran, so transcript lines cost the Markdown parser nothing. The recordings' files are
    published with the site (lessonkit.pages.published); lessonkit.js loads one into its box when
    the reader opens it. All but the summary line stays out of the search index.
    """
    files = recordings_of(ev, group)
    entries = [ev.entries[n] for n in ev.recordings(group)]
    heading = title or f"Transcript {ev.name}/{group}"
    parts = [(
        f'<details class="abstract {TRANSCRIPT_CLASS}"{" open" if opened else ""}>\n'
        f"<summary>{html.escape(heading)} ({html.escape(_status(entries))})</summary>\n"
        # Excluded from search on a div that holds no div: Material's search parser keeps what it
        # skips in a set that compares elements by tag alone, so the end of a nested element of the
        # skipped one's tag (a recording's <details> in an excluded <details>) would end the skip.
        f'<div class="{BODY_CLASS}" data-search-exclude>\n'
        f"<p><strong>Command</strong> <code>{html.escape(entries[0].command)}</code>, run in the folder where "
        f"the program was built with <code>{html.escape(ev.build)}</code>. {_run_provenance(ev, entries)}</p>\n"
    )]
    first_block = _first_recording(files[0], first, sizes[0], inline)
    if len(entries) == 1:
        parts.append(first_block)
    else:
        # The table lists every recording, each linked to its file (which the site's script can show
        # below the first); the first is shown under its label. No <details> and no line a recording:
        # the theme's script sets up every <details> of a page as it loads, and a line a recording
        # was 52 KB of Day 62 with two sessions. A <section>, not a <div>: inside the excluded <div>
        # a nested one would end the exclusion.
        parts.append(_spread_table(entries, figures or [{} for _ in entries], files))
        parts.append(f'<section class="lk-recording">\n<p class="lk-recording-head">Recording 1 of {len(entries)} '
                     f"({html.escape(_status(entries[:1]))})</p>\n{first_block}</section>\n")
    parts.append("</div>\n</details>\n")
    return "".join(parts)


def _first_recording(file: Published, text: str, size: int, inline: int) -> str:
    """A recording's text up to `inline` bytes, else its first lines, how many more there are and a link."""
    data = text.encode("utf-8")
    if len(data) <= inline:
        return _recording_text(text)
    head = data[:inline]
    head = head[:head.rfind(b"\n") + 1] or head  # whole lines, unless the first is longer than `inline`
    shown = head.decode("utf-8", "ignore")
    lines = text.count("\n") + (not text.endswith("\n"))
    more = lines - shown.count("\n") - (not shown.endswith("\n"))
    return (_recording_text(shown) +
            f'<p class="lk-transcript-more" data-lk-lines="{lines}">The first {lines - more} lines of {lines}; '
            f"{more} more in {evidence_link(file, file.path)} ({_size(size)}).</p>\n")


def _recording_text(text: str) -> str:
    """What a run printed, as sample output (<samp>), not as code: the theme's script sets up every
    `pre > code` of a page as it loads (a copy button, then the block's width read back, one layout
    of the page each), and Day 62's first recordings were more than half of its code blocks. The
    recording's own file, a link away, is the copy of it to take."""
    return f'<pre class="lk-transcript-text"><samp>{html.escape(text.rstrip(chr(10)))}</samp></pre>\n'


def _size(size: int) -> str:
    """A file's size as a reader reads it: 940 bytes, 12 KiB, 1.4 MiB."""
    if size < 1024:
        return f"{size} bytes"
    return f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size / 2**10:.0f} KiB"


def _status(entries: Sequence[TranscriptEntry]) -> str:
    """'exit code 0, 1.5 s', 'stopped by its timeout, 20.0 s', or a summary of several recordings."""
    if len(entries) == 1:
        e = entries[0]
        return f"{'stopped by its timeout' if e.timed_out else f'exit code {e.exit_code}'}, {e.wall_s:.1f} s"
    walls = [e.wall_s for e in entries]
    return f"{len(entries)} recordings, {_ends(entries)}, {min(walls):.1f}\u2013{max(walls):.1f} s"


def _ends(entries: Sequence[TranscriptEntry]) -> str:
    """How several recordings ended: their exit codes, and how many their timeout stopped."""
    codes = sorted({e.exit_code for e in entries if not e.timed_out}, key=str)
    stopped = sum(e.timed_out for e in entries)
    said = []
    if codes:
        said.append(f"exit code {codes[0]} in each" if len(codes) == 1 and not stopped
                    else "exit codes " + ", ".join(str(c) for c in codes))
    if stopped:
        said.append(f"{stopped} stopped by their timeout")
    return ", ".join(said)


def _session_values(ev: EvidenceSet, sessions: Sequence[str]) -> dict[str, str]:
    """The set's provenance and its sessions' own, as text: a value the sessions differ in is given
    session by session ('580.159.04 in s0, 580.161.01 in s1')."""
    values = {k: str(v) for k, v in ev.provenance.items()}
    keys = dict.fromkeys(k for sid in sessions for k, v in ev.sessions[sid].provenance.items()
                         if isinstance(v, (str, int, float)) and not isinstance(v, bool))
    for key in keys:
        values.setdefault(key, _session_value(ev, sessions, key))
    return values


def _session_value(ev: EvidenceSet, sessions: Sequence[str], key: str) -> str:
    """A provenance value of the sessions: the one they share, or each session's in turn."""
    seen = {sid: ev.sessions[sid].provenance.get(key) for sid in sessions}
    if len({str(v) for v in seen.values()}) == 1:
        return str(next(iter(seen.values())))
    return ", ".join(f"{v if v is not None else 'not recorded'} in {sid}" for sid, v in seen.items())


def _run_provenance(ev: EvidenceSet, entries: Sequence[TranscriptEntry]) -> str:
    """Where and with what a run was recorded: only the versions that bear on that command, and the
    sessions its recordings come from."""
    sessions = list(dict.fromkeys(e.session for e in entries))
    p = _session_values(ev, sessions)
    gpu = html.escape(str(p.get("gpu", "an unnamed GPU")))
    if "compute_capability" in p:
        gpu += f" (compute capability {html.escape(str(p['compute_capability']))})"
    sentence = f"Recorded {html.escape(_when(entries, sessions))} on {gpu}; {_versions(p, entries[0].command)}."
    if len(entries) > 1:
        alone = ", each with the GPU to itself" if all(e.exclusive for e in entries) else ""
        sentence += f" Recorded {len(entries)} times{alone}; claims on this run hold for every recording."
    elif entries[0].exclusive:
        sentence += " Recorded with the GPU to itself."
    return sentence


def _versions(p: dict[str, str], command: str) -> str:
    """The versions that bear on a command: the driver and nvcc, compute-sanitizer when it runs, the
    toolkit's folder, and Python's with NumPy and CuPy for a Python command."""
    keys = ["driver", "nvcc"]
    if "compute-sanitizer" in command:
        keys.append("compute_sanitizer")
    keys.append("toolkit")  # recorded with --toolkit: the folder its nvcc and compute-sanitizer came from
    if _PYTHON_RE.search(command + " "):
        keys += ["python", "numpy", "cupy"]
    labels = dict(_PROVENANCE_ORDER)
    return ", ".join(f"{labels[k]} {html.escape(str(p[k]))}" for k in keys if k in p)


def _when(entries: Sequence[TranscriptEntry], sessions: list[str]) -> str:
    """When a run's recordings were made: a date, a span of dates, or each session's first date."""
    if len(sessions) > 1:
        starts = [f"{sid} from {min(e.date for e in entries if e.session == sid)}" for sid in sessions]
        return f"in {len(sessions)} sessions ({', '.join(starts)})"
    dates = sorted(e.date for e in entries)
    return dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"


def _spread_table(entries: Sequence[TranscriptEntry], figures: Sequence[dict[str, Any]],
                  files: Sequence[Published]) -> str:
    """A table of the recordings: each one's number (a link to its file), session, status and wall
    time, and the numbers that differ between recordings."""
    keys = [k for k in dict.fromkeys(k for f in figures for k in f)
            if all(isinstance(f.get(k), (int, float)) and not isinstance(f.get(k), bool) for f in figures)
            and len({f[k] for f in figures}) > 1][:6]
    head = "".join(f"<th>{html.escape(k)}</th>" for k in keys)
    rows = []
    for k, (entry, figure, file) in enumerate(zip(entries, figures, files), start=1):
        status = "stopped by its timeout" if entry.timed_out else f"exit code {entry.exit_code}"
        cells = "".join(f"<td>{html.escape(str(figure[key]))}</td>" for key in keys)
        rows.append(f"<tr><td>{evidence_link(file, str(k))}</td><td>{html.escape(entry.session)}</td>"
                    f"<td>{status}</td><td>{entry.wall_s:.2f} s</td>{cells}</tr>")
    return ('<table class="lk-recordings">\n<thead><tr><th>recording</th><th>session</th><th>status</th>'
            f"<th>wall time</th>{head}</tr></thead>\n<tbody>\n" + "\n".join(rows) + "\n</tbody>\n</table>\n")


# A session's own provenance, as the sessions table shows it (lessonkit.evidence.gpuinfo records it).
_SESSION_COLUMNS = (
    ("started", "started (UTC)"), ("gpu_uuid", "GPU UUID"), ("driver", "driver"),
    ("max_sm_clock_mhz", "max SM clock (MHz)"), ("power_limit_w", "power limit (W)"),
    ("temperature_c_start", "temperature at start (°C)"), ("temperature_c_end", "at end (°C)"),
    ("shared", "GPU shared"),
)


def render_provenance(ev: EvidenceSet, marks: Marks, slot: Callable[[str], str] = lambda block: block) -> str:
    """A table of the set's provenance, then one row for each session it keeps, each value marked as produced.

    Finished HTML in `slot` (PageState.slot), inside an element the search index leaves out: the page's
    prose names the GPU and the toolkits where they matter, nobody searches a course for a GPU's UUID,
    and the sessions' rows grow with every session the set keeps."""
    sessions = list(ev.sessions)
    values = _session_values(ev, sessions)

    def why(what: str) -> str:
        return f"generated from the provenance of set {ev.name}: {what}, as its manifest records it"

    rows = []
    for key, label in _PROVENANCE_ORDER:
        if key in values and key != "host":
            rows.append((label, produced(marks, html.escape(values[key]), why(f"the field {key}"))))
    rows.append(("build line", produced(marks, f"<code>{html.escape(ev.build)}</code>", why("the build line"))))
    dates = sorted(e.date for e in ev.entries.values())
    if dates:
        span = dates[0] if dates[0][:10] == dates[-1][:10] else f"{dates[0]} to {dates[-1]}"
        rows.append(("recorded (UTC)", produced(marks, html.escape(span), why("the first and last recording dates"))))
    body = "\n".join(f"<tr><td>{html.escape(label)}</td><td>{value}</td></tr>" for label, value in rows)
    table = (f"<table>\n<thead><tr><th>recorded with</th><th>value</th></tr></thead>\n<tbody>\n{body}\n"
             "</tbody>\n</table>\n")
    return slot(f'<div class="{PROVENANCE_CLASS}" data-search-exclude>\n{table}{_sessions_table(ev, marks)}</div>\n')


def _session_cell(value: object) -> str:
    """A session's provenance value as its table shows it."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "not recorded" if value is None else str(value)


def _sessions_table(ev: EvidenceSet, marks: Marks) -> str:
    """One row for each session the set keeps (its start, GPU, clocks, temperatures, whether the GPU was
    shared), and the notes of sessions recorded before these were kept, as HTML left out of the search
    index; '' when there is nothing to show."""
    sessions = list(ev.sessions)
    columns = [(k, label) for k, label in _SESSION_COLUMNS
               if any(k in ev.sessions[sid].provenance for sid in sessions)]
    if not sessions or not columns:
        return ""
    head = "".join(f"<th>{html.escape(label)}</th>" for _, label in columns)
    rows = []
    for sid in sessions:
        prov = ev.sessions[sid].provenance
        cells = "".join(f"<td>{produced(marks, html.escape(_session_cell(prov.get(key))), f'generated from the provenance of session {sid} of set {ev.name}: the field {key}, as its manifest records it')}</td>"
                        for key, _ in columns)
        rows.append(f"<tr><td>{produced(marks, sid, f'generated from the set: session {sid} of set {ev.name}')}</td>{cells}</tr>")
    notes = sorted({str(ev.sessions[s].provenance["note"]) for s in sessions if "note" in ev.sessions[s].provenance})
    return (f'<table>\n<thead><tr><th>session</th>{head}</tr></thead>\n<tbody>\n{chr(10).join(rows)}\n</tbody>\n'
            '</table>\n' + "".join(f"<p>{produced(marks, html.escape(n))}</p>\n" for n in notes))


def render_commands(ev: EvidenceSet, names: list[str], marks: Marks) -> str:
    """The build line and the recorded commands, as a console block a reader can copy."""
    lines = [f"$ {ev.build}"] + [f"$ {ev.entries[n].command}" for n in names]
    text = "\n".join(lines)
    fence = _fence(text)
    return marks.block(f"{fence} {{.console .{COMMANDS_CLASS}}}\n{text}\n{fence}",
                       f"the build line and the commands of set {ev.name}, as its manifest records them", "commands")
