// The live board of bl serve. Plain JavaScript, no build step: it fetches
// /api/board, draws it, and redraws whenever /api/events (Server-Sent
// Events) reports a change. Every piece of user text is set with
// textContent, never parsed as HTML.
"use strict";

(function () {
  const LANES = [
    ["claimable", "Claimable"],
    ["waiting", "Waiting"],
    ["claimed", "Claimed"],
    ["review", "Review"],
    ["blocked", "Blocked"],
    ["done", "Done"],
  ];
  const FILTERS = ["q", "status", "phase", "label", "owner"];
  const csrfMeta = document.querySelector('meta[name="bl-csrf"]');
  const csrf = csrfMeta ? csrfMeta.content : "";

  let board = null; // the last /api/board answer
  let skew = 0; // server clock minus this browser's, in ms
  let inFlight = false;
  let again = false;
  let source = null;
  let selected = "";

  // For tests and measurements: what the page has seen.
  window.blBoard = { renders: 0, events: 0, lastCursor: "", delays: [] };

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function now() {
    return Date.now() + skew;
  }

  // rel says how long ago (or in how long) t is: "3m ago", "in 40s".
  function rel(t) {
    const ms = Date.parse(t) - now();
    const a = Math.abs(ms) / 1000;
    let s;
    if (a < 1) s = "now";
    else if (a < 60) s = Math.round(a) + "s";
    else if (a < 3600) s = Math.round(a / 60) + "m";
    else if (a < 86400) s = Math.round(a / 3600) + "h";
    else s = Math.round(a / 86400) + "d";
    if (s === "now") return s;
    return ms < 0 ? s + " ago" : "in " + s;
  }

  // time builds a <time> showing t relative, exact on hover.
  function time(t, prefix) {
    const e = el("time");
    e.dateTime = t;
    e.dataset.t = t;
    e.dataset.prefix = prefix || "";
    e.title = new Date(t).toISOString();
    e.textContent = (prefix || "") + rel(t);
    return e;
  }

  // expiredKey names the claimed cards whose lease has run out now, so
  // the clock alone (no event) can redraw a lease that just expired.
  let drawnExpired = "";
  function expiredKey() {
    return board ? board.cards.filter(expired).map((c) => c.id).join(" ") : "";
  }

  function tick() {
    if (board && expiredKey() !== drawnExpired) {
      render();
      return;
    }
    for (const e of document.querySelectorAll("time[data-t]")) {
      e.textContent = e.dataset.prefix + rel(e.dataset.t);
    }
  }

  function params() {
    return new URLSearchParams(location.search);
  }

  function filtersFromURL() {
    const p = params();
    const f = {};
    for (const k of FILTERS) f[k] = p.get(k) || "";
    selected = p.get("card") || "";
    return f;
  }

  function setURL(mut) {
    const p = params();
    mut(p);
    const q = p.toString();
    history.replaceState(null, "", location.pathname + (q ? "?" + q : ""));
  }

  const claimableSet = () => new Set(board.claimable);

  // laneOf is where a card sits: its state as the server derived it, the
  // one bl list --json prints (ready is claimable now; waiting is ready
  // but held back by a dependency, a deferral, an open child or paths
  // another card holds); a claimed card whose lease ran out is claimable
  // too, and stays in Claimed, flagged.
  const LANE_OF_STATE = { ready: "claimable", expired: "claimed" };
  function laneOf(c, claimable) {
    if (c.state) return LANE_OF_STATE[c.state] || c.state;
    if (c.status === "ready") return claimable.has(c.id) ? "claimable" : "waiting";
    return c.status;
  }

  function expired(c) {
    return c.status === "claimed" && (!c.lease_expires_at || Date.parse(c.lease_expires_at) <= now());
  }

  function matches(c, f, lane) {
    if (f.status && lane !== f.status) return false;
    if (f.phase && (c.phase || "") !== f.phase) return false;
    if (f.label && !(c.labels || []).includes(f.label)) return false;
    if (f.owner && !(c.status === "claimed" && c.claim_owner === f.owner)) return false;
    if (f.q) {
      const hay = [c.id, c.title, c.body, c.phase, c.claim_owner].concat(c.labels || []).join("\n").toLowerCase();
      if (!hay.includes(f.q.toLowerCase())) return false;
    }
    return true;
  }

  function fillSelect(id, values, current) {
    const s = document.getElementById(id);
    const keep = s.options[0];
    s.replaceChildren(keep);
    const all = Array.from(new Set(values.filter((v) => v))).sort();
    if (current && !all.includes(current)) all.push(current);
    for (const v of all) {
      const o = el("option", "", v);
      o.value = v;
      s.appendChild(o);
    }
    s.value = current;
  }

  function cardEl(c, lane, byID) {
    const a = el("article", "card " + lane);
    a.dataset.id = c.id;
    a.dataset.lane = lane;
    a.tabIndex = 0;
    if (expired(c)) a.classList.add("expired");
    const head = el("div", "head");
    head.append(el("span", "id", c.id));
    if (c.status === "claimed") head.append(el("span", "owner", c.claim_owner + " #" + c.claim_epoch));
    head.append(el("span", "pri", "P" + c.priority));
    head.querySelector(".pri").title = "priority";
    a.append(head, el("div", "title", c.title));
    const meta = el("div", "meta");
    for (const l of c.labels || []) meta.append(el("span", "tag", l));
    if (c.assignee) meta.append(el("span", "assignee", "for " + c.assignee));
    if (c.status === "claimed") {
      if (expired(c)) meta.append(el("span", "flag", "lease expired"));
      if (c.lease_expires_at) meta.append(time(c.lease_expires_at, expired(c) ? "expired " : "lease ends "));
      if (c.progress != null) meta.append(el("span", "", c.progress + "%"));
    } else if (lane === "waiting") {
      const deps = c.waiting_on || (c.depends_on || []).filter((d) => !byID[d] || byID[d].status !== "done");
      if (deps.length) meta.append(el("span", "flag wait", "waits on " + deps.join(", ")));
      if (c.paths_held_by) meta.append(el("span", "flag wait", "paths held by " + c.paths_held_by));
      if (c.waiting_children) meta.append(el("span", "flag wait", "waits on " + c.waiting_children + (c.waiting_children === 1 ? " child" : " children")));
      if (c.defer_until && Date.parse(c.defer_until) > now()) meta.append(time(c.defer_until, "deferred until "));
    } else if (c.status === "review") {
      meta.append(el("span", "", c.claim_owner ? "reviewer " + c.claim_owner : "sent by " + (c.submitted_by || "-")));
    } else if (c.status === "blocked" && c.blocked_reason) {
      meta.append(el("span", "", c.blocked_reason));
    } else if (c.status === "done" && c.closed_at) {
      meta.append(time(c.closed_at, "done "));
    }
    if (!meta.childNodes.length) meta.append(time(c.updated_at, "updated "));
    a.append(meta);
    a.addEventListener("click", () => openDetail(c.id));
    a.addEventListener("keydown", (e) => {
      if (e.key === "Enter") openDetail(c.id);
    });
    return a;
  }

  function render() {
    if (!board) return;
    const f = filtersFromURL();
    const claimable = claimableSet();
    const byID = {};
    for (const c of board.cards) byID[c.id] = c;
    fillSelect("f-phase", board.cards.map((c) => c.phase || ""), f.phase);
    fillSelect("f-label", board.cards.flatMap((c) => c.labels || []), f.label);
    fillSelect("f-owner", board.cards.filter((c) => c.status === "claimed").map((c) => c.claim_owner), f.owner);
    document.getElementById("f-status").value = f.status;
    const q = document.getElementById("f-q");
    if (document.activeElement !== q) q.value = f.q;

    const lanes = document.getElementById("lanes");
    const out = [];
    const counts = {};
    let shown = 0;
    for (const [key, name] of LANES) {
      const lane = el("div", "lane " + key);
      lane.dataset.lane = key;
      const h = el("h3", "", name);
      const n = el("span", "n");
      h.append(n);
      lane.append(h);
      const cards = board.cards.filter((c) => laneOf(c, claimable) === key);
      counts[key] = cards.length;
      const visible = cards.filter((c) => matches(c, f, key));
      shown += visible.length;
      n.textContent = visible.length === cards.length ? String(cards.length) : visible.length + "/" + cards.length;
      const phases = Array.from(new Set(visible.map((c) => c.phase || ""))).sort((a, b) =>
        a === "" ? 1 : b === "" ? -1 : a.localeCompare(b, undefined, { numeric: true }),
      );
      if (!visible.length) lane.append(el("p", "none", "No cards."));
      for (const p of phases) {
        if (phases.length > 1 || p) lane.append(el("h4", "", p ? "Phase " + p : "No phase"));
        for (const c of visible) if ((c.phase || "") === p) lane.append(cardEl(c, key, byID));
      }
      out.push(lane);
    }
    lanes.replaceChildren(...out);

    const cnt = document.getElementById("counts");
    cnt.replaceChildren(el("b", "", board.cards.length + " cards"));
    for (const [key, name] of LANES) cnt.append(" · " + counts[key] + " " + name.toLowerCase());
    if (shown !== board.cards.length) cnt.append(" · " + shown + " shown");

    renderAgents();
    renderConflicts();
    if (selected && byID[selected] && !document.getElementById("detail").hidden) renderDetail(byID[selected], false);
    drawnExpired = expiredKey();
    window.blBoard.renders++;
  }

  function renderAgents() {
    const owners = {};
    for (const c of board.cards) {
      if (c.status !== "claimed") continue;
      (owners[c.claim_owner] = owners[c.claim_owner] || []).push(c);
    }
    const box = document.getElementById("agents");
    const names = Object.keys(owners).sort();
    if (!names.length) {
      box.replaceChildren(el("p", "none", "Nobody holds a card."));
      return;
    }
    const out = [];
    for (const o of names) {
      const cards = owners[o];
      const d = el("div", "agent");
      d.dataset.owner = o;
      const who = el("div", "who", o);
      // Silent: no heartbeat (nor claim) from this owner for a whole TTL.
      let last = 0;
      let ttl = 0;
      for (const c of cards) {
        last = Math.max(last, Date.parse(c.last_heartbeat_at || c.claimed_at || c.updated_at));
        ttl = Math.max(ttl, (c.claim_ttl_seconds || 0) * 1000);
      }
      if (ttl && now() - last > ttl) who.append(" ", el("span", "flag silent", "silent"));
      d.append(who);
      const hb = el("div", "");
      hb.append("last heartbeat ", time(new Date(last).toISOString()));
      d.append(hb);
      const ul = el("ul");
      for (const c of cards) {
        const li = el("li");
        li.append(el("b", "", c.id), " epoch " + c.claim_epoch + ", ");
        if (expired(c)) li.append(el("span", "flag", "lease expired"));
        else if (c.lease_expires_at) li.append(time(c.lease_expires_at, "lease ends "));
        ul.append(li);
      }
      d.append(ul);
      out.push(d);
    }
    box.replaceChildren(...out);
  }

  function renderConflicts() {
    const box = document.getElementById("conflicts");
    if (!board.conflicts.length) {
      box.replaceChildren(el("p", "none", "None."));
      return;
    }
    box.replaceChildren(
      ...board.conflicts.slice(-20).map((c) => {
        const d = el("div", "conflict");
        d.append(el("b", "", c.op + " " + c.card), " by " + c.actor + ": " + c.reason);
        return d;
      }),
    );
  }

  function row(dl, k, v) {
    if (v === undefined || v === null || v === "" || (Array.isArray(v) && !v.length)) return;
    dl.append(el("dt", "", k));
    const dd = el("dd");
    if (v instanceof Node) dd.append(v);
    else dd.textContent = Array.isArray(v) ? v.join(", ") : typeof v === "object" ? JSON.stringify(v) : String(v);
    dl.append(dd);
  }

  // noteText renders one note whatever its shape: a string, or an object
  // with text (or body) and optional author and time.
  function noteEl(n) {
    const li = el("li");
    if (typeof n === "string") {
      li.textContent = n;
      return li;
    }
    const text = n.text ?? n.body ?? n.note ?? JSON.stringify(n);
    const who = n.actor || n.author || n.by || "";
    const at = n.at || n.created_at || "";
    if (at) li.append(time(at), " ");
    if (who) li.append(el("b", "", who), ": ");
    li.append(String(text));
    return li;
  }

  async function openDetail(id) {
    selected = id;
    setURL((p) => p.set("card", id));
    const c = board.cards.find((x) => x.id === id);
    document.getElementById("detail").hidden = false;
    if (c) renderDetail(c, true);
  }

  function closeDetail() {
    selected = "";
    setURL((p) => p.delete("card"));
    document.getElementById("detail").hidden = true;
  }

  async function renderDetail(c, withHistory) {
    const body = document.getElementById("d-body");
    const keepHistory = !withHistory && body.dataset.id === c.id ? body.querySelector(".history-box") : null;
    body.dataset.id = c.id;
    const h = el("h2", "", c.id + " · " + c.title);
    h.id = "d-title";
    const dl = el("dl");
    const claimable = claimableSet();
    row(dl, "status", laneOf(c, claimable) === "waiting" ? "ready (waiting)" : c.status);
    row(dl, "priority", c.priority);
    row(dl, "phase", c.phase);
    row(dl, "labels", c.labels);
    row(dl, "assignee", c.assignee);
    row(dl, "depends on", c.depends_on);
    row(dl, "parent", c.parent);
    row(dl, "body", c.body);
    row(dl, "acceptance", c.acceptance);
    if (c.status === "claimed") {
      row(dl, "owner", c.claim_owner + " (epoch " + c.claim_epoch + ")");
      if (c.lease_expires_at) row(dl, "lease", time(c.lease_expires_at, expired(c) ? "expired " : "ends "));
      if (c.last_heartbeat_at) row(dl, "last heartbeat", time(c.last_heartbeat_at));
      row(dl, "progress", c.progress != null ? c.progress + "%" : "");
    }
    row(dl, "attempts", c.attempts + (c.max_attempts ? " of " + c.max_attempts : ""));
    if (c.defer_until) row(dl, "deferred until", time(c.defer_until));
    row(dl, "blocked", c.blocked_reason);
    if (c.closed_at) row(dl, "closed", time(c.closed_at));
    row(dl, "closed by", c.closed_by);
    row(dl, "close note", c.close_note);
    if (c.status === "review") row(dl, "review", "sent by " + (c.submitted_by || "-") + (c.claim_owner ? ", reviewer " + c.claim_owner + " (epoch " + c.claim_epoch + ")" : ""));
    row(dl, "rejected", c.reject_reason);
    if (c.last_failure) row(dl, "last failure", c.last_failure.reason + " (" + (c.last_failure.owner || "-") + ", epoch " + c.last_failure.epoch + ")");
    row(dl, "paths", c.paths);
    row(dl, "branch", c.branch);
    row(dl, "commit", c.commit);
    row(dl, "checkpoint", c.checkpoint);
    row(dl, "created", time(c.created_at));
    row(dl, "updated", time(c.updated_at));
    row(dl, "version", c.version);
    const parts = [h, dl];
    if (csrf) parts.push(actions(c));
    if (Array.isArray(c.notes) && c.notes.length) {
      parts.push(el("h3", "", "Notes"));
      const ul = el("ul", "notes");
      for (const n of c.notes) ul.append(noteEl(n));
      parts.push(ul);
    }
    const mine = board.conflicts.filter((x) => x.card === c.id);
    if (mine.length) {
      parts.push(el("h3", "", "Conflicts"));
      for (const x of mine) parts.push(el("div", "conflict", x.op + " by " + x.actor + " at " + x.at + ": " + x.reason));
    }
    const hist = keepHistory || el("div", "history-box");
    parts.push(hist);
    body.replaceChildren(...parts);
    if (withHistory || !keepHistory) loadHistory(c.id, hist);
  }

  async function loadHistory(id, box) {
    box.replaceChildren(el("h3", "", "History"), el("p", "none", "Loading…"));
    try {
      const r = await fetch("/api/cards/" + encodeURIComponent(id) + "/history");
      const evs = await r.json();
      if (!r.ok) throw new Error(evs.error || r.statusText);
      const t = el("table", "history");
      for (const e of evs) {
        const tr = el("tr", e.conflict ? "conflict" : "");
        const td = el("td");
        td.append(time(e.at));
        let what = e.op;
        if (e.owner) what += " " + e.owner;
        if (e.epoch) what += " #" + e.epoch;
        if (e.reason) what += ": " + e.reason;
        if (e.text) what += ": " + e.text;
        if (e.fields && e.fields.title) what += " “" + e.fields.title + "”";
        if (e.conflict) what += " — CONFLICT: " + e.conflict.reason;
        tr.append(td, el("td", "", e.actor), el("td", "", what));
        t.append(tr);
      }
      box.replaceChildren(el("h3", "", "History"), t);
    } catch (err) {
      box.replaceChildren(el("h3", "", "History"), el("p", "error", String(err.message || err)));
    }
  }

  function actions(c) {
    const d = el("div", "actions");
    const msg = el("span", "error");
    const post = async (action, payload) => {
      msg.textContent = "";
      const r = await fetch("/api/cards/" + encodeURIComponent(c.id) + "/" + action, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-BL-CSRF": csrf },
        body: JSON.stringify(payload || {}),
      });
      if (!r.ok) {
        const e = await r.json().catch(() => ({ error: r.statusText }));
        msg.textContent = e.error;
      }
      refresh();
    };
    const btn = (label, fn) => {
      const b = el("button", "", label);
      b.type = "button";
      b.addEventListener("click", fn);
      d.append(b);
    };
    if (c.status !== "blocked" && c.status !== "done")
      btn("Block…", () => {
        const reason = prompt("Why is " + c.id + " blocked?");
        if (reason !== null) post("block", { reason });
      });
    if (c.status === "blocked") btn("Unblock", () => post("unblock"));
    if (c.status === "done") btn("Reopen", () => post("reopen"));
    btn("Priority…", () => {
      const v = prompt("Priority of " + c.id + " (higher = sooner)", String(c.priority));
      if (v !== null && v.trim() !== "" && !isNaN(Number(v))) post("priority", { priority: Math.trunc(Number(v)) });
    });
    btn("Note…", () => {
      const text = prompt("A note for " + c.id + "'s case file");
      if (text !== null && text.trim() !== "") post("note", { text });
    });
    d.append(msg);
    return d;
  }

  async function refresh() {
    if (inFlight) {
      again = true;
      return;
    }
    inFlight = true;
    try {
      do {
        again = false;
        // A fetch that hangs (a server busy starting, a dropped
        // connection) is given up after 10 s and tried again, so the
        // first state never waits on the event stream.
        const ctl = new AbortController();
        const timer = setTimeout(() => ctl.abort(), 10000);
        let r, b;
        try {
          r = await fetch("/api/board", { cache: "no-store", signal: ctl.signal });
          b = await r.json();
        } finally {
          clearTimeout(timer);
        }
        if (!r.ok) throw new Error(b.error || r.statusText);
        skew = Date.parse(b.now) - Date.now();
        const first = board === null;
        board = b;
        render();
        if (first) {
          follow(b.cursor);
          if (selected) openDetail(selected);
        }
      } while (again);
    } catch (err) {
      document.getElementById("counts").replaceChildren(el("span", "error", "cannot load the board: " + (err.message || err) + "; trying again"));
      if (board === null) setTimeout(refresh, 1000);
    } finally {
      inFlight = false;
    }
  }

  // follow opens the event stream after cursor. The browser reconnects by
  // itself after a drop, sending the last event's id (Last-Event-ID), so
  // no event is missed; the board is fetched again on every change.
  function follow(cursor) {
    const conn = document.getElementById("conn");
    source = new EventSource("/api/events" + (cursor ? "?from=" + encodeURIComponent(cursor) : ""));
    source.onopen = () => {
      conn.className = "dot";
      conn.textContent = "live";
      refresh();
    };
    source.onerror = () => {
      conn.className = "dot off";
      conn.textContent = "reconnecting";
    };
    source.onmessage = (m) => {
      const st = window.blBoard;
      st.events++;
      st.lastCursor = m.lastEventId;
      try {
        const e = JSON.parse(m.data);
        st.delays.push(Date.now() - Date.parse(e.at));
        if (st.delays.length > 10000) st.delays.shift();
      } catch (_) {}
      refresh();
      reloadDag();
    };
  }

  let dagTimer = 0;
  function reloadDag() {
    const d = document.getElementById("dag");
    if (!d.open || dagTimer) return;
    dagTimer = setTimeout(() => {
      dagTimer = 0;
      document.getElementById("dag-frame").src = "/dag?t=" + Date.now();
    }, 1000);
  }

  function bindFilters() {
    const set = (k, v) => {
      setURL((p) => (v ? p.set(k, v) : p.delete(k)));
      render();
    };
    for (const k of ["status", "phase", "label", "owner"]) {
      document.getElementById("f-" + k).addEventListener("change", (e) => set(k, e.target.value));
    }
    document.getElementById("f-q").addEventListener("input", (e) => set("q", e.target.value));
    document.getElementById("filters").addEventListener("submit", (e) => e.preventDefault());
    document.getElementById("f-clear").addEventListener("click", () => {
      setURL((p) => FILTERS.forEach((k) => p.delete(k)));
      document.getElementById("f-q").value = "";
      render();
    });
    document.getElementById("d-close").addEventListener("click", closeDetail);
    document.getElementById("detail").addEventListener("click", (e) => {
      if (e.target.id === "detail") closeDetail();
    });
    document.addEventListener("keydown", (e) => {
      if (e.key === "Escape") closeDetail();
    });
    document.getElementById("dag").addEventListener("toggle", (e) => {
      if (e.target.open) document.getElementById("dag-frame").src = "/dag";
    });
    window.addEventListener("popstate", render);
  }

  bindFilters();
  filtersFromURL();
  refresh();
  setInterval(tick, 1000);
  // Deferred cards become claimable with time alone: ask the server again
  // now and then, even without events.
  setInterval(refresh, 15000);
})();
