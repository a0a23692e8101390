// kdebug export: the page's script. It reads the session from the JSON in #kdebug-data (written by
// kdebug/export/html.py), decodes stage texts from their edits, shows any stage of a job, diffs any
// two, and follows anchors: #job-3, #job-3/after_finish, #job-3/after_finish/L42,
// #job-3/diff/before_finish..after_finish. Nothing here reaches the network.
//
// Everything in D came from a trace, which anyone may have written: it reaches the page as text. Markup
// is built only with the html`...` template below, which escapes every value put into it; the only
// markup taken as it is are the highlighted lines of D.lines, which kdebug/export/html.py made (pygments'
// spans around escaped text) and checked. The page's Content-Security-Policy runs no other script.
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("kdebug-data").textContent);
  const jobs = new Map(D.jobs.map((j) => [j.id, j]));
  const view = document.getElementById("view");
  const state = { job: null, side: false, noise: true };

  // ---- stage texts: line ids into D.lines, each stage the edits that turn the job's previous one into it
  const decoded = new Map();
  function applyEdits(before, edits) {
    const out = [];
    let at = 0;
    for (const [start, end, lines] of edits) {
      for (let i = at; i < start; i++) out.push(before[i]);
      for (const l of lines) out.push(l);
      at = end;
    }
    for (let i = at; i < before.length; i++) out.push(before[i]);
    return out;
  }
  function stageIds(i) {
    const chain = [];
    let k = i;
    while (k >= 0 && !decoded.has(k)) { chain.push(k); k = D.snaps[k][1]; }
    let ids = k >= 0 ? decoded.get(k) : [];
    for (let c = chain.length - 1; c >= 0; c--) {
      ids = applyEdits(ids, D.snaps[chain[c]][2]);
      decoded.set(chain[c], ids);
    }
    return ids;
  }
  const plainCache = new Map();
  const ENTITIES = { "&lt;": "<", "&gt;": ">", "&amp;": "&", "&quot;": '"', "&#39;": "'", "&#x27;": "'" };
  function plain(id) {
    let p = plainCache.get(id);
    if (p === undefined) {
      p = D.lines[id].replace(/<[^>]*>/g, "").replace(/&(lt|gt|amp|quot|#39|#x27);/g, (m) => ENTITIES[m]);
      plainCache.set(id, p);
    }
    return p;
  }

  // ---- a job's stages: the passes of a phase, then the phase's own snapshot (kdebug/session/stage_diff.py)
  function stagesOf(job) {
    if (job._stages) return job._stages;
    const out = [];
    for (const [phase, snap, changed, passes] of job.stages) {
      if (passes) {
        passes.forEach(([name, unit, ch, s], k) => out.push({
          key: `${phase}:${k + 1}`, label: `${phase} ${k + 1}/${passes.length} ${D.strings[name]} on ${D.strings[unit]}`,
          phase, snap: s, changed: !!ch, pass: true }));
      }
      if (snap >= 0) out.push({ key: phase, label: phase, phase, snap, changed: !!changed, pass: false });
    }
    job._stages = out;
    return out;
  }
  function stageByKey(job, key) { return stagesOf(job).find((s) => s.key === key); }
  function defaultStage(job) {
    // the job's last phase that changed something (after_finish often changed nothing: the page
    // opened on a stage identical to the one before it); its IR first, the host assembly after
    const st = stagesOf(job).filter((s) => !s.pass);
    const last = (xs) => xs.filter((s) => s.changed).pop();
    return last(st.filter((s) => s.snap >= 0 && D.snaps[s.snap][0] === "llvm")) || last(st) || st[st.length - 1];
  }
  function previousChange(job, b) {
    const st = stagesOf(job);
    const i = st.indexOf(b);
    const target = stageIds(b.snap);
    for (let k = i - 1; k >= 0; k--) {
      const s = st[k];
      if (!s.changed || s.snap === b.snap || s.snap < 0 || D.snaps[s.snap][0] !== D.snaps[b.snap][0]) continue;
      const ids = stageIds(s.snap);
      if (ids.length !== target.length || ids.some((x, n) => x !== target[n])) return s;
    }
    return null;
  }

  // ---- the diff: Myers' O(ND) algorithm over line keys, common head and tail cut off first
  const MAX_EDITS = 4000;
  function diffOps(a, b) {
    const ops = [];  // [tag, i, j]: "=" both, "-" a only, "+" b only
    let s = 0;
    while (s < a.length && s < b.length && a[s] === b[s]) { ops.push(["=", s, s]); s++; }
    let e = 0;
    while (e < a.length - s && e < b.length - s && a[a.length - 1 - e] === b[b.length - 1 - e]) e++;
    const A = a.slice(s, a.length - e), B = b.slice(s, b.length - e);
    const pairs = myers(A, B);
    let x = 0, y = 0;
    for (const [px, py] of pairs.concat([[A.length, B.length]])) {
      while (x < px) { ops.push(["-", s + x, -1]); x++; }
      while (y < py) { ops.push(["+", -1, s + y]); y++; }
      if (px < A.length) { ops.push(["=", s + px, s + py]); x = px + 1; y = py + 1; }
    }
    for (let k = e; k > 0; k--) ops.push(["=", a.length - k, b.length - k]);
    return ops;
  }
  function myers(A, B) {  // the matched (i, j) pairs, in order; none when the edits pass MAX_EDITS
    const n = A.length, m = B.length, max = n + m;
    if (!n || !m) return [];
    const off = max + 1, v = new Int32Array(2 * max + 3), trace = [];
    let found = -1;
    outer: for (let d = 0; d <= Math.min(max, MAX_EDITS); d++) {
      trace.push(v.slice(off - d - 1, off + d + 2));
      for (let k = -d; k <= d; k += 2) {
        let x = (k === -d || (k !== d && v[off + k - 1] < v[off + k + 1])) ? v[off + k + 1] : v[off + k - 1] + 1;
        let y = x - k;
        while (x < n && y < m && A[x] === B[y]) { x++; y++; }
        v[off + k] = x;
        if (x >= n && y >= m) { found = d; break outer; }
      }
    }
    if (found < 0) return [];
    const pairs = [];
    let x = n, y = m;
    for (let d = found; d >= 0; d--) {
      const t = trace[d], at = (k) => t[k + d + 1];
      const k = x - y;
      const pk = (k === -d || (k !== d && at(k - 1) < at(k + 1))) ? k + 1 : k - 1;
      const px = d > 0 ? at(pk) : 0, py = d > 0 ? px - pk : 0;
      while (x > px && y > py) { x--; y--; pairs.push([x, y]); }
      x = px; y = py;
    }
    return pairs.reverse();
  }

  // LLVM's noise, as the TUI's Diff tab leaves it out (kdebug/session/stage_diff.py): metadata lines and
  // attachments, the module's ID, `; Function Attrs:` comments, attribute groups by content, not number
  const NOISE_LINE = /^(\s*!(?:\d+|[-\w.]+)\s*=|; ModuleID = |source_filename = |; Function Attrs: )/;
  const ATTACHMENT = /,\s*!(?!\d)[-\w.]+\s+!\d+/g;
  const GROUP = /^attributes #(\d+) = (\{.*\})\s*$/;
  function keyed(ids, noise) {  // the lines compared, their keys and their line numbers in the stage
    if (!noise) return { ids, keys: ids, at: ids.map((_, n) => n) };
    const groups = new Map();
    for (const id of ids) { const m = GROUP.exec(plain(id)); if (m) groups.set(m[1], m[2]); }
    const kept = [], keys = [], at = [];
    ids.forEach((id, n) => {
      const p = plain(id);
      if (NOISE_LINE.test(p)) return;
      kept.push(id);
      at.push(n);
      keys.push(p.replace(ATTACHMENT, "").replace(/#(\d+)\b/g, (m, g) => "#" + (groups.get(g) || g)));
    });
    return { ids: kept, keys, at };
  }

  // ---- rendering: markup only from html`...`, every value in it escaped (an array's items each, a
  // Markup as it is); a value from the trace can only ever be text
  class Markup { constructor(s) { this.s = s; } toString() { return this.s; } }
  const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "`": "&#96;" };
  const esc = (s) => String(s).replace(/[&<>"'`]/g, (c) => ESCAPES[c]);
  const part = (v) => v instanceof Markup ? v.s : Array.isArray(v) ? v.map(part).join("")
    : (v === null || v === undefined || v === false) ? "" : esc(v);
  function html(strings, ...values) {
    let out = strings[0];
    for (let i = 0; i < values.length; i++) out += part(values[i]) + strings[i + 1];
    return new Markup(out);
  }
  const lineHTML = (id) => new Markup(D.lines[id]);  // highlighted by the exporter, which escaped the text
  function show(el, markup) {  // the one way into innerHTML
    if (!(markup instanceof Markup)) throw new TypeError("only html`...` is shown");
    el.innerHTML = markup.s;
  }
  const num = (x) => typeof x === "number" && isFinite(x) ? x : 0;
  const jobLink = (id) => jobs.has(id) ? html`<a href="#job-${id}">${jobs.get(id).name} #${id}</a>` : html`#${id}`;
  const ms = (s) => s ? `${(num(s) * 1e3).toFixed(2)} ms` : "";
  // the file a kdebug run --override put in place of a phase of the job (an own key of job.edited only)
  const editedFile = (job, phase) => job.edited && Object.prototype.hasOwnProperty.call(job.edited, phase)
    ? String(job.edited[phase]) : null;

  function banner(job) {
    const facts = [
      ["state", job.state + (job.state === "compiling" && job.phase ? `: ${job.phase}` : "")],
      ["kind", job.kind], ["reason", job.reason], ["target", job.target],
      ["arguments", job.argtypes.join(", ")], ["compile time", ms(job.time)],
    ];
    if (job.file) facts.push(["source", `${job.file}:${job.line}`]);
    const dd = [];
    for (const [k, v] of facts) if (v) dd.push(html`<dt>${k}</dt><dd>${v}</dd>`);
    if (job.parent !== null) dd.push(html`<dt>requested by</dt><dd>${jobLink(job.parent)}</dd>`);
    const links = (ids) => ids.map((id, n) => html`${n ? ", " : ""}${jobLink(id)}`);
    if (job.children.length) dd.push(html`<dt>requests</dt><dd>${links(job.children)}</dd>`);
    if (job.shared.length) dd.push(html`<dt>shared</dt><dd>${links(job.shared)} (compiled under their first requester)</dd>`);
    if (job.dup !== null) dd.push(html`<dt>duplicate</dt><dd class="warn">its key was compiled before, as ${jobLink(job.dup)}</dd>`);
    if (job.cached) dd.push(html`<dt>cache</dt><dd>+${job.cached} cached</dd>`);
    if (job.round) dd.push(html`<dt>round</dt><dd>resolved in the toplevel strategy's round ${job.round}</dd>`);
    const edits = Object.keys(job.edited || {});
    if (edits.length) dd.push(html`<dt>edited</dt><dd class="edited">${edits.map((ph, n) => html`${n ? "; " : ""}${ph}: ${editedFile(job, ph)}`)}</dd>`);
    const backrefs = job.backrefs.map((b) => html`<p class="backref backref-${b.resolution}">\u21bb re-entrant request for ${jobLink(b.target)}: <b>${b.resolution}</b>, ${
      b.cycle.map((j, n) => html`${n ? " \u2192 " : ""}${jobs.has(j) ? html`<a href="#job-${j}">${b.names[n] || j}</a>` : (b.names[n] || j)}`)}</p>`);
    return html`<h2>${job.name} <span class="id">#${job.id}</span></h2><p class="key"><code>${job.key}</code></p><dl class="facts">${dd}</dl>${
      backrefs}${job.miss ? html`<p class="miss">${job.miss}</p>` : ""}${job.error ? html`<pre class="error">${job.error}</pre>` : ""}`;
  }

  function stageBar(job, current, diffing) {
    const stages = [];
    for (const [phase, snap, changed] of job.stages) {
      if (snap >= 0) {
        const file = editedFile(job, phase);
        const cls = (current && current.key === phase && !diffing ? "cur " : "") + (changed ? "" : "same") + (file !== null ? " edited" : "");
        const title = [file !== null ? `edited: ${file}` : "", changed ? "" : "changed nothing"].filter((t) => t).join(", ");
        stages.push(html`<a class="stage ${cls}" href="#job-${job.id}/${phase}" title="${title}">${changed ? "" : "= "}${phase}${
          file !== null ? html` <span class="edited">edited</span>` : ""}</a> `);
      }
    }
    const a = diffing ? diffing[0] : null;
    const diff = html`<a class="stage diff${diffing ? " cur" : ""}" href="#job-${job.id}/diff/${a ? a.key : "before_finish"}..${diffing ? diffing[1].key : "after_finish"}">diff</a>`;
    const lists = [];
    for (const [phase, , , passes] of job.stages) {
      if (!passes) continue;
      const nchanged = passes.filter((p) => p[2]).length;
      const open = current && current.pass && current.phase === phase;
      const items = passes.map(([name, unit, ch], k) => {
        const key = `${phase}:${k + 1}`;
        const cur = current && current.key === key ? " cur" : "";
        return html`<li class="${ch ? "changed" : "same"}${cur}"><a href="#job-${job.id}/${key}">${ch ? "\u25cf" : "="} ${D.strings[name]}</a> <span class="unit">${D.strings[unit]}</span></li>`;
      });
      lists.push(html`<details class="passes"${open ? html` open` : ""}><summary>${phase}: ${passes.length} passes, ${nchanged} changed the module</summary><ol>${items}</ol></details>`);
    }
    return html`<div class="stagebar"><span class="what">stages</span> ${stages}${diff}</div>${lists}`;
  }

  function codeTable(job, stage) {
    const ids = stageIds(stage.snap);
    const rows = new Array(ids.length);
    const base = `#job-${job.id}/${stage.key}/L`;
    for (let n = 0; n < ids.length; n++) {
      rows[n] = html`<tr id="L${n + 1}"><td class="n"><a href="${base}${n + 1}">${n + 1}</a></td><td class="c">${lineHTML(ids[n])}</td></tr>`;
    }
    const file = stage.pass ? null : editedFile(job, stage.phase);
    return html`${file !== null ? html`<p class="edited">edited: ${file}</p>` : ""}<p class="label">${stage.label} <span class="lang">${D.snaps[stage.snap][0]}, ${ids.length} lines${
      stage.changed ? "" : ", changed nothing"}</span></p><table class="code hl"><tbody>${rows}</tbody></table>`;
  }

  function diffView(job, a, b) {
    const st = stagesOf(job).filter((s) => s.snap >= 0);
    const select = (name, cur) => html`<select name="${name}">${st.map((s) =>
      html`<option value="${s.key}"${s === cur ? html` selected` : ""}>${s.label}${s.changed ? "" : " (=)"}${
        !s.pass && editedFile(job, s.phase) !== null ? " (edited)" : ""}</option>`)}</select>`;
    const out = html`<form class="diffbar">A ${select("a", a)} B ${select("b", b)} <label><input type="checkbox" name="side"${
      state.side ? html` checked` : ""}> side by side</label> <label><input type="checkbox" name="noise"${
      state.noise ? html` checked` : ""}> ignore metadata and attribute renumbering</label></form>`;
    if (!a || !b) return html`${out}<p>pick two stages</p>`;
    const A = keyed(stageIds(a.snap), state.noise), B = keyed(stageIds(b.snap), state.noise);
    const ops = diffOps(A.keys, B.keys);
    const changes = ops.filter((o) => o[0] !== "=").length;
    const label = html`<p class="label">${a.label} \u2192 ${b.label}: ${changes ? changes + " lines differ" : "no difference"}</p>`;
    const bl = (j) => html`<a href="#job-${job.id}/${b.key}/L${B.at[j] + 1}">${B.at[j] + 1}</a>`;
    const al = (i) => A.at[i] + 1;
    const rows = [];
    if (state.side) {
      for (let i = 0; i < ops.length;) {
        if (ops[i][0] === "=") {
          const [, x, y] = ops[i++];
          rows.push(html`<tr><td class="n">${al(x)}</td><td class="c">${lineHTML(A.ids[x])}</td><td class="n">${bl(y)}</td><td class="c">${lineHTML(B.ids[y])}</td></tr>`);
          continue;
        }
        const dels = [], adds = [];
        while (i < ops.length && ops[i][0] !== "=") (ops[i][0] === "-" ? dels : adds).push(ops[i++]);
        for (let k = 0; k < Math.max(dels.length, adds.length); k++) {
          const d = dels[k], p = adds[k];
          rows.push(html`<tr><td class="n">${d ? al(d[1]) : ""}</td><td class="c${d ? " del" : ""}">${d ? lineHTML(A.ids[d[1]]) : ""}</td>${
            ""}<td class="n">${p ? bl(p[2]) : ""}</td><td class="c${p ? " add" : ""}">${p ? lineHTML(B.ids[p[2]]) : ""}</td></tr>`);
        }
      }
      return html`${out}${label}<table class="code hl side"><tbody>${rows}</tbody></table>`;
    }
    const CONTEXT = 3;
    const keep = new Uint8Array(ops.length);
    ops.forEach((o, i) => { if (o[0] !== "=") for (let k = Math.max(0, i - CONTEXT); k <= Math.min(ops.length - 1, i + CONTEXT); k++) keep[k] = 1; });
    let gap = false;
    ops.forEach(([tag, x, y], i) => {
      if (!keep[i]) { gap = true; return; }
      if (gap || (i === 0 && tag === "=")) rows.push(html`<tr class="hunk"><td class="n"></td><td class="n"></td><td class="c">@@ -${x >= 0 ? al(x) : ""} +${y >= 0 ? B.at[y] + 1 : ""} @@</td></tr>`);
      gap = false;
      if (tag === "=") rows.push(html`<tr><td class="n">${al(x)}</td><td class="n">${bl(y)}</td><td class="c"> ${lineHTML(B.ids[y])}</td></tr>`);
      else if (tag === "-") rows.push(html`<tr class="del"><td class="n">${al(x)}</td><td class="n"></td><td class="c">-${lineHTML(A.ids[x])}</td></tr>`);
      else rows.push(html`<tr class="add"><td class="n"></td><td class="n">${bl(y)}</td><td class="c">+${lineHTML(B.ids[y])}</td></tr>`);
    });
    if (!changes) rows.push(html`<tr><td class="n"></td><td class="n"></td><td class="c">(no difference)</td></tr>`);
    return html`${out}${label}<table class="code hl unified"><tbody>${rows}</tbody></table>`;
  }

  function eventsOf(job) {
    const rows = job.events.map((i) => { const [t, kind, , text] = D.events[i]; return html`<li><code>${num(t).toFixed(4)}</code> <b>${kind}</b> ${text}</li>`; });
    return html`<details class="job-events"><summary>${rows.length} events of this job</summary><ol>${rows}</ol></details>`;
  }
  function selectInTree(id) {
    for (const el of document.querySelectorAll("#jobs li.sel")) el.classList.remove("sel");
    const li = document.getElementById(`tree-${id}`);
    if (li) {
      li.classList.add("sel");
      const r = li.getBoundingClientRect(), nav = document.getElementById("jobs").getBoundingClientRect();
      if (r.top < nav.top || r.top > nav.bottom - 20) li.scrollIntoView({ block: "nearest" });
    }
  }

  // ---- the router: the URL's anchor says what is shown
  function hash() {  // the anchor, decoded (one a hand typed with a stray % as it is)
    try { return decodeURIComponent(location.hash); } catch (e) { return location.hash; }
  }
  function route() {
    const m = /^#job-(\d+)(?:\/(diff)\/([^/]*)\.\.([^/]*)|\/([^/]+))?(?:\/L(\d+))?$/.exec(hash());
    let job, stage = null, diffing = null, line = null, section = null;
    if (m) {
      job = jobs.get(Number(m[1]));
      if (!job) { show(view, html`<p class="error">no job #${m[1]} in this session</p>`); return; }
      if (m[2]) {
        const b = stageByKey(job, m[4]) || defaultStage(job);
        const a = stageByKey(job, m[3]) || (b && previousChange(job, b));
        diffing = [a, b];
      } else {
        stage = m[5] ? stageByKey(job, m[5]) : defaultStage(job);
      }
      line = m[6] ? Number(m[6]) : null;
    } else if (!state.job) {
      job = D.jobs[0];
      if (!job) { show(view, html`<p>(no jobs)</p>`); return; }
      stage = defaultStage(job);
      // opened at one of the page's sections (run.html#launches): the browser scrolled there before the
      // job's view was drawn above it, and stood in an empty stretch; it goes there again once drawn
      section = location.hash.length > 1 ? document.getElementById(hash().slice(1)) : null;
    } else {
      return;  // an anchor of the page's own sections (#diagnostics...): the browser scrolls there
    }
    state.job = job;
    selectInTree(job.id);
    let body;
    if (diffing) body = diffView(job, diffing[0], diffing[1]);
    else if (stage) body = codeTable(job, stage);
    else body = html`<p>${m && m[5] ? html`no stage ${m[5]} in job #${job.id}` : "no stage recorded"}</p>`;
    show(view, html`${banner(job)}${stageBar(job, stage, diffing)}<div id="code">${body}</div>${eventsOf(job)}`);
    const form = view.querySelector("form.diffbar");
    if (form) {
      form.addEventListener("change", (ev) => {
        state.side = form.side.checked;
        state.noise = form.noise.checked;
        const target = `#job-${job.id}/diff/${form.a.value}..${form.b.value}`;
        if (location.hash === target) route(); else location.hash = target;
      });
    }
    if (section) {
      section.scrollIntoView({ block: "start" });
    } else if (line !== null) {
      const row = document.getElementById(`L${line}`);
      if (row) { row.classList.add("target"); row.scrollIntoView({ block: "center" }); }
    } else if (m) {  // a job's link from below (the diagnostics, the launches): bring its detail up
      const r = view.getBoundingClientRect();
      if (r.top > innerHeight || r.bottom < 0) view.scrollIntoView({ block: "start" });
    }
  }

  // ---- the events timeline, a page of rows at a time
  const PAGE = 2000;
  function timeline(upto) {
    const box = document.getElementById("events");
    const rows = [];
    const n = Math.min(upto, D.events.length);
    for (let i = 0; i < n; i++) {
      const [t, kind, job, text] = D.events[i];
      rows.push(html`<tr class="ev-${kind}"><td>${i + 1}</td><td>${num(t).toFixed(4)}</td><td>${kind}</td><td>${job !== null ? jobLink(job) : ""}</td><td>${text}</td></tr>`);
    }
    show(box, html`<table class="timeline"><tr><th>#</th><th>t (s)</th><th>event</th><th>job</th><th></th></tr>${rows}</table>${
      n < D.events.length ? html`<p><button type="button" id="more-events">show ${Math.min(PAGE, D.events.length - n)} more of ${D.events.length - n}</button></p>` : ""}`);
    const more = document.getElementById("more-events");
    if (more) more.addEventListener("click", () => timeline(n + PAGE));
  }

  document.getElementById("jobs").addEventListener("click", (ev) => {
    const li = ev.target.closest("li.backref");
    for (const el of document.querySelectorAll("#jobs li.cyc")) el.classList.remove("cyc");
    if (li) for (const id of li.dataset.cycle.split(" ")) { const el = document.getElementById(`tree-${id}`); if (el) el.classList.add("cyc"); }
  });
  window.addEventListener("hashchange", route);
  route();
  // the timeline is built when it scrolls into sight: thousands of rows are no part of opening the page
  const events = document.getElementById("events");
  if ("IntersectionObserver" in window) {
    const seen = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) { seen.disconnect(); timeline(PAGE); }
    });
    seen.observe(events);
  } else {
    timeline(PAGE);
  }
  document.documentElement.dataset.ready = performance.now().toFixed(1);  // ms from the navigation's start
})();
