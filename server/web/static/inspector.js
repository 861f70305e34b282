// The inspector page: plain JavaScript over the JSON API (POST tokenize, GET tokenizers, GET
// tokenizers/{ref}/lint, GET diff). Pieces carry lint marks (unreachable, glitch candidate,
// partial UTF-8: docs/lint.md); two versions of one tokenizer get a version-diff panel.
// State can come from the query string (?a=o200k_base&b=mytok@2&text=...&add_special=1), so
// a view can be linked to and screenshots are reproducible. A registry tokenizer is picked by
// name and then version or alias (the references Encode takes: name, name@7, name@stable).
"use strict";

const SAMPLE = "Tokenizers split text into pieces: \"unbelievably\" → ?\n" +
  "Größe, 東京, emoji 🙂 and  two  spaces.<|endoftext|>";
const COLOURS = 6;
const $ = (id) => document.getElementById(id);
let sequence = 0;  // the newest update; older answers are dropped
let timer = 0;
let listing = new Map();  // name -> its /tokenizers entry (versions, latest_version, aliases)
const SIDES = [["tok-a", "ver-a"], ["tok-b", "ver-b"]];
// The finding kinds marked on pieces, and their CSS class.
const MARKS = {"unreachable": "lint-unreachable", "glitch-candidate": "lint-glitch",
  "partial-utf8": "lint-partial"};
const lints = new Map();  // resolved ref -> Promise of its lint (full depth), asked once
const diffs = new Map();  // "a b" -> Promise of their diff, asked once

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify(body),
  };
  const response = await fetch(path, init);
  const data = await response.json();
  if (!response.ok) {
    throw new Error(data.error ? data.error.message : response.statusText);
  }
  return data;
}

// A GET asked once per page, its answer kept; a refusal resolves to {error} (shown in its
// place, never thrown) and is asked again on the next update (the server may have been busy:
// it runs --max-lint-calls at once, so the page asks for one lint or diff at a time).
function once(cache, key, path) {
  if (!cache.has(key)) {
    cache.set(key, api(path).catch((error) => {
      cache.delete(key);
      return {error: error.message};
    }));
  }
  return cache.get(key);
}

function lintOf(ref) {
  return once(lints, ref,
    `tokenizers/${encodeURIComponent(ref)}/lint?depth=full`);
}

function diffOf(a, b) {
  const query = new URLSearchParams({a, b});
  return once(diffs, `${a} ${b}`, `diff?${query}`);
}

// What lint says of a partial-UTF-8 token (core/lint/checks.py). The page does not ask for the
// listing (o200k_base has 1,562): a piece whose bytes alone are not UTF-8 is one, by lint's
// own test.
const PARTIAL = {kind: "partial-utf8",
  message: "bytes of a character split across tokens; not text on their own"};

// id -> the marked findings of that id (unreachable, glitch candidate).
function marksOf(lint) {
  const marks = new Map();
  for (const finding of (lint && lint.findings) || []) {
    if (!(finding.kind in MARKS) || finding.id === null) continue;
    if (!marks.has(finding.id)) marks.set(finding.id, []);
    marks.get(finding.id).push(finding);
  }
  return marks;
}

function utf8Length(text) {
  return new TextEncoder().encode(text).length;
}

function hexBytes(hex) {
  return hex.match(/../g) || [];
}

// What a piece shows: its text, "<0xNN>" for a byte-fallback piece, \xNN for partial UTF-8.
function pieceLabel(token) {
  if (token.byte_fallback) {
    return hexBytes(token.bytes).map((b) => `<0x${b.toUpperCase()}>`).join("");
  }
  if (token.text === null) {
    return hexBytes(token.bytes).map((b) => `\\x${b}`).join("");
  }
  return token.text;
}

// Spans of the ordinary pieces, in bytes of the text they cover (special pieces skipped, so
// framing tokens such as <s> do not shift the comparison).
function spans(tokens) {
  const out = [];
  let at = 0;
  for (const token of tokens) {
    const size = token.bytes.length / 2;
    out.push(token.special ? null : `${at}:${at + size}`);
    if (!token.special) {
      at += size;
    }
  }
  return out;
}

function describe(ref, token) {
  const flags = [token.special && "special", token.byte_fallback && "byte fallback",
    token.text === null && !token.byte_fallback && "partial UTF-8"].filter(Boolean);
  return `${ref} · id ${token.id} · ${JSON.stringify(pieceLabel(token))} · bytes ` +
    `${hexBytes(token.bytes).join(" ")} · [${token.start}, ${token.end})` +
    (flags.length ? ` · ${flags.join(", ")}` : "");
}

function stat(label, cls, value) {
  const span = document.createElement("span");
  span.append(`${label} `);
  const b = document.createElement("b");
  b.className = cls;
  b.textContent = value;
  span.append(b);
  return span;
}

// A token of a lint finding or a diff as a chip: its text (\xNN for partial UTF-8).
function chip(token, id, classes, title) {
  const span = document.createElement("span");
  span.className = ["chip", ...classes].join(" ");
  let text = null;
  try {
    text = new TextDecoder("utf-8", {fatal: true}).decode(
      new Uint8Array(hexBytes(token.hex).map((b) => parseInt(b, 16))));
  } catch {
    text = null;
  }
  span.textContent = text === null ? hexBytes(token.hex).map((b) => `\\x${b}`).join("") : text;
  span.title = title;
  span.dataset.id = id;
  return span;
}

// The lint strip of a panel: counts per kind that ran, the unreachable tokens (no text
// encodes to them, so they never show among the pieces) and the first glitch candidates.
function renderLint(lint) {
  const box = document.createElement("div");
  box.className = "lint-strip";
  if (!lint || lint.error) {
    box.classList.add("lint-error");
    box.textContent = `lint: ${lint ? lint.error : "not asked"}`;
    return box;
  }
  const counts = Object.entries(lint.summary).filter(([, n]) => n > 0)
    .map(([kind, n]) => `${kind} ${n}`).join(" · ");
  const head = document.createElement("p");
  head.className = "lint-counts";
  head.textContent = `lint: ${counts || "no findings"}` +
    (lint.truncated ? " (findings listed up to the server's limit)" : "");
  box.append(head);
  for (const [kind, label, most] of [["unreachable", "unreachable", 50],
    ["glitch-candidate", "glitch candidates", 10]]) {
    const found = lint.findings.filter((f) => f.kind === kind).slice(0, most);
    if (!found.length) continue;
    const row = document.createElement("p");
    row.className = `lint-list ${MARKS[kind]}-list`;
    row.append(`${label}: `);
    for (const f of found) {
      row.append(chip(f.token, f.id, ["lint", MARKS[kind]], `id ${f.id} · ${kind}: ${f.message}`));
    }
    box.append(row);
  }
  return box;
}

function renderPanel(text, answer, otherSpans, lint) {
  const marks = marksOf(lint);
  const result = answer.results[0];
  const panel = document.createElement("article");
  panel.className = "panel";
  panel.dataset.tokenizer = answer.tokenizer;
  const title = document.createElement("h2");
  title.textContent = answer.tokenizer;
  const bytes = utf8Length(text);
  const chars = [...text].length;
  const stats = document.createElement("p");
  stats.className = "stats";
  stats.append(
    stat("tokens", "count", String(result.count)),
    stat("bytes", "nbytes", String(bytes)),
    stat("bytes / token", "bpt", result.count ? (bytes / result.count).toFixed(2) : "–"),
    stat("chars / token", "cpt", result.count ? (chars / result.count).toFixed(2) : "–"),
    stat("special", "nspecial", String(result.tokens.filter((t) => t.special).length)),
    stat("byte fallback", "nfallback",
      String(result.tokens.filter((t) => t.byte_fallback).length)),
  );
  const pieces = document.createElement("div");
  pieces.className = "pieces";
  const own = spans(result.tokens);
  result.tokens.forEach((token, i) => {
    const span = document.createElement("span");
    const classes = ["piece", `c${i % COLOURS}`];
    if (token.special) classes.push("special");
    if (token.byte_fallback) classes.push("byte-fallback");
    else if (token.text === null) classes.push("partial");
    if (otherSpans && own[i] !== null && !otherSpans.has(own[i])) classes.push("differs");
    const found = token.special ? [] : [...marks.get(token.id) || []];
    if (lint && !lint.error && !token.special && !token.byte_fallback && token.text === null) {
      found.push(PARTIAL);
    }
    for (const f of found) classes.push("lint", MARKS[f.kind]);
    span.className = classes.join(" ");
    span.textContent = pieceLabel(token);
    span.title = describe(answer.tokenizer, token) +
      found.map((f) => ` · lint ${f.kind}: ${f.message}`).join("");
    if (found.length) span.dataset.lint = found.map((f) => f.kind).join(" ");
    Object.assign(span.dataset, {
      id: token.id, bytes: token.bytes, start: token.start, end: token.end,
    });
    pieces.append(span);
  });
  const ids = document.createElement("p");
  ids.className = "ids";
  ids.textContent = `ids: [${result.ids.join(", ")}]`;
  panel.append(title, stats, pieces, ids, renderLint(lint));
  return panel;
}

// The version-diff panel (two versions of one tokenizer): what changed, the tokens added and
// removed, the token count per language B / A on the server's parallel corpus.
function renderVersionDiff(diff) {
  const box = $("version-diff");
  if (!diff) {
    box.hidden = true;
    box.replaceChildren();
    return;
  }
  const title = document.createElement("h2");
  const parts = [title];
  if (diff.error) {
    title.textContent = "version diff";
    const p = document.createElement("p");
    p.className = "lint-error";
    p.textContent = diff.error;
    parts.push(p);
  } else {
    const s = diff.summary;
    title.textContent = `${diff.a} → ${diff.b}`;
    const line = document.createElement("p");
    line.className = "diff-summary";
    line.textContent = `added ${s.added} · removed ${s.removed} · ids whose bytes changed ` +
      `${s.changed} · moved ${s.moved} · merges reordered ${s.reordered_merges} · ` +
      `special-token changes ${s.special_changes} · n_vocab ${diff.n_vocab.a} → ` +
      `${diff.n_vocab.b}`;
    parts.push(line);
    for (const error of diff.errors) {
      const p = document.createElement("p");
      p.className = "diff-error";
      p.textContent = `error: ${error}`;
      parts.push(p);
    }
    for (const [key, label] of [["added", "added"], ["removed", "removed"]]) {
      if (!diff[key].length) continue;
      const row = document.createElement("p");
      row.className = `diff-tokens diff-${key}`;
      row.append(`${label} (${s[key]}${s[key] > diff[key].length ? ", first " +
        diff[key].length : ""}): `);
      for (const t of diff[key]) {
        row.append(chip(t.token, t.id, [`diff-${key}-token`], `${label} · id ${t.id}`));
      }
      parts.push(row);
    }
    const table = document.createElement("table");
    table.className = "diff-languages";
    const head = table.createTHead().insertRow();
    for (const h of ["language", diff.a, diff.b, "B / A"]) {
      const th = document.createElement("th");
      th.textContent = h;
      head.append(th);
    }
    const body = table.createTBody();
    for (const row of diff.languages) {
      const tr = body.insertRow();
      tr.dataset.language = row.language;
      for (const value of [`${row.name} (${row.language})`, row.a, row.b,
        row.ratio.toFixed(3)]) {
        tr.insertCell().textContent = String(value);
      }
      tr.classList.toggle("cheaper", row.ratio < 1);
      tr.classList.toggle("dearer", row.ratio > 1);
    }
    parts.push(table);
  }
  box.replaceChildren(...parts);
  box.hidden = false;
}

// Two references of one registry name (vtok@1 and vtok@2, or vtok@stable) that resolve to two
// different versions.
function sameTokenizer(a, b) {
  const name = (ref) => ref.split("@")[0];
  return a !== b && name(a) === name(b) && a.includes("@") && b.includes("@");
}

function render(text, answers, lintAnswers) {
  const panels = $("panels");
  const sets = answers.map((a) => new Set(spans(a.results[0].tokens).filter(Boolean)));
  panels.replaceChildren(...answers.map((answer, i) =>
    renderPanel(text, answer, answers.length === 2 ? sets[1 - i] : null, lintAnswers[i])));
  panels.classList.toggle("two", answers.length === 2);
  const diff = $("diff");
  if (answers.length === 2) {
    const [a, b] = answers.map((x) => x.results[0].count);
    const shared = [...sets[0]].filter((s) => sets[1].has(s)).length;
    diff.textContent = `${answers[0].tokenizer}: ${a} tokens · ${answers[1].tokenizer}: ${b} ` +
      `tokens · ${shared} pieces in both · ${answers[1].tokenizer} / ` +
      `${answers[0].tokenizer} = ${a ? (b / a).toFixed(2) : "–"}x`;
  }
  diff.hidden = answers.length !== 2;
}

// The version picker of one side: "latest", each alias, each version (newest first); hidden
// for built-ins, which have none.
function fillVersions(tokId, verId) {
  const entry = listing.get($(tokId).value);
  const select = $(verId);
  const versions = entry ? entry.versions : [];
  const options = versions.length ? [new Option(`latest (v${entry.latest_version})`, "")] : [];
  for (const [alias, version] of Object.entries(entry ? entry.aliases : {}).sort()) {
    options.push(new Option(`@${alias} (v${version})`, alias));
  }
  for (const version of [...versions].reverse()) {
    options.push(new Option(`v${version}`, String(version)));
  }
  select.replaceChildren(...options);
  select.closest(".version").hidden = options.length === 0;
}

// The reference a side asks for: "name", "name@7" or "name@alias"; "" for no tokenizer.
function reference(tokId, verId) {
  const name = $(tokId).value;
  const version = $(verId).closest(".version").hidden ? "" : $(verId).value;
  return name && version ? `${name}@${version}` : name;
}

// Show ``ref`` (from the query string) on one side: its name, then its version or alias.
function pick(tokId, verId, ref) {
  const at = ref.indexOf("@");
  $(tokId).value = at < 0 ? ref : ref.slice(0, at);
  fillVersions(tokId, verId);
  if (at < 0) return;
  const wanted = ref.slice(at + 1);
  if (![...$(verId).options].some((o) => o.value === wanted)) {
    // Not listed: ask for it anyway, so the API's refusal (404, naming what exists) shows.
    $(verId).add(new Option(`@${wanted} (not listed)`, wanted));
    $(verId).closest(".version").hidden = false;
  }
  $(verId).value = wanted;
}

async function update() {
  const mine = ++sequence;
  document.body.dataset.busy = "1";
  const text = $("text").value;
  const refs = SIDES.map(([tok, ver]) => reference(tok, ver)).filter(Boolean);
  const body = (ref) => ({
    tokenizer: ref,
    texts: [text],
    add_special_tokens: $("add-special").checked,
    special_tokens: $("allow-special").checked ? {allow_all: true} : {disallowed_mode: "none"},
  });
  try {
    const answers = await Promise.all(refs.map((ref) => api("tokenize", body(ref))));
    const resolved = answers.map((a) => a.tokenizer);
    const lintAnswers = [];
    for (const ref of resolved) lintAnswers.push(await lintOf(ref));  // one at a time
    const versionDiff = resolved.length === 2 && sameTokenizer(...resolved) ?
      await diffOf(...resolved) : null;
    if (mine !== sequence) return;
    render(text, answers, lintAnswers);
    renderVersionDiff(versionDiff);
    $("error").hidden = true;
  } catch (error) {
    if (mine !== sequence) return;
    $("panels").replaceChildren();
    renderVersionDiff(null);
    $("diff").hidden = true;
    $("error").textContent = error.message;
    $("error").hidden = false;
  }
  $("panels").dataset.text = text;  // what is shown now (the tests wait for it)
  document.body.dataset.busy = "0";
}

function later() {
  clearTimeout(timer);
  timer = setTimeout(update, 200);
}

async function start() {
  const params = new URLSearchParams(location.search);
  try {
    const entries = (await api("tokenizers")).tokenizers;
    listing = new Map(entries.map((t) => [t.name, t]));
  } catch (error) {
    $("error").textContent = `could not list the tokenizers: ${error.message}`;
    $("error").hidden = false;
  }
  const names = [...listing.keys()];
  for (const select of [$("tok-a"), $("tok-b")]) {
    for (const name of names) select.add(new Option(name, name));
  }
  pick("tok-a", "ver-a",
    params.get("a") || (names.includes("o200k_base") ? "o200k_base" : names[0] || ""));
  pick("tok-b", "ver-b", params.get("b") || "");
  $("text").value = params.get("text") ?? SAMPLE;
  $("add-special").checked = params.get("add_special") === "1";
  $("text").addEventListener("input", later);
  for (const [tok, ver] of SIDES) {
    $(tok).addEventListener("change", () => {
      fillVersions(tok, ver);
      update();
    });
  }
  for (const id of ["ver-a", "ver-b", "allow-special", "add-special"]) {
    $(id).addEventListener("change", update);
  }
  $("panels").addEventListener("mouseover", (event) => {
    const piece = event.target.closest(".piece, .chip");
    if (piece) $("hover").textContent = piece.title;
  });
  document.body.dataset.ready = "1";
  await update();
}

start();
