// Small touches on top of Material, run on every page Material shows (its document$).

// What scrolls sideways (a wide table or diagram, a code region with an overlong word)
// takes the keyboard focus, so it scrolls without a mouse (axe: scrollable-region-focusable).
var lkScrollers = ".md-typeset__scrollwrap, .md-code__content, table.lk-recordings, .lk-figure.lk-wide, .lk-region tr:has(> td.code), " +
  "pre.lk-transcript-text > code";

// Every width is read before any attribute is written: a write between two reads would make the
// browser lay the page out again for each box.
function lkMarkScrollers() {
  var boxes = Array.prototype.slice.call(document.querySelectorAll(lkScrollers));
  var wide = boxes.map(function (box) { return box.scrollWidth > box.clientWidth; });
  boxes.forEach(function (box, k) {
    if (wide[k]) {
      box.setAttribute("tabindex", "0");
    } else if (box.getAttribute("tabindex") === "0") {
      box.removeAttribute("tabindex");  // only what this made focusable: a loaded text keeps its -1
    }
  });
}

window.addEventListener("resize", lkMarkScrollers);

// Recordings load when the reader asks for them (lessonkit.pages.render.render_transcript). Each
// recording after the first is a collapsed box holding a link to its file, which the build
// publishes beside the pages; opening the box fetches the file and shows its text below the link.
// A first recording shown in part gets a button that shows all of it. The text goes in as text
// (textContent), never as HTML. Without JavaScript, or when loading fails, the link opens the file.

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
      lkMarkScrollers();
    })
    .catch(function (error) {
      holder.setAttribute("data-lk-state", "failed");
      status.classList.add("lk-load-failed");
      status.textContent = "Could not load this recording (" + (error.message || error) +
        "); the link opens its file.";
    })
    .finally(function () { holder.removeAttribute("aria-busy"); });
}

function lkShowText(code, text) {
  code.textContent = text.replace(/\n$/, "");
  return text === "" ? 0 : text.replace(/\n$/, "").split("\n").length;
}

// A recording after the first: a button beside its link shows its text here, and hides it again.
function lkLoadOnOpen(box) {
  var line = box.querySelector(":scope > .lk-recording-file");
  var link = line ? line.querySelector("a.lk-evidence") : null;
  if (!link || box.hasAttribute("data-lk-ready")) return;
  box.setAttribute("data-lk-ready", "");
  var button = document.createElement("button");
  button.type = "button";
  button.className = "lk-load-whole";
  button.textContent = "Show it here";
  button.setAttribute("aria-expanded", "false");
  line.appendChild(document.createTextNode(" "));
  line.appendChild(button);
  var status = lkStatus(box, "p");
  var pre = null;
  button.addEventListener("click", function () {
    var open = button.getAttribute("aria-expanded") !== "true";
    button.setAttribute("aria-expanded", open ? "true" : "false");
    button.textContent = open ? "Hide it" : "Show it here";
    if (pre) {
      pre.style.display = open ? "" : "none";  // (a stylesheet's display for pre outranks hidden)
      return;
    }
    lkLoad(box, link, status, function (text) {
      pre = document.createElement("pre");
      var code = document.createElement("code");
      pre.className = "lk-transcript-text";
      pre.appendChild(code);
      box.insertBefore(pre, status);
      return lkShowText(code, text);
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
      var code = pre.querySelector("code");
      var lines = lkShowText(code, text);
      button.hidden = true;
      code.setAttribute("tabindex", "-1");  // the button is gone: keep the keyboard where the text is
      code.focus({ preventScroll: true });
      return lines;
    });
  });
}

// The page's own work runs just after the document has loaded (a task of its own), so that the
// page is ready to read as soon as the theme's script has run.
function lkAfterLoad(work) {
  document$.subscribe(function () { setTimeout(work, 0); });
}

lkAfterLoad(function () {
  // A wrapped line of a code region continues 4 columns right of its own indent, as in an
  // editor with word wrap (lessonkit.css reads --lk-indent; without this script, 4 columns).
  document.querySelectorAll(".lk-region td.code code > span").forEach(function (line) {
    var indent = /^ */.exec(line.textContent)[0].length;
    line.style.setProperty("--lk-indent", indent + "ch");
  });
  document.querySelectorAll("section.lk-recording").forEach(lkLoadOnOpen);
  document.querySelectorAll(".lk-transcript-more").forEach(lkLoadWhole);
  // Measuring needs the page laid out: after the first frame, not while the page is still loading.
  requestAnimationFrame(function () { setTimeout(lkMarkScrollers, 0); });
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
