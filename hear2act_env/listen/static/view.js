// hear2act view: the episode list's filters, the hidden-information toggle, the compare page.
(function () {
  "use strict";
  const toggle = document.getElementById("toggle-hidden");
  if (toggle) {
    toggle.addEventListener("change", () => document.body.classList.toggle("show-hidden", toggle.checked));
  }

  const table = document.getElementById("episodes");
  if (table && window.HEAR2ACT_EPISODES) {
    const rows = window.HEAR2ACT_EPISODES;
    const body = table.querySelector("tbody");
    const count = document.getElementById("count");
    const selects = Array.from(document.querySelectorAll("#filters [data-facet]"));
    const pagesOnly = document.getElementById("filter-pages");
    const LIMIT = 500;
    const cell = (text) => { const td = document.createElement("td"); td.textContent = text; return td; };
    function render() {
      const want = {};
      selects.forEach((s) => { if (s.value) want[s.dataset.facet] = s.value; });
      const matches = rows.filter((r) => Object.entries(want).every(([k, v]) =>
        k === "scenario" ? r.scenario.includes(v) : String(r[k]) === v) && (!pagesOnly.checked || r.page));
      body.replaceChildren();
      matches.slice(0, LIMIT).forEach((r) => {
        const tr = document.createElement("tr");
        tr.dataset.slug = r.slug;
        [r.agent, r.realization, r.condition, r.scenario, r.domain, r.run].forEach((v) => tr.appendChild(cell(v)));
        const out = cell(r.outcome); out.className = r.outcome === "success" ? "ok" : "bad"; tr.appendChild(out);
        tr.appendChild(cell(r.actions)); tr.appendChild(cell(r.reward));
        const link = document.createElement("td");
        if (r.page) { const a = document.createElement("a"); a.href = "episodes/" + r.slug + ".html"; a.textContent = "open"; a.className = "open"; link.appendChild(a); }
        else if (r.note) { link.textContent = "not replayable"; link.title = r.note; link.className = "bad"; }
        else { link.textContent = "no page"; link.className = "muted"; }
        tr.appendChild(link);
        body.appendChild(tr);
      });
      count.textContent = matches.length + " of " + rows.length + " episodes" +
        (matches.length > LIMIT ? " (first " + LIMIT + " shown: narrow the filters)" : "");
    }
    selects.forEach((s) => s.addEventListener(s.tagName === "INPUT" ? "input" : "change", render));
    pagesOnly.addEventListener("change", render);
    render();
  }

  const left = document.getElementById("left"), right = document.getElementById("right");
  if (left && right) {
    const columns = Array.from(document.querySelectorAll("#columns .column"));
    const note = document.getElementById("divergence");
    function show() {
      columns.forEach((c) => {
        c.hidden = c.dataset.slug !== left.value && c.dataset.slug !== right.value;
        c.style.order = c.dataset.slug === left.value ? 0 : 1;
        c.querySelectorAll(".diverged").forEach((t) => t.classList.remove("diverged"));
      });
      const at = window.HEAR2ACT_DIVERGENCE[left.value + "|" + right.value];
      if (left.value === right.value) { note.textContent = "the same episode on both sides"; return; }
      if (at === null || at === undefined) { note.textContent = "the two episodes take the same actions"; return; }
      note.textContent = "they part at action " + (at + 1);
      [left.value, right.value].forEach((slug) => {
        const col = columns.find((c) => c.dataset.slug === slug);
        const turn = col && col.querySelector('[data-action="' + at + '"]');
        if (turn) turn.classList.add("diverged");
      });
    }
    left.addEventListener("change", show); right.addEventListener("change", show);
    show();
  }
})();
