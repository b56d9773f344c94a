// Tacocat in the browser: the page's only script (no build step). The server holds every
// game and sends what the viewer may see; this script draws it (the table is the server's
// SVG), turns the legal moves into buttons and sends the chosen one with the move counter it
// was chosen at. It never sends a move that is not among the legal moves it was given.
// A person plays by mouse or keyboard (the number of a move plays it, focus stays on the
// move list); the agent's replies are stepped through on the table (a setting turns it off).
"use strict";

const $ = (selector, root = document) => root.querySelector(selector);
const $$ = (selector, root = document) => Array.from(root.querySelectorAll(selector));

async function api(method, path, body) {
  const options = {method, headers: {}};
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  const data = await response.json().catch(() => ({error: `HTTP ${response.status}`}));
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

// ---------------------------------------------------------------------------------------
// what the three views share
// ---------------------------------------------------------------------------------------
function section(name) {
  const root = $(`#${name}`);
  return {
    root, data: null, timer: null, focus: null,
    error: $(".error", root), game: $(".game", root), table: $(".table", root), status: $(".note", root),
    text: $(".text", root), history: $(".history", root), after: $(".after", root),
  };
}

const views = {play: section("play"), watch: section("watch"), replay: section("replay")};
let help = {sections: [], groups: {}};  // how to play (tacocat.game.how_to_play), from the options

function setBusy(view, busy) {
  view.root.dataset.busy = busy ? "true" : "false";
  $$("button", view.game).forEach((b) => { if (!b.classList.contains("keep")) b.disabled = busy; });
  if (!busy && view.focus) { view.focus.focus(); view.focus = null; }
}

function showError(view, message) {
  view.error.textContent = message || "";
}

function drawTable(view, frame) {
  // built and escaped by the server (tacocat.game.render): the wide picture and the narrow
  // one; the style sheet shows the one that fits the screen
  view.table.innerHTML = `<div class="wide">${frame.svg}</div><div class="narrow">${frame.svg_narrow}</div>`;
}

function draw(view, data) {
  const before = view.data && view.data.game === data.game ? view.data.history.length : data.history.length;
  view.data = data;
  view.game.hidden = false;
  remember();
  drawTable(view, data);
  delete view.table.dataset.actor;
  view.text.textContent = data.text;
  view.history.replaceChildren(...data.history.map((line, i) => {
    const item = document.createElement("li");
    item.textContent = line;
    if (i >= before) item.className = "new";  // what happened since the last table
    return item;
  }));
  view.history.scrollTop = view.history.scrollHeight;
  view.root.dataset.over = data.over ? "true" : "false";
  if (view.after) {
    view.after.hidden = !data.over;
    $(".file", view.after).href = data.over ? `/api/games/${data.game}/file` : "#";
  }
}

function rulesOf(form) {
  const text = form.elements.rules.value.trim();
  let rules = null;
  if (text) {
    try { rules = JSON.parse(text); } catch (err) { throw new Error(`rule changes: not valid JSON (${err.message})`); }
  }
  const seed = form.elements.seed.value.trim();
  return {preset: form.elements.preset.value || null, rules, seed: seed === "" ? null : Number(seed)};
}

function speedDelay(view) {
  return 1000 / Number($(".speed", view.root).value);
}

function bindSpeed(view) {
  const speed = $(".speed", view.root);
  const label = $(".speed-label", view.root);
  speed.addEventListener("input", () => { label.textContent = `${speed.value} moves/s`; });
}

function stopRunning(view) {
  clearTimeout(view.timer);
  view.timer = null;
  $(".run", view.root).textContent = "Play";
  view.root.dataset.running = "false";
}

async function review(view) {
  showError(view, "");
  try {
    const response = await fetch(`/api/games/${view.data.game}/file`);
    if (!response.ok) throw new Error((await response.json()).error);
    const data = await api("POST", "/api/replay", {text: await response.text(), game: 0});
    openTab("replay");
    showReplay(data);
  } catch (err) { showError(view, err.message); }
}

// ---------------------------------------------------------------------------------------
// play: a person against an agent
// ---------------------------------------------------------------------------------------
let replying = null;  // the agent's replies being stepped through: {frames, index, timer}

function showPlay(data) {
  const view = views.play;
  const keyed = document.activeElement === document.body || view.root.contains(document.activeElement);
  stopReplies(false);
  draw(view, data);
  view.root.dataset.version = String(data.version);
  const moves = $(".moves", view.root);
  const groups = new Map();
  data.moves.forEach((move, i) => {
    const group = move.name.split(": ")[0];
    if (!groups.has(group)) groups.set(group, []);
    groups.get(group).push({...move, number: i + 1});
  });
  moves.replaceChildren(...Array.from(groups, ([group, items]) => {
    const box = document.createElement("fieldset");
    const legend = document.createElement("legend");
    legend.textContent = group;
    const explained = help.groups[group] || "";
    const line = document.createElement("p");
    line.className = "group-help";
    line.textContent = explained;
    box.append(legend, ...items.map((move) => {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "move";
      button.dataset.action = String(move.action);
      button.dataset.number = String(move.number);
      button.title = `${move.name} (key ${move.number})`;
      const key = document.createElement("kbd");
      key.textContent = String(move.number);
      button.append(key, ` ${move.label || move.name}`);
      return button;
    }), line);
    return box;
  }));
  if (data.over) view.status.textContent = `Game over: ${data.result}`;
  else if (data.moves.length) view.status.textContent = "Your move.";
  else view.status.textContent = "Waiting for the opponent.";
  if (keyed) {  // focus stays with the game: the first move, or the rematch once it is over
    view.focus = data.over ? $(".rematch", view.root) : $("button.move", moves);
    if (view.root.dataset.busy !== "true") setBusy(view, false);
  }
  if (data.replies && data.replies.length && $("#play-form [name=step]").checked) startReplies(data);
}

function replyStep() {
  const view = views.play;
  const {frames, index} = replying;
  if (index >= frames.length) { stopReplies(true); return; }
  const frame = frames[index];
  drawTable(view, frame);
  view.table.dataset.actor = String(frame.seat);  // the style sheet highlights that seat's cards
  view.root.dataset.replying = "true";
  const name = view.data.names[frame.seat];
  $(".reply-text", view.root).textContent =
    `${name}, ${index + 1} of ${frames.length}: ${frame.lines.join(" ")}`;
  $(".reply", view.root).hidden = false;
  replying.index += 1;
  replying.timer = setTimeout(replyStep, REPLY_MS);
}

const REPLY_MS = 1200;

function startReplies(data) {
  replying = {frames: data.replies, index: 0, timer: null};
  replyStep();
}

function stopReplies(redraw) {
  // the table after the last reply (the game as it is now)
  if (replying === null) return;
  clearTimeout(replying.timer);
  replying = null;
  const view = views.play;
  view.root.dataset.replying = "false";
  $(".reply", view.root).hidden = true;
  if (redraw && view.data) {
    drawTable(view, view.data);
    delete view.table.dataset.actor;
  }
}

async function reloadPlay() {
  const view = views.play;
  if (!view.data) return;
  try { showPlay(await api("GET", `/api/games/${view.data.game}`)); } catch (err) { showError(view, err.message); }
}

async function sendMove(action) {
  const view = views.play;
  const data = view.data;
  if (!data || view.root.dataset.busy === "true") return;
  stopReplies(true);
  if (!data.moves.some((move) => move.action === action)) {  // only the legal moves it was sent
    showError(view, `move ${action} is not one of your legal moves now`);
    return;
  }
  showError(view, "");
  setBusy(view, true);
  const start = performance.now();
  try {
    showPlay(await api("POST", `/api/games/${data.game}/move`, {action, version: data.version}));
    performance.measure("move", {start});  // from the click to the new table (benchmarks/web_latency.py)
  } catch (err) {
    showError(view, err.message);
    await reloadPlay();
  } finally { setBusy(view, false); }
}

async function startPlay(body) {
  const view = views.play;
  showError(view, "");
  setBusy(view, true);
  try { showPlay(await api("POST", "/api/play", body)); } catch (err) { showError(view, err.message); }
  finally { setBusy(view, false); }
}

$("#play-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = event.target;
  try {
    startPlay({opponent: form.elements.opponent.value.trim(), seat: Number(form.elements.seat.value),
               ...rulesOf(form)});
  } catch (err) { showError(views.play, err.message); }
});
$(".moves", views.play.root).addEventListener("click", (event) => {
  const button = event.target.closest("button.move");
  if (button && !button.disabled) sendMove(Number(button.dataset.action));
});
$$(".rematch", views.play.root).forEach((button) => button.addEventListener("click", async () => {
  const view = views.play;
  setBusy(view, true);
  try {
    showPlay(await api("POST", `/api/games/${view.data.game}/rematch`, {swap: button.classList.contains("swap")}));
  } catch (err) { showError(view, err.message); } finally { setBusy(view, false); }
}));
$(".review", views.play.root).addEventListener("click", () => review(views.play));
$(".reply-skip", views.play.root).addEventListener("click", () => stopReplies(true));
$(".reply-next", views.play.root).addEventListener("click", () => {
  if (replying === null) return;
  clearTimeout(replying.timer);
  replyStep();
});

// keys: a move's number plays it (two digits when there are ten moves or more: the second
// within a moment, or Enter); Escape skips the replies; ? opens how to play
let typed = "";
let typedTimer = null;

function playTyped() {
  clearTimeout(typedTimer);
  const number = Number(typed);
  typed = "";
  const button = $(`#play button.move[data-number="${number}"]`);
  if (button && !button.disabled) sendMove(Number(button.dataset.action));
}

document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.target.closest("input, textarea, select")) return;
  if (event.key === "?") {
    const how = $("#how-to-play");
    how.open = !how.open;
    if (how.open) how.scrollIntoView({block: "start"});
    event.preventDefault();
    return;
  }
  if (shown !== "play" || !views.play.data) return;
  if (event.key === "Escape") { stopReplies(true); return; }
  if (event.key === "Enter" && typed) { event.preventDefault(); playTyped(); return; }
  if (!/^[0-9]$/.test(event.key)) return;
  event.preventDefault();
  typed += event.key;
  const count = views.play.data.moves.length;
  clearTimeout(typedTimer);
  if (Number(typed) * 10 > count) playTyped();  // no longer number starts with these digits
  else typedTimer = setTimeout(playTyped, 700);
});

// ---------------------------------------------------------------------------------------
// watch: two agents
// ---------------------------------------------------------------------------------------
function showWatch(data) {
  const view = views.watch;
  draw(view, data);
  view.root.dataset.version = String(data.version);
  view.status.textContent = data.over ? `Game over: ${data.result}` : (data.last || "The cards are dealt.");
  $(".step", view.root).disabled = data.over;
  $(".run", view.root).disabled = data.over;
  if (data.over) stopRunning(view);
}

async function watchStep() {
  const view = views.watch;
  const data = view.data;
  if (!data || data.over || view.root.dataset.busy === "true") return;
  setBusy(view, true);
  try {
    showWatch(await api("POST", `/api/games/${data.game}/step`, {version: data.version}));
  } catch (err) {
    showError(view, err.message);
    stopRunning(view);
    try { showWatch(await api("GET", `/api/games/${data.game}`)); } catch (_) { /* the error is shown */ }
  } finally {
    setBusy(view, false);
    $(".step", view.root).disabled = view.data.over;
    $(".run", view.root).disabled = view.data.over;
  }
  if (view.timer !== null && !view.data.over) view.timer = setTimeout(watchStep, speedDelay(view));
}

$("#watch-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const view = views.watch;
  const form = event.target;
  stopRunning(view);
  showError(view, "");
  try {
    const body = {agents: [form.elements.agent0.value.trim(), form.elements.agent1.value.trim()], ...rulesOf(form)};
    showWatch(await api("POST", "/api/watch", body));
  } catch (err) { showError(view, err.message); }
});
$(".step", views.watch.root).addEventListener("click", () => { stopRunning(views.watch); watchStep(); });
$(".run", views.watch.root).addEventListener("click", () => {
  const view = views.watch;
  if (view.timer !== null) { stopRunning(view); return; }
  $(".run", view.root).textContent = "Pause";
  view.root.dataset.running = "true";
  view.timer = setTimeout(watchStep, 0);
});
$$(".rematch", views.watch.root).forEach((button) => button.addEventListener("click", async () => {
  const view = views.watch;
  stopRunning(view);
  try {
    showWatch(await api("POST", `/api/games/${view.data.game}/rematch`, {swap: button.classList.contains("swap")}));
  } catch (err) { showError(view, err.message); }
}));
$(".review", views.watch.root).addEventListener("click", () => review(views.watch));
bindSpeed(views.watch);

// ---------------------------------------------------------------------------------------
// replay: a saved game, with a timeline
// ---------------------------------------------------------------------------------------
const frames = new Map();  // step -> payload, of the replay shown
let wanted = 0;

function showReplay(data) {
  const view = views.replay;
  if (!view.data || view.data.game !== data.game) frames.clear();
  frames.set(data.step, data);
  draw(view, data);
  const timeline = $(".timeline", view.root);
  timeline.max = String(data.steps);
  timeline.value = String(data.step);
  view.root.dataset.step = String(data.step);
  $(".position", view.root).textContent = `step ${data.step} / ${data.steps}`;
  view.status.textContent = data.over ? `Game over: ${data.result}` : (data.last || "The cards are dealt.");
}

async function goTo(step) {
  const view = views.replay;
  if (!view.data) return;
  step = Math.max(0, Math.min(view.data.steps, step));
  wanted = step;
  if (frames.has(step)) { showReplay(frames.get(step)); return; }
  try {
    const data = await api("GET", `/api/games/${view.data.game}/frames/${step}`);
    frames.set(step, data);
    if (wanted === step) showReplay(data);  // a later scrub wins over a slower answer
  } catch (err) { showError(view, err.message); }
}

function replayTick() {
  const view = views.replay;
  if (!view.data || view.data.step >= view.data.steps) { stopRunning(view); return; }
  goTo(view.data.step + 1).then(() => {
    if (view.timer !== null) view.timer = setTimeout(replayTick, speedDelay(view));
  });
}

$("#replay-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const view = views.replay;
  const form = event.target;
  stopRunning(view);
  showError(view, "");
  try {
    const file = form.elements.file.files[0];
    const text = file ? await file.text() : form.elements.text.value;
    if (!text.trim()) throw new Error("choose a game file or paste one");
    const data = await api("POST", "/api/replay", {text, game: Number(form.elements.game.value || 0)});
    frames.clear();
    wanted = 0;
    showReplay(data);
  } catch (err) { showError(view, err.message); }
});
{
  const root = views.replay.root;
  $(".timeline", root).addEventListener("input", (event) => goTo(Number(event.target.value)));
  $(".first", root).addEventListener("click", () => goTo(0));
  $(".prev", root).addEventListener("click", () => goTo(wanted - 1));
  $(".next", root).addEventListener("click", () => goTo(wanted + 1));
  $(".last", root).addEventListener("click", () => goTo(views.replay.data ? views.replay.data.steps : 0));
  $(".run", root).addEventListener("click", () => {
    const view = views.replay;
    if (view.timer !== null) { stopRunning(view); return; }
    if (view.data && view.data.step >= view.data.steps) goTo(0);
    $(".run", root).textContent = "Pause";
    root.dataset.running = "true";
    view.timer = setTimeout(replayTick, 0);
  });
  bindSpeed(views.replay);
}

// ---------------------------------------------------------------------------------------
// tabs and options
// ---------------------------------------------------------------------------------------
let shown = "play";  // the open tab

function openTab(name) {
  shown = name;
  for (const button of $$("nav [role=tab]")) button.setAttribute("aria-selected", String(button.dataset.tab === name));
  for (const [key, view] of Object.entries(views)) view.root.hidden = key !== name;
  if (name !== "watch") stopRunning(views.watch);
  if (name !== "replay") stopRunning(views.replay);
  remember();
}

function remember() {
  // the address names the open tab and its game (#play/ID): a reload or a second tab opens it again
  const data = views[shown].data;
  const hash = data ? `#${shown}/${data.game}` : `#${shown}`;
  if (location.hash !== hash) history.replaceState(null, "", hash);
}

async function reopen() {
  const [tab, game] = location.hash.slice(1).split("/");
  if (!(tab in views)) return;
  openTab(tab);
  if (!game) return;
  try {
    const data = await api("GET", `/api/games/${encodeURIComponent(game)}`);
    const show = {play: showPlay, watch: showWatch, replay: showReplay}[data.kind];
    openTab(data.kind);
    show(data);
  } catch (err) { showError(views[tab], err.message); }
}

$$("nav [role=tab]").forEach((button) => button.addEventListener("click", () => openTab(button.dataset.tab)));

function showHelp(text) {
  // sections of paragraphs; a paragraph indented four spaces is a drawing
  $("#how-to-play .how-text").replaceChildren(...text.sections.map(([title, paragraphs]) => {
    const part = document.createElement("section");
    const heading = document.createElement("h2");
    heading.textContent = title;
    part.append(heading, ...paragraphs.map((paragraph) => {
      const drawn = paragraph.startsWith("    ");
      const block = document.createElement(drawn ? "pre" : "p");
      block.textContent = drawn ? paragraph.slice(4) : paragraph;
      return block;
    }));
    return part;
  }));
}

(() => {
  try {
    const options = JSON.parse($("#options").textContent);  // written into the page by the server
    $("#agent-list").replaceChildren(...options.agents.map((agent) => {
      const option = document.createElement("option");
      option.value = agent.name;
      option.label = agent.doc;
      return option;
    }));
    for (const select of $$("select.presets")) {
      select.replaceChildren(...options.presets.map((name) => {
        const option = document.createElement("option");
        option.value = name;
        option.textContent = name === "default" ? "default (R1)" : name;
        return option;
      }));
    }
    help = options.how_to_play;
    showHelp(help);
    document.body.dataset.ready = "true";
    performance.mark("ready");  // the page can be used (benchmarks/web_latency.py)
  } catch (err) { showError(views.play, `cannot load the options: ${err.message}`); }
  reopen();
})();
