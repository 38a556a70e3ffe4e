// Small touches on top of Material, run on every page Material shows (its document$).

// What scrolls sideways (a wide table or diagram, a code region with an overlong word)
// takes the keyboard focus, so it scrolls without a mouse (axe: scrollable-region-focusable).
var lkScrollers = ".md-typeset__scrollwrap, table.lk-recordings, .lk-figure.lk-wide, .lk-region tr:has(> td.code)";

function lkMarkScrollers() {
  document.querySelectorAll(lkScrollers).forEach(function (box) {
    if (box.scrollWidth > box.clientWidth) {
      box.setAttribute("tabindex", "0");
    } else {
      box.removeAttribute("tabindex");
    }
  });
}

window.addEventListener("resize", lkMarkScrollers);

document$.subscribe(function () {
  // A wrapped line of a code region continues 4 columns right of its own indent, as in an
  // editor with word wrap (lessonkit.css reads --lk-indent; without this script, 4 columns).
  document.querySelectorAll(".lk-region td.code code > span").forEach(function (line) {
    var indent = /^ */.exec(line.textContent)[0].length;
    line.style.setProperty("--lk-indent", indent + "ch");
  });
  lkMarkScrollers();
});
