// DOM and formatting helpers shared by the pages.

// h builds an element: h('a', {href: '#/', class: 'x', onclick: fn}, 'text', child).
// Children may be strings, nodes, arrays or null (skipped). Text is never
// parsed as HTML.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// fill replaces el's children with x (a node, a string, or an array of
// them; null entries are skipped).
export function fill(el, x) {
  el.replaceChildren();
  append(el, [x]);
}

// svg builds an SVG element the way h builds HTML ones.
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) el.setAttribute(k, String(v));
  for (const c of children.flat(Infinity)) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : String(c));
  return el;
}

// zero is the API's "no time" (model.Time's zero value).
export function isZero(t) {
  return !t || t.startsWith('0001-01-01');
}

const fmtCache = new Map();
function formatter(tz, withZone) {
  const key = (tz || '') + '|' + withZone;
  let f = fmtCache.get(key);
  if (!f) {
    const opts = {year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23'};
    if (tz) opts.timeZone = tz;
    if (withZone) opts.timeZoneName = 'short';
    try { f = new Intl.DateTimeFormat('en-CA', opts); } catch { f = new Intl.DateTimeFormat('en-CA', {...opts, timeZone: undefined}); }
    fmtCache.set(key, f);
  }
  return f;
}

// The time-zone switch (the header's select, kept in localStorage): every
// time the console shows is in the task's zone ('task': the zone a call
// site passes, else the zone of the page's task, else the viewer's), the
// viewer's ('local') or UTC ('utc').
const ZONE_KEY = 'ax.zone';
export const ZONES = ['task', 'local', 'utc'];
let pageZone = '';

export function zoneChoice() {
  let z = '';
  try { z = localStorage.getItem(ZONE_KEY) || ''; } catch { /* storage refused: the default */ }
  return ZONES.includes(z) ? z : 'task';
}

export function setZoneChoice(z) {
  try { localStorage.setItem(ZONE_KEY, z); } catch { /* kept for this page only */ }
}

// setPageZone names the zone of the task a page shows ('' for none): what
// times without a zone of their own are shown in under 'task'.
export function setPageZone(tz) { pageZone = tz || ''; }

// zoneOf is the zone a time is shown in: tz (a task's zone, or none) as
// the switch turns it.
export function zoneOf(tz) {
  switch (zoneChoice()) {
    case 'utc': return 'UTC';
    case 'local': return undefined;
    default: return tz || pageZone || undefined;
  }
}

// zoneSwitch is the header's select; onChange re-renders the page.
export function zoneSwitch(onChange) {
  const local = Intl.DateTimeFormat().resolvedOptions().timeZone || 'this browser';
  const labels = {task: "Task's zone", local: 'Yours (' + local + ')', utc: 'UTC'};
  return h('span', {class: 'zone'}, h('label', {for: 'zone', class: 'muted small'}, 'Times in'), ' ',
    h('select', {id: 'zone', title: "Times on every page: in the task's zone (else yours), yours, or UTC", onchange: e => {
      setZoneChoice(e.target.value);
      onChange();
    }}, ZONES.map(z => h('option', {value: z, selected: zoneChoice() === z}, labels[z]))));
}

// fmtTime renders an API time in the zone the switch picks (tz is the
// task's zone at a call site that has one), "—" for none.
export function fmtTime(t, tz, withZone = false) {
  return fmtIn(t, zoneOf(tz), withZone);
}

// fmtIn renders an API time in exactly tz (the viewer's when none),
// whatever the switch: for a column that names its zone ("Your time").
export function fmtIn(t, tz, withZone = false) {
  if (isZero(t)) return '—';
  const d = new Date(t);
  if (isNaN(d)) return String(t);
  return formatter(tz, withZone).format(d).replace(',', '');
}

// zoneName is the short name at time t ("PDT", "GMT+1") of the zone
// fmtTime(t, tz) uses; zoneNameIn that of exactly tz.
export function zoneName(t, tz) { return zoneNameIn(t, zoneOf(tz)); }

export function zoneNameIn(t, tz) {
  const parts = formatter(tz, true).formatToParts(new Date(t));
  return (parts.find(p => p.type === 'timeZoneName') || {}).value || '';
}

// ago renders t relative to now: "3m ago", "in 2h".
export function ago(t, now = Date.now()) {
  if (isZero(t)) return '—';
  const ms = new Date(t).getTime() - now;
  const s = fmtDur(Math.abs(ms));
  return ms >= 0 ? 'in ' + s : s + ' ago';
}

// fmtDur renders milliseconds briefly: 850ms, 4.2s, 3m 10s, 2h 5m, 3d 4h.
export function fmtDur(ms) {
  if (ms < 1000) return Math.round(ms) + 'ms';
  const s = ms / 1000;
  if (s < 60) return (s < 10 ? s.toFixed(1) : Math.round(s)) + 's';
  const m = Math.floor(s / 60), h = Math.floor(m / 60), d = Math.floor(h / 24);
  if (m < 60) return m + 'm ' + Math.round(s % 60) + 's';
  if (h < 24) return h + 'h ' + (m % 60) + 'm';
  return d + 'd ' + (h % 24) + 'h';
}

// between is the duration between two API times, '' when either is unset.
export function between(a, b) {
  if (isZero(a)) return '';
  const end = isZero(b) ? Date.now() : new Date(b).getTime();
  return fmtDur(Math.max(0, end - new Date(a).getTime()));
}

// stateClass maps an instance state to its colour class.
export function stateClass(s) {
  switch (s) {
    case 'SUCCESS': return 'ok';
    case 'FAILED': case 'TERMINATED': return 'bad';
    case 'RUNNING': return 'run';
    case 'READY': case 'RETRYING': case 'SCHEDULED': return 'wait';
    case 'BLOCKED': case 'WAITING_APPROVAL': return 'warn';
    default: return 'off';
  }
}

export function badge(state) {
  return h('span', {class: 'badge ' + stateClass(state), 'data-state': state}, state || '—');
}

// Instance states, in lifecycle order; ACTIVE are the non-terminal ones
// after firing.
export const STATES = ['SCHEDULED', 'READY', 'BLOCKED', 'WAITING_APPROVAL', 'RUNNING', 'RETRYING', 'SUCCESS', 'FAILED', 'TERMINATED', 'CANCELED', 'SKIPPED'];
export const TERMINAL = new Set(['SUCCESS', 'FAILED', 'TERMINATED', 'CANCELED', 'SKIPPED']);
export const SOURCES = ['cron', 'interval', 'once', 'delay', 'api', 'retry', 'backfill', 'dependency', 'on_failure'];

// table renders rows with a header; empty shows a sentence instead. Its
// box scrolls sideways on a narrow screen, and is focusable so that the
// keyboard can scroll it too.
export function table(headers, rows, empty) {
  if (!rows.length) return h('p', {class: 'empty'}, empty);
  return h('div', {class: 'scroll', tabindex: '0'}, h('table', {},
    h('thead', {}, h('tr', {}, headers.map(x => h('th', {scope: 'col'}, x)))),
    h('tbody', {}, rows)));
}

// section is a titled block of a page.
export function section(title, ...children) {
  return h('section', {class: 'card'}, h('h2', {}, title), ...children);
}

// qs reads the query string of the current hash route.
export function qs() {
  const i = location.hash.indexOf('?');
  return new URLSearchParams(i < 0 ? '' : location.hash.slice(i + 1));
}

// triggerText describes a task's trigger in one line.
export function triggerText(t) {
  const tr = t.trigger || {};
  let s;
  switch (tr.type) {
    case 'cron': s = 'cron ' + tr.expression + (tr.timezone ? ' (' + tr.timezone + ')' : ''); break;
    case 'interval': s = 'every ' + tr.every; break;
    case 'once': s = 'once at ' + fmtTime(tr.at); break;
    case 'event': return 'on event / submit';
    default: return tr.type || '—';
  }
  if (tr.maxRuns) s += ', at most ' + tr.maxRuns + ' runs';
  if (tr.jitter) s += ', jitter ' + tr.jitter;
  return s;
}

// windowText words a trigger's window of validity ('' when it has none).
export function windowText(tr, tz) {
  if (!tr || (!tr.startAt && !tr.endAt)) return '';
  return (tr.startAt ? 'from ' + fmtTime(tr.startAt, tz) : 'until') + (tr.startAt && tr.endAt ? ' until ' : ' ') + (tr.endAt ? fmtTime(tr.endAt, tz) : 'on');
}

// throttle runs fn at most once per ms: the first call schedules it ms
// later, calls until then are folded into that run. A stream of changes
// (1,000 a second on a busy cluster) costs two reloads a second, not 1,000.
export function throttle(fn, ms) {
  let timer = 0;
  return () => {
    if (!timer) timer = setTimeout(() => { timer = 0; fn(); }, ms);
  };
}

// localInput turns a datetime-local input's value into an RFC 3339 time.
export function localInput(v) {
  if (!v) return '';
  const d = new Date(v);
  return isNaN(d) ? '' : d.toISOString();
}
