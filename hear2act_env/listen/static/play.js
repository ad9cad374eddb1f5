// hear2act play: the page of a person playing the assistant. Vanilla JS, no remote assets.
// It renders GET /api/state (only what the access condition shows) and posts the person's
// actions to POST /api/act as {act, option, topic, episode, turn}.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const hasAudio = document.body.dataset.audio === "true";
  const ACT = { ask: 0, clarify: 1, recommend: 2, confirm: 3 };
  let state = null;
  let shownTurn = null; // "episode:turn:lines" of the transcript on the page
  let shownEpisode = null; // the episode whose options are on the page
  let latestAudio = null;
  let gesture = false; // the person clicked: the browser lets a new reply play by itself
  let timer = null;

  async function api(path, body) {
    const init =
      body === undefined
        ? { cache: "no-store" }
        : {
            method: "POST",
            cache: "no-store",
            headers: { "Content-Type": "application/json" },
            body: JSON.stringify(body),
          };
    const res = await fetch(path, init);
    let data;
    try {
      data = await res.json();
    } catch (err) {
      data = { error: `HTTP ${res.status}` };
    }
    if (!res.ok) throw new Error(data.error || `HTTP ${res.status}`);
    return data;
  }

  function node(tag, className, text) {
    const el = document.createElement(tag);
    if (className) el.className = className;
    if (text !== undefined) el.textContent = text;
    return el;
  }

  function statusText(s) {
    const ep = s.episode;
    switch (s.phase) {
      case "waiting":
        return `Episode ${ep.number} of ${ep.total}: your move (action ${ep.turn + 1} of ${ep.max_actions}).`;
      case "busy":
        return "The user is answering...";
      case "ended":
        return "";
      case "done":
        return "";
      case "stopped":
        return "The server has stopped. Run hear2act play again with the same arguments to resume.";
      case "failed":
        return "";
      default:
        return s.phase;
    }
  }

  function render(s) {
    state = s;
    $("progress").textContent = `${s.recorded} of ${s.total} episodes recorded`;
    $("status").textContent = statusText(s);
    $("outcome").hidden = s.phase !== "ended";
    $("summary").hidden = s.phase !== "done";
    $("failure").hidden = s.phase !== "failed";
    $("episode").hidden = !s.episode;
    $("clarify-row").hidden = !s.clarify;
    if (s.episode) renderEpisode(s.episode);
    if (s.phase === "ended") renderOutcome(s.outcome);
    if (s.phase === "done") renderSummary(s.summary);
    if (s.phase === "failed") $("failure").textContent = `The run stopped: ${s.error}`;
    setEnabled(s.phase === "waiting");
    schedule(s.phase);
  }

  function renderEpisode(ep) {
    if (shownEpisode !== ep.number) {
      shownEpisode = ep.number;
      renderOptions(ep);
    }
    const key = `${ep.number}:${ep.turn}:${ep.turns.length}`;
    if (shownTurn === key) return;
    shownTurn = key;
    $("domain").textContent = ep.domain;
    $("turn-count").textContent = `episode ${ep.number} of ${ep.total}, ${ep.turn} of ${ep.max_actions} actions taken`;
    const box = $("transcript");
    box.replaceChildren();
    let current = null;
    ep.turns.forEach((t, i) => {
      const div = node("div", `turn ${t.who}`);
      div.dataset.index = String(i);
      if (t.who !== "note") div.append(node("span", "who", t.who === "user" ? "User" : "Assistant"));
      div.append(node("span", "text", t.text));
      if (t.state) div.append(node("span", "tag", `state: ${t.state}`));
      if (t.audio && t.audio !== ep.audio) {
        const player = node("audio");
        player.controls = true;
        player.preload = "metadata";
        player.src = t.audio;
        div.append(player);
      } else if (t.audio) {
        div.append(node("span", "tag", "latest reply"));
      }
      if (t.who === "assistant") {
        const m = /option (\d+)/i.exec(t.text);
        if (m) current = Number(m[1]);
      }
      box.append(div);
    });
    box.scrollTop = box.scrollHeight;
    for (const row of $("options").tBodies[0].rows) {
      row.classList.toggle("current", Number(row.dataset.number) === current);
    }
    if (hasAudio) {
      const player = $("latest-audio");
      if (ep.audio && ep.audio !== latestAudio) {
        latestAudio = ep.audio;
        player.src = ep.audio;
        player.load();
        if (gesture && $("autoplay").checked) player.play().catch(() => {});
      } else if (!ep.audio) {
        latestAudio = null;
        player.removeAttribute("src");
      }
    }
  }

  function renderOptions(ep) {
    const table = $("options");
    const head = node("tr");
    head.append(node("th", "", "#"), node("th", "", "name"));
    ep.options.attributes.forEach((a) => head.append(node("th", "", a)));
    table.tHead.replaceChildren(head);
    const body = table.tBodies[0];
    body.replaceChildren();
    const select = $("option");
    select.replaceChildren();
    ep.options.rows.forEach((r) => {
      const row = node("tr");
      row.dataset.number = String(r.number);
      row.append(node("td", "number", String(r.number)), node("td", "", r.name));
      r.values.forEach((v) => row.append(node("td", "", v)));
      row.addEventListener("click", () => {
        select.value = String(r.number - 1);
        markChosen();
      });
      body.append(row);
      const opt = node("option", "", `${r.number}. ${r.name}`);
      opt.value = String(r.number - 1);
      select.append(opt);
    });
    const topics = $("topic");
    topics.replaceChildren();
    ep.topics.forEach((label, i) => {
      const opt = node("option", "", label);
      opt.value = String(i);
      topics.append(opt);
    });
    if (ep.topics.length > 1) topics.value = "1";
    markChosen();
  }

  function markChosen() {
    const chosen = Number($("option").value) + 1;
    for (const row of $("options").tBodies[0].rows) {
      row.classList.toggle("chosen", Number(row.dataset.number) === chosen);
    }
  }

  function optionText(o) {
    return o ? `option ${o.number} (${o.name})` : "no option";
  }

  function renderOutcome(o) {
    const title = $("outcome-title");
    if (o.error) {
      title.textContent = `Episode ${o.number}: an error`;
      title.className = "bad";
      $("outcome-text").textContent = o.error;
    } else {
      title.textContent = o.success
        ? `Episode ${o.number}: success`
        : `Episode ${o.number}: not the best option`;
      title.className = o.success ? "ok" : "bad";
      const how = o.truncated
        ? `The action budget ran out with ${optionText(o.final)} recommended.`
        : `You confirmed ${optionText(o.final)}.`;
      $("outcome-text").textContent =
        `${how} The best option was ${optionText(o.best)}. ${o.actions} actions.`;
    }
    $("next").textContent = o.remaining > 0 ? "Next episode" : "See the summary";
  }

  function renderSummary(sm) {
    $("summary-text").textContent =
      `${sm.episodes} episodes, ${sm.successes} successful: success ${sm.success} ` +
      `(%, 95% scenario-bootstrap CI)` +
      (sm.errors ? `; ${sm.errors} with an error (played again on the next run)` : "") +
      ".";
    $("summary-results").textContent = sm.results;
    $("summary-report").textContent = sm.report;
  }

  function setEnabled(on) {
    for (const id of ["topic", "ask", "clarify", "option", "recommend", "confirm"]) {
      $(id).disabled = !on;
    }
  }

  function schedule(phase) {
    clearTimeout(timer);
    if (phase === "failed") return;
    timer = setTimeout(refresh, phase === "busy" ? 300 : 2500);
  }

  async function refresh() {
    try {
      render(await api("/api/state"));
    } catch (err) {
      $("status").textContent = `Cannot reach the server (${err.message}); retrying...`;
      setEnabled(false);
      schedule("busy");
    }
  }

  async function send(act, option, topic) {
    if (!state || state.phase !== "waiting") return;
    gesture = true;
    $("message").textContent = "";
    setEnabled(false);
    $("status").textContent = "The user is answering...";
    const ep = state.episode;
    try {
      render(await api("/api/act", { act, option, topic, episode: ep.number, turn: ep.turn }));
    } catch (err) {
      $("message").textContent = err.message;
      refresh();
    }
  }

  $("ask").addEventListener("click", () => send(ACT.ask, 0, Number($("topic").value)));
  $("clarify").addEventListener("click", () => send(ACT.clarify, 0, 0));
  $("recommend").addEventListener("click", () => send(ACT.recommend, Number($("option").value), 0));
  $("confirm").addEventListener("click", () => send(ACT.confirm, 0, 0));
  $("option").addEventListener("change", markChosen);
  $("next").addEventListener("click", async () => {
    gesture = true;
    $("next").disabled = true;
    try {
      render(await api("/api/next", {}));
    } catch (err) {
      $("message").textContent = err.message;
      refresh();
    } finally {
      $("next").disabled = false;
    }
  });
  refresh();
})();
