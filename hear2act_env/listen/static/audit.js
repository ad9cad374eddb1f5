// hear2act audit: one clip at a time; each answer is POSTed to /api/label and the reply is the
// next clip. The page never learns (or shows) whether an answer was right.
(function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const audio = $("clip-audio");
  const buttons = Array.from(document.querySelectorAll("button[data-label]"));
  let state = JSON.parse($("audit-state").textContent);
  let busy = false;

  function setBusy(value) {
    busy = value;
    buttons.forEach((b) => { b.disabled = value; });
  }

  function show(next, play) {
    state = next;
    document.body.dataset.labelled = String(next.labelled);
    if (!next.clip) {
      $("progress").textContent = `${next.labelled} of ${next.total} labelled`;
      $("task").hidden = true;
      $("done").hidden = false;
      audio.pause();
      audio.removeAttribute("src");
      setBusy(false);
      return;
    }
    $("progress").textContent = `Clip ${next.labelled + 1} of ${next.total}`;
    $("clip-text").textContent = next.clip.text;
    const lines = next.clip.context || [];
    const list = $("context-lines");
    list.replaceChildren(...lines.map((line) => {
      const item = document.createElement("li");
      item.textContent = line;
      return item;
    }));
    $("clip-context").hidden = lines.length === 0;
    if (audio.getAttribute("src") !== next.clip.audio) {
      audio.setAttribute("src", next.clip.audio);
      audio.load();
      if (play) audio.play().catch(() => {});
    }
    setBusy(false);
  }

  async function send(label) {
    if (busy || !state.clip) return;
    setBusy(true);
    $("message").textContent = "";
    const body = { annotator: state.annotator, clip: state.clip.id, label: label };
    try {
      const response = await fetch("/api/label", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      let reply;
      try {
        reply = await response.json();
      } catch (err) {
        reply = { error: `the server answered ${response.status}` }; // a plain-text refusal
      }
      if (response.ok) {
        show(reply, true);
      } else if (reply.state) {
        $("message").textContent = reply.error;
        show(reply.state, false);
      } else {
        $("message").textContent = reply.error || `the server answered ${response.status}`;
        setBusy(false);
      }
    } catch (err) {
      $("message").textContent = `could not reach the audit server (${err}); try again`;
      setBusy(false);
    }
  }

  buttons.forEach((b) => b.addEventListener("click", () => send(b.dataset.label)));
  document.addEventListener("keydown", (event) => {
    if (event.target instanceof HTMLInputElement || event.repeat) return;
    if (event.key === "1") send("resolved");
    else if (event.key === "2") send("unresolved");
  });
  show(state, false);
})();
