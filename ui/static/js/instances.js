// Instances: filtered, newest first, cursor paging, live. Live updates come
// from GET /v1/events: a change to a listed instance updates its row; a new
// one matching the filters reloads the first page (at most twice a second).

import {api, stream} from './api.js';
import {showError} from './notice.js';
import {h, table, fmtTime, between, badge, qs, throttle, localInput, STATES, SOURCES} from './util.js';

export async function render(main, _, page) {
  const q = qs();
  const toLocal = v => { const d = new Date(v); return v && !isNaN(d) ? new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16) : ''; };
  const f = {
    task: h('input', {name: 'task', id: 'f-task', placeholder: 'task', value: q.get('task') || '', 'aria-label': 'Task'}),
    state: h('select', {name: 'state', id: 'f-state', 'aria-label': 'State'}, h('option', {value: ''}, 'any state'), STATES.map(s => h('option', {value: s, selected: q.get('state') === s}, s))),
    source: h('select', {name: 'source', id: 'f-source', 'aria-label': 'Source'}, h('option', {value: ''}, 'any source'), SOURCES.map(s => h('option', {value: s, selected: q.get('source') === s}, s))),
    since: h('input', {name: 'since', id: 'f-since', type: 'datetime-local', value: toLocal(q.get('since')), 'aria-label': 'Created since'}),
    until: h('input', {name: 'until', id: 'f-until', type: 'datetime-local', value: toLocal(q.get('until')), 'aria-label': 'Created before'}),
  };
  const live = h('span', {class: 'live muted', id: 'live'}, 'connecting…');
  const form = h('form', {class: 'filters row wrap', onsubmit: e => {
    e.preventDefault();
    const p = new URLSearchParams();
    for (const [k, el] of Object.entries(f)) {
      const v = k === 'since' || k === 'until' ? localInput(el.value) : el.value.trim();
      if (v) p.set(k, v);
    }
    location.hash = '#/instances' + (p.toString() ? '?' + p : '');
  }}, Object.values(f), h('button', {type: 'submit'}, 'Filter'));
  const list = h('div', {}), more = h('div', {});
  main.append(h('div', {class: 'row'}, h('h1', {}, 'Instances'), live), form, list, more);

  const params = new URLSearchParams({limit: '50'});
  for (const k of ['task', 'state', 'source', 'since', 'until']) if (q.get(k)) params.set(k, q.get(k));
  let shown = []; // instances on screen, newest first
  let paged = false; // "load more" used: do not replace the list on live changes
  const byId = new Map();

  // draw shows the list, keeping the rows (and the table) whose instance
  // did not change: on a busy cluster the page redraws once a second, and
  // rebuilding fifty rows each time was most of the browser's work.
  let tbody = null;
  function draw(cursor) {
    const old = new Map(byId);
    byId.clear();
    const rows = shown.map(i => {
      const key = rowKey(i);
      const prev = old.get(i.id);
      const r = prev && prev.dataset.key === key ? prev : row(i, key);
      byId.set(i.id, r);
      return r;
    });
    if (tbody && tbody.isConnected && rows.length) {
      if (rows.length !== tbody.children.length || rows.some((r, n) => tbody.children[n] !== r)) tbody.replaceChildren(...rows);
    } else {
      list.replaceChildren(table(['Instance', 'Task', 'State', 'Source', 'Scheduled', 'Started', 'Took', 'Attempt', 'Executor'], rows,
        q.toString() ? 'No instance matches these filters.' : 'No instances yet: they appear when tasks fire or are triggered.'));
      tbody = list.querySelector('tbody');
    }
    more.replaceChildren(cursor ? h('button', {id: 'more', onclick: () => { paged = true; load(cursor).catch(showError); }}, 'Load more') : '');
  }
  async function load(cursor) {
    const p = new URLSearchParams(params);
    if (cursor) p.set('cursor', cursor);
    const l = await api('/v1/instances?' + p, {signal: page.signal});
    shown = cursor ? shown.concat(l.instances) : l.instances;
    draw(l.nextCursor);
  }
  await load('');

  const reload = throttle(() => { if (!paged) load('').catch(showError); }, 1000);
  const path = '/v1/events' + (q.get('task') ? '?task=' + encodeURIComponent(q.get('task')) : '');
  stream(path, (type, ev) => {
    if (type === 'resync') { reload(); return; }
    if (type !== 'instance') return;
    const r = byId.get(ev.id);
    if (r) {
      const i = shown.find(x => x.id === ev.id);
      if (i && i.state !== ev.state) {
        // Show the new state at once; the reload brings its times.
        Object.assign(i, {state: ev.state, attempts: ev.attempt || i.attempts, executor: ev.executor || i.executor});
        const nr = row(i, rowKey(i));
        byId.set(ev.id, nr);
        r.replaceWith(nr);
        reload();
      }
    } else if (!q.get('state') || q.get('state') === ev.state) {
      reload();
    }
  }, page.signal, (ok) => {
    live.textContent = ok ? '● live' : 'reconnecting…';
    live.className = 'live ' + (ok ? 'on' : 'muted');
    // What changed between the first read and the stream's start (or
    // while it was down) is in no event: read again once connected.
    if (ok) reload();
  });
}

// rowKey is what a row shows that changes.
function rowKey(i) {
  return [i.state, i.attempts, i.startedAt, i.finishedAt, i.executor].join('|');
}

function row(i, key) {
  return h('tr', {dataset: {id: i.id, state: i.state, key}},
    h('td', {}, h('a', {class: 'mono', href: '#/instances/' + i.id}, i.id)),
    h('td', {}, h('a', {href: '#/tasks/' + encodeURIComponent(i.task)}, i.task)),
    h('td', {}, badge(i.state)),
    h('td', {}, i.source),
    h('td', {title: i.scheduledAt}, fmtTime(i.scheduledAt)),
    h('td', {title: i.startedAt}, fmtTime(i.startedAt)),
    h('td', {}, between(i.startedAt, i.finishedAt)),
    h('td', {}, String(i.attempts || 0)),
    h('td', {}, i.executor || ''));
}
