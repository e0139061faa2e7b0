// Audit: the definition changes of every task (create, update, pause,
// resume, delete), newest first, each with who, when and what changed (a
// line diff with the version before), linked to the task and its
// history; filtered by task and actor (in the route's query), paged by
// "Older". GET /v1/audit.

import {api} from './api.js';
import {showError} from './notice.js';
import {h, fill, fmtTime, ago, qs} from './util.js';
import {definitionText, diffView} from './diff.js';

const PAGE = 50;

export async function render(main, _, page) {
  const q = qs();
  const f = {task: q.get('task') || '', actor: q.get('actor') || ''};
  const list = h('div', {id: 'audit'});
  main.append(h('div', {class: 'row wrap'}, h('h1', {}, 'Audit')),
    h('p', {class: 'muted small'}, 'Every change of a task\'s definition the cluster keeps in its task history, newest first: ' +
      'a deleted task\'s too. Times are leader-stamped.'),
    filters(f), list);
  let entries = [], cursor = '';
  const query = c => '/v1/audit?limit=' + PAGE + (f.task ? '&task=' + encodeURIComponent(f.task) : '') +
    (f.actor ? '&actor=' + encodeURIComponent(f.actor) : '') + (c ? '&cursor=' + encodeURIComponent(c) : '');
  const more = async () => {
    const p = await api(query(cursor), {signal: page.signal});
    entries = entries.concat(p.entries || []);
    cursor = p.nextCursor || '';
    draw();
  };
  const draw = () => fill(list, [
    entries.length ? h('ol', {class: 'history audit'}, entries.map((e, i) => entry(e, i === 0))) :
      h('p', {class: 'empty'}, 'No change' + (f.task || f.actor ? ' matches the filters.' : ' yet.')),
    cursor ? h('button', {id: 'audit-older', onclick: () => more().catch(showError)}, 'Older') : null]);
  await more();
}

function entry(e, open) {
  const task = encodeURIComponent(e.task);
  const [changed, view] = e.previous ? diffView(definitionText(e.previous), definitionText(e.definition)) : [0, null];
  let what;
  if (!e.previous) what = h('span', {class: 'muted small'}, e.op === 'create' ? 'created' : 'no earlier version kept');
  else if (!changed) what = h('span', {class: 'muted small'}, e.op === 'pause' || e.op === 'resume' ? e.op + 'd' : 'no change to the definition');
  else what = h('details', {open}, h('summary', {}, changed + ' changed lines (v' + (e.version - 1) + ' → v' + e.version + ')'), view);
  return h('li', {dataset: {task: e.task, version: String(e.version), op: e.op}},
    h('div', {class: 'row wrap'},
      h('a', {href: '#/tasks/' + task, class: 'mono task', title: 'The task\'s page, with its history'}, e.task), h('strong', {}, 'v' + e.version + ' ' + e.op),
      h('span', {}, 'by ', h('a', {href: '#/audit?actor=' + encodeURIComponent(e.actor || ''), class: 'actor'}, e.actor || 'unknown')),
      h('time', {datetime: e.time, title: e.time}, fmtTime(e.time) + ' (' + ago(e.time) + ')'),
      h('a', {href: '#/audit?task=' + task, class: 'small'}, 'only this task')),
    what);
}

// filters is a form whose submit rewrites the route's query.
function filters(f) {
  const go = form => {
    const p = new URLSearchParams();
    for (const k of ['task', 'actor']) { const v = form.elements[k].value.trim(); if (v) p.set(k, v); }
    location.hash = '#/audit' + (p.size ? '?' + p : '');
  };
  return h('form', {class: 'row wrap filters', role: 'search', 'aria-label': 'Filter changes', onsubmit: e => { e.preventDefault(); go(e.target); }},
    h('label', {for: 'f-task'}, 'Task'), h('input', {id: 'f-task', name: 'task', value: f.task, autocomplete: 'off', placeholder: 'task name'}),
    h('label', {for: 'f-actor'}, 'Actor'), h('input', {id: 'f-actor', name: 'actor', value: f.actor, autocomplete: 'off', placeholder: 'token name'}),
    h('button', {type: 'submit'}, 'Filter'),
    f.task || f.actor ? h('a', {href: '#/audit'}, 'Clear') : null);
}
