// Task: its definition, runs, next fires, calendar, history and events,
// and the actions the signed-in role may take.

import {api, can, stream} from './api.js';
import {showError, dialog} from './notice.js';
import {h, fill, section, table, fmtTime, fmtIn, zoneName, zoneNameIn, setPageZone, ago, between, badge, triggerText, windowText, throttle, localInput, isZero} from './util.js';
import {strip} from './tasks.js';
import {lineDiff, diffView, definitionText} from './diff.js';
import {alertTable} from './alerts.js';
import {openEditor} from './editor.js';
import {graphView} from './graph.js';

export async function render(main, [name], page) {
  const base = '/v1/tasks/' + encodeURIComponent(name);
  // Linearizable (the default): the page is redrawn right after a write
  // (pause, edit).
  const t = await api(base, {signal: page.signal});
  const tz = (t.trigger && t.trigger.timezone) || 'UTC';
  setPageZone(tz); // times without a zone of their own (the backfill banner) in the task's, as the table beside it
  const runs = h('div', {});
  const progress = h('div', {id: 'backfill-progress'});
  const fires = h('div', {id: 'next-fires'}), cal = h('div', {}), deps = h('div', {id: 'deps'}), hist = h('div', {}), events = h('div', {}), alerts = h('div', {id: 'task-alerts'});
  const rollout = h('div', {id: 'rollout'});

  main.append(
    h('div', {class: 'row wrap'},
      h('h1', {}, t.name), t.paused ? h('span', {class: 'badge off', id: 'paused'}, 'paused') : null,
      t.completed ? h('span', {class: 'badge off', id: 'completed', title: t.completed}, 'completed') : null,
      h('span', {class: 'muted'}, triggerText(t)), h('span', {class: 'grow'}), actions(t, base, progress)),
    progress,
    rollout,
    h('div', {class: 'grid'},
      h('section', {class: 'card wide'}, h('h2', {}, 'Dependencies'), deps),
      section('Recent runs', runs),
      section('Next fires (' + tz + ')', fires),
      section('Calendar, last 13 weeks', cal),
      section('Definition', definition(t)),
      section('Alerts', alerts),
      section('History', hist),
      section('Events', events)));

  const loadRuns = async () => {
    const l = await api('/v1/instances?task=' + encodeURIComponent(name) + '&limit=30', {signal: page.signal});
    runs.replaceChildren(strip(l.instances.map(i => ({id: i.id, state: i.state, scheduledAt: i.scheduledAt}))),
      table(['Instance', 'State', 'Source', 'Scheduled (' + tz + ')', 'Took', 'Attempts'], l.instances.map(i => h('tr', {dataset: {id: i.id}},
        h('td', {}, h('a', {class: 'mono', href: '#/instances/' + i.id}, i.id)),
        h('td', {}, badge(i.state), i.canary ? h('span', {class: 'badge warn', title: 'ran canary version ' + i.taskVersion}, 'canary v' + i.taskVersion) : null),
        h('td', {}, i.source),
        h('td', {title: i.scheduledAt}, fmtTime(i.scheduledAt, tz)),
        h('td', {}, between(i.startedAt, i.finishedAt)), h('td', {}, String(i.attempts)))),
      'No runs yet.' + (can('operator') ? ' Trigger one with the button above.' : '')));
  };
  // The alerts that concern the task, firing and resolved (newest first).
  const loadAlerts = async () => {
    const l = await api('/v1/alerts?limit=20&task=' + encodeURIComponent(name), {signal: page.signal});
    fill(alerts, [alertTable(l.alerts || [], {resolved: true, empty: 'No alert has concerned this task.'}),
      h('p', {}, h('a', {href: '#/alerts?task=' + encodeURIComponent(name)}, 'Its alerts on the Alerts page'))]);
  };
  const tasks = [
    loadRuns(),
    loadAlerts(),
    // The windows are read once, to mark the fires one will hold back
    // (their status knows the span holding now and the next one); a node
    // that cannot list them still shows the fires.
    Promise.all([api(base + '/fires?n=20', {signal: page.signal}),
      api('/v1/windows', {signal: page.signal}).catch(err => { if (err.name === 'AbortError') throw err; return {windows: []}; })])
      .then(([f, w]) => fill(fires, nextFires(f, t, holds(w.windows || [], t.name), base))),
    api(base + '/graph', {signal: page.signal}).then(g => fill(deps, graphView(g))),
    api(base + '/calendar?days=91', {signal: page.signal}).then(c => fill(cal, calendar(c))),
    Promise.all([api(base + '/history', {signal: page.signal}),
      api(base + '/rollout', {signal: page.signal}).catch(err => { if (err.status === 404) return null; throw err; })])
      .then(([x, ro]) => { fill(hist, history(x)); if (ro) rollout.replaceChildren(rolloutCard(ro, x, base)); }),
    api(base + '/events', {signal: page.signal}).then(x => fill(events, taskEvents(x))),
  ];
  for (const p of tasks) p.catch(showError);
  await Promise.allSettled(tasks);
  // Live: any change to one of this task's instances reloads the runs.
  const reload = throttle(() => Promise.all([loadRuns(), loadAlerts()]).catch(showError), 300);
  // On (re)connecting too: changes before the stream started are in no event.
  stream('/v1/events?task=' + encodeURIComponent(name), (type) => { if (type === 'instance' || type === 'resync') reload(); }, page.signal,
    ok => { if (ok) reload(); });
}

function actions(t, base, progress) {
  const out = [];
  if (can('operator')) {
    out.push(h('button', {class: 'primary', id: 'act-trigger', onclick: () => triggerDialog(t, base)}, 'Trigger'));
    out.push(t.paused
      ? h('button', {id: 'act-resume', onclick: () => write(base + '/resume')}, 'Resume')
      : h('button', {id: 'act-pause', onclick: () => write(base + '/pause')}, 'Pause'));
    if (t.trigger && (t.trigger.type === 'cron' || t.trigger.type === 'interval')) {
      out.push(h('button', {id: 'act-backfill', onclick: () => backfillDialog(t, base, progress)}, 'Backfill'));
    }
  }
  if (can('writer')) {
    out.push(h('button', {id: 'act-edit', onclick: () => openEditor(t)}, 'Edit'));
    out.push(h('button', {class: 'danger', id: 'act-delete', onclick: () => deleteDialog(t, base)}, 'Delete'));
  }
  return h('div', {class: 'row wrap actions'}, out);
}

async function write(path) {
  try {
    await api(path, {method: 'POST'});
    window.dispatchEvent(new HashChangeEvent('hashchange'));
  } catch (err) { showError(err); }
}

// paramNames finds the parameters a task's action refers to
// ({{.Params.x}} or {{param "x"}}), to offer them in the trigger form.
function paramNames(t) {
  const text = JSON.stringify(t.action || {});
  const names = new Set();
  for (const m of text.matchAll(/\.Params\.([A-Za-z_]\w*)/g)) names.add(m[1]);
  for (const m of text.matchAll(/param\s+\\"([A-Za-z_]\w*)\\"/g)) names.add(m[1]);
  return [...names];
}

// schemaFields builds the trigger form of a task that declares its
// parameters (t.params): one labelled field per parameter, in name
// order, of its type (a list for an enum or a boolean, a number field
// for integer and number), required when it is, preset to its default;
// read returns what was filled (an empty optional field is left out, so
// the server fills its default).
function schemaFields(t) {
  const names = Object.keys(t.params).sort();
  const fields = names.map(n => {
    const p = t.params[n], id = 'param-' + n;
    let input;
    if ((p.enum && p.enum.length) || p.type === 'boolean') {
      const opts = p.enum && p.enum.length ? p.enum : ['true', 'false'];
      input = h('select', {id, name: n, required: !!p.required},
        ...(p.required ? [] : [h('option', {value: ''}, p.default != null ? '(default: ' + p.default + ')' : '(none)')]),
        ...opts.map(v => h('option', {value: v}, v)));
    } else {
      const attrs = {id, name: n, required: !!p.required, placeholder: p.default != null ? 'default: ' + p.default : (p.type || 'string')};
      if (p.type === 'integer') Object.assign(attrs, {type: 'number', step: '1'});
      else if (p.type === 'number') Object.assign(attrs, {type: 'number', step: 'any'});
      input = h('input', attrs);
    }
    const hint = [p.type || 'string', p.required ? 'required' : null, p.pattern ? 'matching ' + p.pattern : null].filter(Boolean).join(', ');
    return h('div', {class: 'field'},
      h('label', {for: id}, n + (p.required ? ' *' : '')), input,
      h('span', {class: 'muted'}, hint + (p.description ? ' — ' + p.description : '')));
  });
  const read = form => {
    const params = {};
    names.forEach(n => { const v = form.querySelector('[name="' + n + '"]').value; if (v !== '') params[n] = v; });
    return params;
  };
  return {body: h('div', {class: 'params'}, ...fields), read};
}

function triggerDialog(t, base) {
  if (t.params && Object.keys(t.params).length) {
    const f = schemaFields(t);
    const body = h('div', {},
      h('p', {class: 'muted'}, 'Creates an instance due now with these parameters (the task declares them; an empty optional one gets its default).'), f.body);
    dialog('Trigger ' + t.name, body, 'Trigger', async form => {
      const res = await api(base + '/trigger', {method: 'POST', body: {params: f.read(form)}});
      location.hash = '#/instances/' + res.id;
      return res;
    });
    return;
  }
  const rows = h('div', {class: 'params'});
  const addRow = (k = '', v = '') => rows.append(h('div', {class: 'row'},
    h('input', {name: 'pk', placeholder: 'name', value: k, 'aria-label': 'Parameter name'}),
    h('input', {name: 'pv', placeholder: 'value', value: v, 'aria-label': 'Parameter value'})));
  const names = paramNames(t);
  names.forEach(n => addRow(n));
  if (!names.length) addRow();
  const body = h('div', {},
    h('p', {class: 'muted'}, 'Creates an instance due now. ' + (names.length ? 'The action uses: ' + names.join(', ') + '.' : 'Parameters are passed as AX_PARAM_<NAME> and {{.Params.name}}.')),
    rows, h('button', {type: 'button', class: 'link', onclick: () => addRow()}, '+ parameter'));
  dialog('Trigger ' + t.name, body, 'Trigger', async form => {
    const params = {};
    const ks = form.querySelectorAll('[name=pk]'), vs = form.querySelectorAll('[name=pv]');
    ks.forEach((k, i) => { if (k.value.trim()) params[k.value.trim()] = vs[i].value; });
    const res = await api(base + '/trigger', {method: 'POST', body: {params}});
    location.hash = '#/instances/' + res.id;
    return res;
  });
}

function backfillDialog(t, base, progress) {
  const now = new Date();
  const iso = d => new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
  const from = h('input', {type: 'datetime-local', id: 'bf-from', name: 'from', required: true, value: iso(new Date(now.getTime() - 86400000))});
  const to = h('input', {type: 'datetime-local', id: 'bf-to', name: 'to', required: true, value: iso(now)});
  const body = h('div', {},
    h('p', {class: 'muted'}, 'Creates one instance for each fire time in the range (your time zone) that has none yet, up to 10,000.'),
    h('label', {for: 'bf-from'}, 'From'), from, h('label', {for: 'bf-to'}, 'To'), to);
  dialog('Backfill ' + t.name, body, 'Backfill', async () => {
    const req = {from: localInput(from.value), to: localInput(to.value)};
    const res = await api(base + '/backfill', {method: 'POST', body: req});
    watchBackfill(base, req, res, progress);
    return res;
  });
}

// watchBackfill shows a backfill's progress: the instances of source
// backfill scheduled in its range, finished against total, until all have
// finished or the page changes.
function watchBackfill(base, req, res, box) {
  const bar = h('progress', {max: 1, value: 0, id: 'bf-bar'});
  const text = h('span', {id: 'bf-text'}, 'created ' + res.created.length + (res.existing ? ', ' + res.existing + ' fire times already had one' : ''));
  box.replaceChildren(h('div', {class: 'card row wrap'}, h('strong', {}, 'Backfill ' + fmtTime(req.from) + ' → ' + fmtTime(req.to)), bar, text));
  const q = '/counts?source=backfill&from=' + encodeURIComponent(req.from) + '&to=' + encodeURIComponent(req.to);
  const tick = async () => {
    if (!box.isConnected) return;
    try {
      const c = await api(base + q);
      const counts = c.counts || {};
      const done = ['SUCCESS', 'FAILED', 'TERMINATED', 'CANCELED', 'SKIPPED'].reduce((n, s) => n + (counts[s] || 0), 0);
      bar.max = Math.max(c.total, 1);
      bar.value = done;
      text.textContent = done + ' of ' + c.total + ' finished' + Object.entries(counts).map(([s, n]) => ' · ' + n + ' ' + s).join('');
      if (c.total && done >= c.total) { box.querySelector('.card').classList.add('done'); return; }
    } catch (err) { showError(err); }
    setTimeout(tick, 1000);
  };
  tick();
}

function deleteDialog(t, base) {
  const input = h('input', {id: 'del-name', autocomplete: 'off', 'aria-label': 'Task name'});
  dialog('Delete ' + t.name + '?', h('div', {},
    h('p', {}, 'Deletes the task and cancels its scheduled instances. Type its name to confirm.'), input), 'Delete', async () => {
    if (input.value !== t.name) throw new Error('type "' + t.name + '" to confirm');
    await api(base, {method: 'DELETE'});
    location.hash = '#/tasks';
    return true;
  }, {danger: true});
}

function definition(t) {
  const a = t.action || {}, p = t.policy || {};
  const tr = t.trigger || {}, tz = tr.timezone || 'UTC';
  const rows = [
    ['Trigger', triggerText(t)],
    ...(windowText(tr, tz) ? [['Window', windowText(tr, tz) + ' (' + tz + ')']] : []),
    ...(tr.calendars && tr.calendars.length ? [['Calendars', h('span', {id: 'calendars'},
      tr.calendars.map((c, i) => [i ? ', ' : '', h('a', {href: '#/calendars', dataset: {calendar: c}}, c)]),
      ' · on an excluded day: ' + (tr.onExcluded || 'skip'))]] : []),
    ...(tr.maxRuns || t.runs ? [['Runs', (t.runs || 0) + (tr.maxRuns ? ' of ' + tr.maxRuns + ' (maxRuns)' : '')]] : []),
    ...(t.completed ? [['Completed', t.completed + ': the trigger fires no more. Raise maxRuns or move endAt to make it fire again.']] : []),
    ['Action', a.type + ': ' + (a.command || (a.method ? a.method + ' ' : '') + (a.url || '') || a.handler || '')],
    ...Object.entries(p).filter(([, v]) => v !== '' && v !== 0 && v !== null && !(Array.isArray(v) && !v.length))
      .map(([k, v]) => ['policy.' + k, LINKED.has(k) ? taskLinks(v) : typeof v === 'object' ? JSON.stringify(v) : String(v)]),
    ['Labels', Object.entries(t.labels || {}).map(([k, v]) => k + '=' + v).join(' ') || '—'],
    ['Version', t.version + ', updated ' + fmtTime(t.updatedAt) + (t.updatedBy ? ' by ' + t.updatedBy : '')],
  ];
  return [h('dl', {class: 'def'}, rows.map(([k, v]) => [h('dt', {}, k), h('dd', {class: k === 'Action' ? 'mono' : ''}, v)])),
    h('details', {}, h('summary', {}, 'Raw JSON'), h('pre', {class: 'code'}, JSON.stringify(t, null, 2)))];
}

// The policy fields that name tasks: shown as links to them (the graph
// draws them too).
const LINKED = new Set(['dependsOn', 'onSuccess', 'onFailure']);

// taskLinks links the tasks of dependsOn, onFailure (names) or onSuccess
// (chains, with their params).
function taskLinks(v) {
  return h('span', {class: 'task-links'}, v.map((x, i) => {
    const name = typeof x === 'string' ? x : x.task;
    const params = typeof x === 'object' && x.params ? Object.entries(x.params).map(([k, p]) => k + '=' + p).join(' ') : '';
    return [i ? ', ' : '', h('a', {href: '#/tasks/' + encodeURIComponent(name)}, name), params ? ' (' + params + ')' : ''];
  }));
}

// holds lists the spans of the windows holding back task: the one
// holding now and the next, each {name, from, until} in ms.
function holds(windows, task) {
  const out = [];
  for (const w of windows) {
    const s = w.status;
    if (!s || !(s.tasks || []).includes(task)) continue;
    if (s.active && !isZero(s.from)) out.push({name: w.name, from: Date.parse(s.from), until: Date.parse(s.until)});
    if (!isZero(s.nextFrom)) out.push({name: w.name, from: Date.parse(s.nextFrom), until: Date.parse(s.nextUntil)});
  }
  return out;
}

// heldBy is the span holding back a fire at time t (the one ending last
// when several do), or null.
function heldBy(spans, t) {
  const ms = Date.parse(t);
  let best = null;
  for (const s of spans) if (s.from <= ms && ms < s.until && (!best || s.until > best.until)) best = s;
  return best;
}

// nextFires lists the fires of a page of GET /fires, and a button that
// appends the next page (the API's cursor: exact at any count) while
// there are more.
function nextFires(f, t, spans, base) {
  const list = f.fires || [];
  if (!list.length) return h('p', {class: 'empty', id: 'fires-none'}, t.trigger && t.trigger.type === 'event' ? 'Event tasks fire when submitted to, not on a schedule.'
    : f.completed ? 'Completed: ' + f.completed + '. No fire is due.' : 'No fire is due.');
  const box = table(['#', 'Task time', 'Your time', h('span', {class: 'sr'}, 'Notes')], fireRows(list, 0, f, spans), '');
  const tbody = box.querySelector('tbody');
  const count = h('span', {class: 'muted small', id: 'fires-count'});
  const more = h('button', {id: 'fires-more'}, 'Show 20 more');
  let cursor = f.nextCursor;
  const update = () => {
    count.textContent = tbody.rows.length + ' fires shown' + (cursor ? '' : ': no more');
    more.hidden = !cursor;
  };
  more.addEventListener('click', async () => {
    more.disabled = true;
    try {
      const next = await api(base + '/fires?n=20&cursor=' + encodeURIComponent(cursor));
      tbody.append(...fireRows(next.fires || [], tbody.rows.length, next, spans));
      cursor = next.nextCursor;
      update();
    } catch (err) { showError(err); } finally { more.disabled = false; }
  });
  update();
  return [t.paused ? h('p', {class: 'warn-text'}, 'Paused: these fires will not happen until the task is resumed.') : null,
    box, h('div', {class: 'row wrap'}, count, more)];
}

function fireRows(list, from, f, spans) {
  return list.map((x, i) => {
      const held = heldBy(spans, x.time);
      return h('tr', {class: x.dstChange ? 'dst' : '', dataset: held ? {heldBy: held.name} : null},
        h('td', {class: 'muted small'}, String(from + i + 1)),
        h('td', {}, x.local ? x.local.replace('T', ' ').slice(0, 19) + ' ' + (x.zone || '') : fmtIn(x.time, f.timezone, true)),
        h('td', {class: 'muted'}, fmtIn(x.time) + ' ' + zoneNameIn(x.time)),
        h('td', {}, x.dstChange ? h('span', {class: 'badge warn', title: 'The UTC offset changes before this fire'}, 'DST change') : '',
          held ? [' ', h('a', {class: 'badge warn held', href: '#/windows', title: 'A blackout window holds this fire back; the catch-up policy decides what fires when it ends'},
            'held by window ' + held.name + ' until ' + fmtTime(new Date(held.until).toISOString()) + ' ' + zoneName(held.until))] : null));
  });
}

// calendar draws 13 weeks of days in the task's time zone (the API
// counts by date there), coloured by how the day's instances ended: red
// when any failed, green when all succeeded, amber otherwise. Weeks are
// columns headed by their Sunday's day of the month, and its month where
// it changes; days are rows.
function calendar(c) {
  const tz = c.timezone || 'UTC';
  const days = new Map((c.days || []).map(d => [d.date, d.counts]));
  const todayKey = fmtTime(new Date().toISOString(), tz).slice(0, 10); // YYYY-MM-DD there
  const [y, m, d] = todayKey.split('-').map(Number);
  const start = new Date(Date.UTC(y, m - 1, d - 7 * 13 + 1));
  start.setUTCDate(start.getUTCDate() - start.getUTCDay()); // a Sunday
  const month = new Intl.DateTimeFormat('en', {month: 'short', timeZone: 'UTC'});
  const weekday = new Intl.DateTimeFormat('en', {weekday: 'short', timeZone: 'UTC'});
  const weeks = [];
  for (let w = new Date(start); w.toISOString().slice(0, 10) <= todayKey; w.setUTCDate(w.getUTCDate() + 7)) weeks.push(new Date(w));
  const dayOf = (w, i) => new Date(Date.UTC(w.getUTCFullYear(), w.getUTCMonth(), w.getUTCDate() + i));
  const head = weeks.map((w, i) => {
    const newMonth = i === 0 || w.getUTCMonth() !== weeks[i - 1].getUTCMonth();
    return h('th', {scope: 'col', dataset: {week: w.toISOString().slice(0, 10)}},
      h('span', {'aria-hidden': 'true'}, h('span', {class: 'mon'}, newMonth ? month.format(w) : '\u00a0'), h('br'), String(w.getUTCDate())),
      h('span', {class: 'sr'}, 'Week of ' + month.format(w) + ' ' + w.getUTCDate()));
  });
  const rows = [...Array(7).keys()].map(k => h('tr', {},
    h('th', {scope: 'row'}, weekday.format(dayOf(start, k))),
    weeks.map(w => {
      const day = dayOf(w, k), key = day.toISOString().slice(0, 10);
      if (key > todayKey) return h('td', {});
      const counts = days.get(key);
      let cls = 'none', title = weekday.format(day) + ' ' + key + ': no instances';
      if (counts) {
        const total = Object.values(counts).reduce((a, b) => a + b, 0);
        const bad = (counts.FAILED || 0) + (counts.TERMINATED || 0);
        cls = bad ? 'bad' : (counts.SUCCESS || 0) === total ? 'ok' : 'warn';
        title = weekday.format(day) + ' ' + key + ': ' + Object.entries(counts).map(([s, n]) => n + ' ' + s).join(', ');
      }
      return h('td', {}, h('span', {class: 'day ' + cls + (key === todayKey ? ' today' : ''), role: 'img', title, 'aria-label': title, dataset: {date: key}}));
    })));
  return [h('div', {class: 'scroll', tabindex: '0', role: 'region', 'aria-label': 'Run calendar, scrollable'},
    h('table', {class: 'heat', id: 'run-calendar'},
      h('caption', {class: 'muted small'}, 'Days in ' + tz + (c.timezone ? ' (the task\'s time zone)' : '')),
      h('thead', {}, h('tr', {}, h('th', {scope: 'col'}, h('span', {class: 'sr'}, 'Day')), head)),
      h('tbody', {}, rows))),
    h('p', {class: 'muted small'}, 'Weeks from Sunday; today ' + todayKey + ', outlined. ', h('span', {class: 'day ok'}), ' all succeeded ',
      h('span', {class: 'day bad'}), ' some failed ', h('span', {class: 'day warn'}), ' other ', h('span', {class: 'day none'}), ' none')];
}

// rolloutCard shows the task's latest canary rollout: the stable and
// canary versions with what changed between them, the split, the
// progress towards promotion, how it ended; promote and abort for an
// operator while it progresses.
function rolloutCard(ro, hist, base) {
  const live = ro.phase === 'progressing';
  const byVersion = new Map((hist.versions || []).map(v => [v.version, v.task]));
  const stable = byVersion.get(ro.stableVersion), canary = byVersion.get(ro.canaryVersion);
  const lines = stable && canary ? lineDiff(definitionText(stable), definitionText(canary)).filter(l => l.op !== ' ') : [];
  const bar = h('progress', {id: 'rollout-bar', max: ro.promoteAfter, value: ro.canarySuccesses});
  const cls = {progressing: 'warn', promoted: 'ok', rolled_back: 'bad', aborted: 'off'}[ro.phase] || 'off';
  const buttons = live && can('operator') ? [
    h('button', {class: 'primary', id: 'act-promote', onclick: () => write(base + '/promote')}, 'Promote'),
    h('button', {class: 'danger', id: 'act-abort', onclick: () => write(base + '/abort')}, 'Abort')] : [];
  const labels = Object.entries(ro.testLabels || {}).map(([k, v]) => k + '=' + v).join(',');
  return h('section', {class: 'card'},
    h('div', {class: 'row wrap'}, h('h2', {}, 'Canary rollout'), h('span', {class: 'badge ' + cls, id: 'rollout-phase'}, ro.phase.replace('_', ' ')),
      h('span', {class: 'grow'}), ...buttons),
    h('p', {id: 'rollout-versions'}, ro.stableVersion ? 'Stable v' + ro.stableVersion + ' · canary v' + ro.canaryVersion + ' on ' + ro.percent + '% of the fires'
      : 'New task v' + ro.canaryVersion + ': every fire is a canary', labels ? ' · on executors labelled ' + labels : ''),
    h('div', {class: 'row wrap'}, bar, h('span', {id: 'rollout-progress'}, ro.canarySuccesses + ' of ' + ro.promoteAfter + ' canary successes · ' +
      ro.canaryFailures + ' failed · ' + ro.canaryFires + ' canary fires' + (ro.abortOnFailure ? '' : ' · failures do not roll back'))),
    ro.endedAt ? h('p', {class: 'muted'}, fmtTime(ro.endedAt) + ': ' + (ro.reason || ro.phase)) : null,
    lines.length ? h('details', {open: live}, h('summary', {}, 'v' + ro.stableVersion + ' → v' + ro.canaryVersion + ': ' + lines.length + ' changed lines'),
      h('pre', {class: 'code diff'}, lines.map(l => h('span', {class: l.op === '+' ? 'add' : 'del'}, l.op + ' ' + l.text + '\n')))) : null);
}

function history(x) {
  const vs = (x.versions || []).slice().reverse(); // newest first
  if (!vs.length) return h('p', {class: 'empty'}, 'No history.');
  return h('ol', {class: 'history'}, vs.map((v, i) => {
    const prev = vs[i + 1];
    const [changed, view] = prev ? diffView(definitionText(prev.task), definitionText(v.task)) : [0, null];
    return h('li', {},
      h('div', {}, h('strong', {}, 'v' + v.version + ' ' + v.op), ' by ' + (v.actor || 'unknown') + ' · ', h('span', {title: v.time}, fmtTime(v.time) + ' (' + ago(v.time) + ')')),
      !prev ? h('span', {class: 'muted small'}, 'created') :
        !changed ? h('span', {class: 'muted small'}, 'no change to the definition') :
          h('details', {open: i === 0}, h('summary', {}, changed + ' changed lines'), view));
  }));
}

function taskEvents(x) {
  const evs = (x.events || []).slice().reverse().slice(0, 50);
  return table(['When', 'Type', 'What'], evs.map(e => h('tr', {},
    h('td', {title: e.time}, fmtTime(e.time)), h('td', {}, h('span', {class: 'badge ' + (e.type === 'misfire' || e.type === 'rollback' ? 'warn' : 'off')}, e.type)),
    h('td', {}, e.message || ''))), 'No events for this task.');
}
