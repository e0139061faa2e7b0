// Alerts: the firing alerts, the silences in force and the history of
// resolved ones, filtered by rule, severity and task (in the route's
// query, so a filtered view can be linked to); an operator silences an
// alert (or anything matching a task, a rule, task labels) for a
// duration with a comment, and removes a silence. GET /v1/alerts and
// /v1/silences every 5 s.

import {api, can} from './api.js';
import {showError, dialog} from './notice.js';
import {h, fill, section, table, fmtTime, ago, fmtDur, qs} from './util.js';
import {field, keyValues, markInvalid} from './defs.js';

export const RULES = ['instance_failed', 'stuck_ready', 'stuck_blocked', 'stuck_approval', 'running_overtime', 'deadline_missed',
  'task_silence', 'misfire', 'quorum_lost', 'member_unreachable', 'executor_lost', 'clock_skew', 'clock_jump', 'queue_full',
  'frequency_anomaly', 'rollback', 'cluster_silence'];
const SEVERITIES = ['critical', 'warning', 'info'];
const SEV_CLASS = {critical: 'bad', warning: 'warn', info: 'off'};

export async function render(main, _, page) {
  const q = qs();
  const f = {rule: q.get('rule') || '', severity: q.get('severity') || '', task: q.get('task') || ''};
  const firing = h('div', {id: 'alerts-firing'}), silences = h('div', {id: 'silences'}), history = h('div', {id: 'alerts-history'});
  main.append(
    h('div', {class: 'row wrap'}, h('h1', {}, 'Alerts'), h('span', {class: 'grow'}),
      can('operator') ? h('div', {class: 'row wrap actions'},
        h('button', {class: 'primary', id: 'act-silence-new', onclick: () => silenceDialog({}, load)}, 'New silence')) : null),
    filters(f),
    section('Firing', firing),
    section('Silences in force', silences),
    section('History (resolved)', history));

  // The history is paged: "Older" appends the next page.
  let older = [], cursor = '';
  const query = (state, extra = '') => '/v1/alerts?state=' + state + (f.rule ? '&rule=' + encodeURIComponent(f.rule) : '') +
    (f.task ? '&task=' + encodeURIComponent(f.task) : '') + extra;
  const bySeverity = list => (list || []).filter(a => !f.severity || a.severity === f.severity);
  async function load() {
    const [fi, si, re] = await Promise.all([
      api(query('firing', '&limit=500'), {signal: page.signal}),
      api('/v1/silences', {signal: page.signal}),
      api(query('resolved', '&limit=50'), {signal: page.signal})]);
    firing.replaceChildren(alertTable(bySeverity(fi.alerts), {actions: load, silences: si.silences || [], empty: 'No alert is firing' + (filtered(f) ? ' that matches the filters.' : '.')}));
    // The silences that may mute what the filters show.
    silences.replaceChildren(silenceTable((si.silences || []).filter(s => (!f.task || !s.task || s.task === f.task) && (!f.rule || !s.rule || s.rule === f.rule)), load));
    if (!older.length) cursor = re.nextCursor || '';
    drawHistory(re.alerts || []);
  }
  function drawHistory(first) {
    const seen = new Set(first.map(a => a.id + a.resolvedAt));
    const list = bySeverity([...first, ...older.filter(a => !seen.has(a.id + a.resolvedAt))]);
    fill(history, [alertTable(list, {resolved: true, empty: 'No resolved alert' + (filtered(f) ? ' matches the filters.' : ' yet.')}),
      cursor ? h('button', {id: 'alerts-older', onclick: async () => {
        try {
          const next = await api(query('resolved', '&limit=50&cursor=' + encodeURIComponent(cursor)), {signal: page.signal});
          older = older.concat(next.alerts || []);
          cursor = next.nextCursor || '';
          await load();
        } catch (err) { showError(err); }
      }}, 'Older') : null]);
  }
  await load();
  const timer = setInterval(() => load().catch(showError), 5000);
  page.signal.addEventListener('abort', () => clearInterval(timer));
}

function filtered(f) { return !!(f.rule || f.severity || f.task); }

// filters is a form whose change rewrites the route's query.
function filters(f) {
  const go = form => {
    const p = new URLSearchParams();
    for (const k of ['rule', 'severity', 'task']) { const v = form.elements[k].value.trim(); if (v) p.set(k, v); }
    location.hash = '#/alerts' + (p.size ? '?' + p : '');
  };
  const select = (name, label, opts) => [h('label', {for: 'f-' + name}, label),
    h('select', {id: 'f-' + name, name, onchange: e => go(e.target.form)},
      h('option', {value: ''}, 'any'), opts.map(o => h('option', {value: o, selected: f[name] === o}, o)))];
  return h('form', {class: 'row wrap filters', role: 'search', 'aria-label': 'Filter alerts', onsubmit: e => { e.preventDefault(); go(e.target); }},
    select('rule', 'Rule', RULES), select('severity', 'Severity', SEVERITIES),
    h('label', {for: 'f-task'}, 'Task'), h('input', {id: 'f-task', name: 'task', value: f.task, autocomplete: 'off', placeholder: 'task name'}),
    h('button', {type: 'submit'}, 'Filter'),
    filtered(f) ? h('a', {href: '#/alerts'}, 'Clear') : null);
}

// subject links to what an alert is about.
export function subject(a) {
  const s = a.subject || {};
  if (s.instance) return h('a', {href: '#/instances/' + s.instance}, (s.task ? s.task + ' ' : '') + s.instance);
  if (s.task) return h('a', {href: '#/tasks/' + encodeURIComponent(s.task)}, s.task);
  if (s.node) return h('a', {href: '#/cluster'}, 'node ' + s.node);
  if (s.executor) return h('a', {href: '#/executors'}, 'executor ' + s.executor);
  return 'cluster';
}

// alertTable lists alerts: firing ones since when (silenced when
// opts.silences mute them); with opts.resolved, when each was raised and
// resolved (or that it fires); opts.actions (a reload) adds an operator's Silence
// button to each row.
export function alertTable(list, opts = {}) {
  const silence = opts.actions && can('operator');
  const headers = opts.resolved ? ['Raised', 'Resolved', 'Severity', 'Rule', 'Subject', 'Summary']
    : ['Since', 'Severity', 'Rule', 'Subject', 'Summary', ...(silence ? ['Action'] : [])];
  return table(headers, list.map(a => h('tr', {dataset: {alert: a.id, state: a.state}},
    h('td', {title: a.firstSeen}, opts.resolved ? fmtTime(a.firstSeen) : ago(a.firstSeen)),
    opts.resolved ? h('td', {title: a.resolvedAt || ''}, a.resolvedAt ? fmtTime(a.resolvedAt) + ' (after ' + fmtDur(new Date(a.resolvedAt) - new Date(a.firstSeen)) + ')'
      : h('span', {class: 'badge bad'}, 'firing')) : null,
    h('td', {}, h('span', {class: 'badge ' + (SEV_CLASS[a.severity] || 'off')}, a.severity)),
    h('td', {class: 'mono small'}, a.rule),
    h('td', {}, subject(a)),
    h('td', {}, a.summary, a.count > 1 ? h('span', {class: 'muted'}, ' ×' + a.count) : null,
      a.silenced || mutedBy(a, opts.silences) ? [' ', h('span', {class: 'badge off silenced', title: 'its notifications are muted'}, 'silenced')] : null,
      details(a)),
    silence ? h('td', {}, h('button', {class: 'act-silence', 'aria-label': 'Silence ' + a.id,
      onclick: () => silenceDialog({task: a.subject && a.subject.task, rule: a.rule}, opts.actions)}, 'Silence')) : null)),
  opts.empty || 'No alerts.');
}

// mutedBy finds a silence in force that mutes alert a from now on (the
// API's silenced says whether one did when it was last raised). A
// silence naming labels is left out: the alert does not carry its task's
// labels.
function mutedBy(a, silences) {
  const task = (a.subject && a.subject.task) || '';
  return (silences || []).find(s => !Object.keys(s.labels || {}).length && (!s.task || s.task === task) && (!s.rule || s.rule === a.rule));
}

function details(a) {
  const d = Object.entries(a.details || {});
  if (!d.length) return null;
  return h('details', {}, h('summary', {class: 'small'}, 'details'),
    h('dl', {class: 'def small'}, d.map(([k, v]) => [h('dt', {}, k), h('dd', {class: 'mono'}, v)])));
}

function silenceTable(list, reload) {
  const unsilence = can('operator');
  return table(['Matches', 'Until', 'By', 'Comment', ...(unsilence ? ['Action'] : [])], list.map(s => h('tr', {dataset: {silence: s.id}},
    h('td', {}, matches(s)),
    h('td', {title: s.until}, fmtTime(s.until) + ' (' + ago(s.until) + ')'),
    h('td', {}, s.by || '—', h('div', {class: 'muted small'}, 'created ' + ago(s.created))),
    h('td', {class: 'comment'}, s.comment || ''),
    unsilence ? h('td', {}, h('button', {class: 'act-unsilence', 'aria-label': 'Unsilence ' + s.id, onclick: () =>
      dialog('Remove this silence?', h('p', {}, 'Notifications of the alerts it matches (', matches(s), ') are sent again.'), 'Unsilence', async () => {
        await api('/v1/silences/' + encodeURIComponent(s.id), {method: 'DELETE'});
        await reload();
        return true;
      })}, 'Unsilence')) : null)),
  'No silence is in force: every alert is notified.');
}

function matches(s) {
  const parts = [];
  if (s.task) parts.push(h('span', {class: 'tag'}, 'task ', h('a', {href: '#/tasks/' + encodeURIComponent(s.task)}, s.task)));
  if (s.rule) parts.push(h('span', {class: 'tag'}, 'rule ' + s.rule));
  for (const [k, v] of Object.entries(s.labels || {})) parts.push(h('span', {class: 'tag'}, k + '=' + v));
  return parts.length ? parts : h('span', {class: 'muted'}, 'every alert');
}

// silenceDialog creates a silence: what it matches (prefilled from an
// alert), for how long, and why.
function silenceDialog(pre, reload) {
  const task = h('input', {id: 'sil-task', name: 'task', value: pre.task || '', autocomplete: 'off'});
  const rule = h('select', {id: 'sil-rule', name: 'rule'}, h('option', {value: ''}, 'any rule'),
    RULES.map(r => h('option', {value: r, selected: pre.rule === r}, r)));
  const labels = h('textarea', {id: 'sil-labels', name: 'labels', rows: 2, spellcheck: 'false', placeholder: 'team=data', 'aria-describedby': 'sil-labels-hint'});
  const dur = h('input', {id: 'sil-for', name: 'for', value: '2h', required: true, autocomplete: 'off', list: 'sil-for-list', 'aria-describedby': 'sil-for-hint'});
  const comment = h('textarea', {id: 'sil-comment', name: 'comment', rows: 2, maxlength: 1024});
  const body = h('div', {},
    h('p', {class: 'muted'}, 'Mutes the notifications of the alerts that match everything given; they are still recorded and listed.'),
    field('sil-task', 'Task', task), field('sil-rule', 'Rule', rule),
    field('sil-labels', 'Task labels', labels, 'One key=value per line; the task must carry all of them.'),
    field('sil-for', 'For', dur, 'A duration: 30m, 2h, 1h30m.'),
    h('datalist', {id: 'sil-for-list'}, ['30m', '1h', '2h', '4h', '8h', '24h'].map(v => h('option', {value: v}))),
    field('sil-comment', 'Comment', comment));
  dialog('New silence', body, 'Silence', async form => {
    form.querySelectorAll('[aria-invalid]').forEach(el => el.removeAttribute('aria-invalid'));
    const req = {for: dur.value.trim(), comment: comment.value.trim()};
    if (task.value.trim()) req.task = task.value.trim();
    if (rule.value) req.rule = rule.value;
    const ls = keyValues(labels.value);
    if (Object.keys(ls).length) req.labels = ls;
    try {
      const res = await api('/v1/silences', {method: 'POST', body: req});
      await reload();
      return res;
    } catch (err) {
      markInvalid(form, err);
      throw err;
    }
  });
}
