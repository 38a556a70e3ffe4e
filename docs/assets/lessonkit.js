// Small touches on top of Material, run on every page Material shows (its document$).

// What scrolls sideways (a wide table or diagram, a code region with an overlong word)
// takes the keyboard focus, so it scrolls without a mouse (axe: scrollable-region-focusable).
var lkScrollers = ".md-typeset__scrollwrap, .md-code__content, table.lk-recordings, .lk-figure.lk-wide, .lk-region tr:has(> td.code), " +
  "pre.lk-transcript-text > samp";

// Every width is read before any attribute is written: a write between two reads would make the
// browser lay the page out again for each box. What a closed <details> holds is not laid out until
// it opens (nor reachable by keyboard): reading its width would lay out that box alone, once for
// each, so it is measured when it opens. `root`: where to look (default: the whole page).
function lkMarkScrollers(root) {
  var found = (root || document).querySelectorAll(lkScrollers);
  var boxes = Array.prototype.filter.call(found, function (box) { return !box.closest("details:not([open])"); });
  var wide = boxes.map(function (box) { return box.scrollWidth > box.clientWidth; });
  boxes.forEach(function (box, k) {
    if (wide[k]) {
      box.setAttribute("tabindex", "0");
    } else if (box.getAttribute("tabindex") === "0") {
      box.removeAttribute("tabindex");  // only what this made focusable: a loaded text keeps its -1
    }
  });
}

window.addEventListener("resize", function () { lkMarkScrollers(); });
document.addEventListener("toggle", function (event) {  // (toggle does not bubble: caught on its way down)
  if (event.target.open) {
    lkMarkScrollers(event.target);
  }
}, true);

// Recordings load when the reader asks for them (lessonkit.pages.render.render_transcript). Each
// recording is a row of the box's table, holding a link to its file, which the build publishes
// beside the pages; a button beside a later one's link fetches the file and shows its text below
// the first recording.
// A first recording shown in part gets a button that shows all of it. The text goes in as text
// (textContent), never as HTML, as sample output (<pre><samp>, as lessonkit.pages.render shows the
// first one). Without JavaScript, or when loading fails, the link opens the file.

// The live region that says what loading does; made before it speaks, so screen readers hear it.
function lkStatus(holder, tag) {
  var status = document.createElement(tag);
  status.className = "lk-load-status";
  status.setAttribute("role", "status");
  holder.appendChild(status);
  return status;
}

// Fetch `link`'s file into show(text); say so in `status` as it goes, and allow a retry on failure.
function lkLoad(holder, link, status, show) {
  var state = holder.getAttribute("data-lk-state");
  if (state === "loading" || state === "loaded") return;
  holder.setAttribute("data-lk-state", "loading");
  holder.setAttribute("aria-busy", "true");
  status.classList.remove("lk-load-failed");
  status.textContent = "Loading " + link.textContent + "\u2026";
  fetch(link.href)
    .then(function (response) {
      if (!response.ok) throw new Error("the server answered " + response.status);
      return response.text();
    })
    .then(function (text) {
      var lines = show(text);
      holder.setAttribute("data-lk-state", "loaded");
      status.textContent = "Loaded, " + lines + " lines.";
      lkMarkScrollers(holder.closest("details") || holder);
    })
    .catch(function (error) {
      holder.setAttribute("data-lk-state", "failed");
      status.classList.add("lk-load-failed");
      status.textContent = "Could not load this recording (" + (error.message || error) +
        "); the link opens its file.";
    })
    .finally(function () { holder.removeAttribute("aria-busy"); });
}

function lkShowText(samp, text) {
  samp.textContent = text.replace(/\n$/, "");
  return text === "" ? 0 : text.replace(/\n$/, "").split("\n").length;
}

// A transcript's table of recordings: a button beside each later recording's link shows its text
// below the first recording, one at a time (showing another replaces it), and hides it again.
function lkRecordingTable(table) {
  var first = table.parentElement.querySelector(":scope > section.lk-recording");
  if (!first || table.hasAttribute("data-lk-ready")) return;
  table.setAttribute("data-lk-ready", "");
  var rows = table.tBodies[0].rows;
  var shown = null, current = null;
  function hide() {
    if (shown) shown.remove();
    if (current) {
      current.setAttribute("aria-expanded", "false");
      current.textContent = "Show";
    }
    shown = current = null;
  }
  Array.prototype.forEach.call(rows, function (row, k) {
    var link = row.cells[0].querySelector("a.lk-evidence");
    if (!link || k === 0) return;  // the first is shown already
    var button = document.createElement("button");
    button.type = "button";
    button.className = "lk-load-whole";
    button.textContent = "Show";
    button.setAttribute("aria-label", "Show recording " + (k + 1) + " here");
    button.setAttribute("aria-expanded", "false");
    row.cells[0].appendChild(document.createTextNode(" "));
    row.cells[0].appendChild(button);
    button.addEventListener("click", function () {
      var again = current === button;
      hide();
      if (again) return;
      current = button;
      button.setAttribute("aria-expanded", "true");
      button.textContent = "Hide";
      shown = document.createElement("section");
      shown.className = "lk-recording";
      var head = document.createElement("p");
      var file = link.cloneNode(false);
      file.textContent = link.getAttribute("href").replace(/^(\.\.\/)+/, "");
      head.className = "lk-recording-file";
      head.appendChild(document.createTextNode("Recording " + (k + 1) + " of " + rows.length + " (" +
        row.cells[2].textContent + ", " + row.cells[3].textContent + "): "));
      head.appendChild(file);
      shown.appendChild(head);
      first.after(shown);
      var status = lkStatus(shown, "p");
      lkLoad(shown, file, status, function (text) {
        var pre = document.createElement("pre");
        var samp = document.createElement("samp");
        pre.className = "lk-transcript-text";
        pre.appendChild(samp);
        shown.insertBefore(pre, status);
        return lkShowText(samp, text);
      });
    });
  });
}

function lkLoadWhole(more) {
  var link = more.querySelector("a.lk-evidence");
  var pre = more.previousElementSibling;
  if (!link || !pre || more.hasAttribute("data-lk-ready")) return;
  more.setAttribute("data-lk-ready", "");
  var button = document.createElement("button");
  button.type = "button";
  button.className = "lk-load-whole";
  button.textContent = "Show all " + more.getAttribute("data-lk-lines") + " lines here";
  more.appendChild(document.createTextNode(" "));
  more.appendChild(button);
  var status = lkStatus(more, "span");
  button.addEventListener("click", function () {
    lkLoad(more, link, status, function (text) {
      var samp = pre.querySelector("samp");
      var lines = lkShowText(samp, text);
      button.hidden = true;
      samp.setAttribute("tabindex", "-1");  // the button is gone: keep the keyboard where the text is
      samp.focus({ preventScroll: true });
      return lines;
    });
  });
}

// Copy buttons, as the theme draws them (.md-code__nav > button.md-code__button, whose clicks
// the theme's clipboard handler serves: it copies the text the button names and says so), put
// in every code listing at once. The theme's own (the feature content.code.copy, off in
// mkdocs.yml) puts a button in and reads the block's width back, block after block: a layout of
// the whole page for each listing, on every page, as it loads.
function lkCopyButtons() {
  if (!(document.queryCommandSupported && document.queryCommandSupported("copy"))) return;  // as the theme
  var title = "Copy to clipboard";
  try {
    title = JSON.parse(document.getElementById("__config").textContent).translations["clipboard.copy"] || title;
  } catch (error) { /* no configuration: the English words */ }
  document.querySelectorAll(".md-content pre:not(.mermaid) > code").forEach(function (code, k) {
    var pre = code.parentElement;
    if (pre.querySelector(":scope > .md-code__nav") || code.closest(".no-copy")) return;
    if (!pre.id) pre.id = "__code_lk" + k;  // (the theme names every listing __code_N as it loads)
    var nav = document.createElement("div");  // not a <nav>: a landmark for every listing, none named (axe: landmark-unique)
    nav.className = "md-code__nav";
    var button = document.createElement("button");
    button.className = "md-code__button";
    button.title = title;
    button.setAttribute("data-clipboard-target", "#" + CSS.escape(pre.id) + " > code");
    button.setAttribute("data-md-type", "copy");
    nav.appendChild(button);
    pre.insertBefore(nav, code);
  });
}

// The page's own work runs just after the document has loaded (a task of its own), so that the
// page is ready to read as soon as the theme's script has run.
function lkAfterLoad(work) {
  document$.subscribe(function () { setTimeout(work, 0); });
}

lkAfterLoad(function () {
  lkCopyButtons();
  // A wrapped line of a code region continues 4 columns right of its own indent, as in an
  // editor with word wrap (lessonkit.css reads --lk-indent; without this script, 4 columns).
  document.querySelectorAll(".lk-region td.code code > span").forEach(function (line) {
    var indent = /^ */.exec(line.textContent)[0].length;
    line.style.setProperty("--lk-indent", indent + "ch");
  });
  document.querySelectorAll("table.lk-recordings").forEach(lkRecordingTable);
  document.querySelectorAll(".lk-transcript-more").forEach(lkLoadWhole);
  // Measuring needs the page laid out: after the first frame, not while the page is still loading.
  requestAnimationFrame(function () { setTimeout(function () { lkMarkScrollers(); }, 0); });
});

// What backs a figure (lessonkit.pages.meaning): every figure produced from the evidence carries it
// in data-lk-why. Pointing at the figure, focusing it from the keyboard or tapping it shows those
// words below it, in one tooltip the figure names as its description; Escape, or leaving it, hides it.
var lkWhy = null;

function lkWhyBox() {
  if (!lkWhy) {
    lkWhy = document.createElement("div");
    lkWhy.id = "lk-why";
    lkWhy.className = "lk-why";
    lkWhy.setAttribute("role", "tooltip");
    lkWhy.hidden = true;
    (document.querySelector("main") || document.body).appendChild(lkWhy);
  }
  return lkWhy;
}

function lkShowWhy(figure) {
  var box = lkWhyBox();
  if (box.lkFor && box.lkFor !== figure) {
    box.lkFor.removeAttribute("aria-describedby");
  }
  box.textContent = figure.getAttribute("data-lk-why");
  box.hidden = false;
  var page = document.documentElement.clientWidth;
  var width = Math.min(320, page - 16);
  var at = figure.getBoundingClientRect();
  box.style.maxWidth = width + "px";
  box.style.left = Math.max(8, Math.min(at.left, page - width - 8)) + "px";
  box.style.top = at.bottom + 6 + "px";
  figure.setAttribute("aria-describedby", "lk-why");
  box.lkFor = figure;
}

function lkHideWhy() {
  if (lkWhy && !lkWhy.hidden) {
    if (lkWhy.lkFor) {
      lkWhy.lkFor.removeAttribute("aria-describedby");
    }
    lkWhy.hidden = true;
    lkWhy.lkFor = null;
  }
}

function lkFigure(event) {
  return event.target.closest ? event.target.closest(".lk-v[data-lk-why]") : null;
}

// A mouse shows it on pointing; a tap is a click (below), which shows it or hides it again.
document.addEventListener("pointerover", function (event) {
  var figure = lkFigure(event);
  if (figure && event.pointerType === "mouse") {
    lkShowWhy(figure);
  }
});
document.addEventListener("pointerout", function (event) {
  if (event.pointerType === "mouse" && lkFigure(event) && lkWhy && document.activeElement !== lkWhy.lkFor) {
    lkHideWhy();
  }
});
window.addEventListener("scroll", function () {  // it follows its figure
  if (lkWhy && !lkWhy.hidden && lkWhy.lkFor) {
    lkShowWhy(lkWhy.lkFor);
  }
}, { passive: true });
document.addEventListener("focusin", function (event) {
  var figure = lkFigure(event);
  if (figure) {
    lkShowWhy(figure);
  }
});
document.addEventListener("focusout", function (event) {
  if (lkFigure(event)) {
    lkHideWhy();
  }
});
document.addEventListener("click", function (event) {
  var figure = lkFigure(event);
  if (figure) {  // a tap or a click: show, or hide what it showed
    if (lkWhy && !lkWhy.hidden && lkWhy.lkFor === figure && document.activeElement !== figure) {
      lkHideWhy();
    } else {
      lkShowWhy(figure);
    }
  } else {
    lkHideWhy();
  }
});
document.addEventListener("keydown", function (event) {
  if (event.key === "Escape") {
    lkHideWhy();
  }
});

lkAfterLoad(function () {
  lkHideWhy();
  document.querySelectorAll(".lk-v[data-lk-why]").forEach(function (figure) {
    figure.setAttribute("tabindex", "0");  // reachable from the keyboard, in reading order
  });
});
