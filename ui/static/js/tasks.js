// Tasks: every task with its next fire (in its zone and the viewer's),
// its last run and a strip of its last 30 runs. Filters: labels and paused
// (the API's), last run state (on the loaded rows).

import {api, can} from './api.js';
import {openEditor} from './editor.js';
import {showError} from './notice.js';
import {h, table, fmtTime, fmtIn, zoneName, zoneNameIn, zoneOf, ago, badge, stateClass, triggerText, qs} from './util.js';

export async function render(main, _, page) {
  const q = qs();
  const label = h('input', {id: 'f-label', name: 'label', placeholder: 'team=data', value: q.get('label') || '', 'aria-label': 'Label (key=value)'});
  const paused = h('select', {id: 'f-paused', name: 'paused', 'aria-label': 'Paused'},
    [['', 'active and paused'], ['false', 'active only'], ['true', 'paused only']].map(([v, t]) => h('option', {value: v, selected: q.get('paused') === v}, t)));
  const last = h('select', {id: 'f-last', name: 'last', 'aria-label': 'Last run'},
    [['', 'any last run'], ['FAILED', 'last run failed'], ['SUCCESS', 'last run succeeded'], ['RUNNING', 'running now'], ['none', 'never ran']]
      .map(([v, t]) => h('option', {value: v, selected: q.get('last') === v}, t)));
  const form = h('form', {class: 'filters row wrap', onsubmit: e => {
    e.preventDefault();
    const p = new URLSearchParams();
    for (const el of [label, paused, last]) if (el.value) p.set(el.name, el.value.trim());
    location.hash = '#/tasks' + (p.toString() ? '?' + p : '');
  }}, label, paused, last, h('button', {type: 'submit'}, 'Filter'));
  const list = h('div', {});
  const more = h('div', {});
  main.append(h('div', {class: 'row wrap'}, h('h1', {}, 'Tasks'), h('span', {class: 'grow'}),
    can('writer') ? h('button', {class: 'primary', id: 'act-new', onclick: () => openEditor(null)}, 'New task') : null), form, list, more);

  const rows = [];
  const viewerZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  async function load(cursor) {
    const p = new URLSearchParams({summary: 'true', limit: '100'});
    if (q.get('label')) for (const l of q.get('label').split(/[ ,]+/).filter(Boolean)) p.append('label', l);
    if (q.get('paused')) p.set('paused', q.get('paused'));
    if (cursor) p.set('cursor', cursor);
    const res = await api('/v1/tasks?' + p, {signal: page.signal});
    for (const t of res.tasks || []) {
      const lastRun = t.summary && t.summary.lastRun;
      const want = q.get('last');
      if (want === 'none' ? lastRun : want && (!lastRun || lastRun.state !== want)) continue;
      rows.push(row(t, viewerZone));
    }
    list.replaceChildren(table(['Task', 'Trigger', 'Next fire', 'Last run', 'Last 30 runs', 'Labels'], rows,
      q.toString() ? 'No task matches these filters.' : h('span', {}, 'No tasks yet. Create one with ', can('writer') ? 'New task, ' : '', h('code', {}, 'ax task apply -f task.yaml'), ' or PUT /v1/tasks/{name}.')));
    more.replaceChildren(res.nextCursor ? h('button', {onclick: () => load(res.nextCursor).catch(showError)}, 'Load more') : '');
  }
  await load('');
}

function row(t, viewerZone) {
  const s = t.summary || {};
  const tz = (t.trigger && t.trigger.timezone) || 'UTC';
  const next = s.nextFire;
  return h('tr', {dataset: {task: t.name}},
    h('td', {}, h('a', {href: '#/tasks/' + encodeURIComponent(t.name)}, t.name), t.paused ? h('span', {class: 'badge off'}, 'paused') : null),
    h('td', {class: 'mono small'}, triggerText(t)),
    h('td', {}, next ? [
      h('div', {}, fmtTime(next, tz) + ' ' + zoneName(next, tz)),
      zoneOf(tz) && zoneOf(tz) !== viewerZone ? h('div', {class: 'muted small'}, fmtIn(next) + ' ' + zoneNameIn(next) + ' (yours)') : null,
      h('div', {class: 'muted small'}, ago(next))] : t.completed ? h('span', {class: 'badge off', title: t.completed}, 'completed')
      : h('span', {class: 'muted'}, t.paused ? 'paused' : '—')),
    h('td', {}, s.lastRun ? [badge(s.lastRun.state), h('div', {class: 'muted small', title: s.lastRun.scheduledAt}, ago(s.lastRun.scheduledAt))] : h('span', {class: 'muted'}, 'never ran')),
    h('td', {}, strip(s.recentRuns || [])),
    h('td', {class: 'small'}, Object.entries(t.labels || {}).map(([k, v]) => h('span', {class: 'tag'}, k + '=' + v))));
}

// strip draws runs oldest to newest as small squares linking to each.
export function strip(runs) {
  if (!runs.length) return h('span', {class: 'muted'}, '—');
  return h('span', {class: 'strip'}, runs.slice().reverse().map(r =>
    h('a', {href: '#/instances/' + r.id, class: 'sq ' + stateClass(r.state), title: r.state + ' · ' + fmtTime(r.scheduledAt), 'aria-label': r.state + ' ' + fmtTime(r.scheduledAt)})));
}
