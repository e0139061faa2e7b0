// Instance: what it is waiting for, its timeline of events (each once),
// its attempts and every attempt's output (one tab each; the running one
// streamed), its lineage (runs, upstream and downstream instances), a
// sharded instance's shard grid, and the operator's decisions (a
// finished one can be re-run; a sharded one re-runs its failed shards).

import {api, can, stream} from './api.js';
import {showError, dialog} from './notice.js';
import {h, section, table, fmtTime, between, badge, throttle, isZero, stateClass, setPageZone, TERMINAL} from './util.js';

export async function render(main, [id], page) {
  const path = '/v1/instances/' + id;
  const head = h('div', {}), why = h('div', {}), acts = h('div', {class: 'row wrap actions'});
  const timeline = h('div', {}), attempts = h('div', {}), shardBox = h('div', {});
  const out = h('pre', {class: 'log', id: 'log', role: 'log', tabindex: '0', 'aria-label': 'Output', 'aria-live': 'polite'});
  const logState = h('span', {class: 'muted', id: 'log-state'});
  const tabs = h('div', {role: 'tablist', id: 'attempt-tabs', 'aria-label': 'Output of each attempt'});
  const lineage = h('div', {id: 'lineage'});
  let task = null; // the instance's task (its zone, dependsOn), null once deleted
  let shown = 0; // the attempt whose output tab is selected (0: the latest)
  // The result a successful attempt published (shown when there is one).
  const result = h('section', {class: 'card', id: 'result', hidden: true});
  main.append(head, why, acts, shardBox,
    h('div', {class: 'grid'},
      section('Timeline', timeline),
      section('Attempts', attempts)),
    result,
    h('section', {class: 'card'}, h('div', {class: 'row'}, h('h2', {}, 'Output'), logState), tabs, out),
    section('Lineage', lineage));

  let inst = null;
  const draw = () => {
    head.replaceChildren(h('div', {class: 'row wrap'},
      h('h1', {class: 'mono'}, inst.id), badge(inst.state),
      h('a', {href: '#/tasks/' + encodeURIComponent(inst.task)}, inst.task), h('span', {class: 'muted'}, 'v' + inst.taskVersion + ' · ' + inst.source)),
    h('dl', {class: 'def inline'},
      h('dt', {}, 'Scheduled'), h('dd', {}, fmtTime(inst.scheduledAt)),
      h('dt', {}, 'Fired'), h('dd', {}, fmtTime(inst.firedAt)),
      h('dt', {}, 'Started'), h('dd', {}, fmtTime(inst.startedAt)),
      h('dt', {}, 'Finished'), h('dd', {}, fmtTime(inst.finishedAt) + (isZero(inst.finishedAt) ? '' : ' (took ' + between(inst.startedAt, inst.finishedAt) + ')')),
      Object.keys(inst.params || {}).length ? [h('dt', {}, 'Params'), h('dd', {class: 'mono'}, Object.entries(inst.params).map(([k, v]) => k + '=' + v).join(' '))] : null,
      inst.payload ? [h('dt', {}, 'Payload'), h('dd', {class: 'mono clip'}, JSON.stringify(inst.payload))] : null,
      inst.shard ? [h('dt', {}, 'Shard'), h('dd', {id: 'shard-of'}, inst.shard.index + ' of ' + inst.shard.total + ' of ',
        h('a', {href: '#/instances/' + inst.parent, class: 'mono'}, inst.parent),
        inst.shard.executor ? ' (broadcast to ' + inst.shard.executor + ')' : '')] : null,
      inst.lastError ? [h('dt', {}, 'Last error'), h('dd', {class: 'bad-text'}, inst.lastError)] : null));
    shardBox.replaceChildren(shardList ? shardGrid(shardList) : '');
    why.replaceChildren(inst.why ? h('p', {class: 'why card', id: 'why'}, h('strong', {}, 'Why ' + inst.state.toLowerCase().replaceAll('_', ' ') + ': '), inst.why) : '');
    // The buttons change only with what they act on: rebuilt on every
    // reload, they would lose the keyboard focus an operator tabbed to
    // (and a click aimed at the button being replaced).
    const actsKey = inst.state + '/' + inst.attempts;
    if (acts.dataset.key !== actsKey) {
      acts.dataset.key = actsKey;
      acts.replaceChildren(...actions(inst, path));
    }
    timeline.replaceChildren(events(inst));
    attempts.replaceChildren(attemptTable(inst));
    lineage.replaceChildren(lineageOf(inst, task));
    drawTabs();
  };
  // The first read is linearizable (the default): the page often opens
  // right after a write (trigger, approve) sent through another node.
  // Later reads answer this node's own event stream, so the node has
  // applied what they look for: they read its state as it is (stale=true).
  let first = true, shardList = null;
  // The task: its zone for the times (the zone switch's "task's zone"), its
  // dependsOn for the lineage.
  const readTask = name => api('/v1/tasks/' + encodeURIComponent(name), {signal: page.signal})
    .then(t => { task = t; setPageZone((t.trigger || {}).timezone || 'UTC'); }, () => {});
  const load = async () => {
    const q = first ? '' : '?stale=true';
    inst = await api(path + q, {signal: page.signal});
    if (first) await readTask(inst.task);
    if (inst.shards) shardList = await api(path + '/shards' + q, {signal: page.signal});
    first = false;
    draw();
  };
  await load();
  const reload = throttle(() => load().then(follow).catch(showError), 300);
  // On (re)connecting too: changes before the stream started are in no event.
  stream('/v1/events?instance=' + id, (type) => { if (type === 'instance' || type === 'resync') reload(); }, page.signal,
    ok => { if (ok) reload(); });
  // The shards' own changes are not the instance's events: while it runs
  // as shards, their grid is read again every 2 s.
  const tick = setInterval(() => { if (shardList && !TERMINAL.has(inst.state)) reload(); }, 2000);
  page.signal.addEventListener('abort', () => clearInterval(tick));

  // Output: one tab per attempt. The latest: the committed tail once
  // ended, the live stream while it runs. An earlier one: its kept tail.
  function drawTabs() {
    const n = inst.attempts || 0;
    const sel = shown || n;
    if (tabs.dataset.key === n + '/' + sel) return; // rebuilt, the tabs would lose the keyboard focus
    tabs.dataset.key = n + '/' + sel;
    const had = tabs.contains(document.activeElement);
    tabs.replaceChildren(...Array.from({length: n}, (_, i) => i + 1).map(k => h('button', {role: 'tab', id: 'tab-attempt-' + k, type: 'button',
      'aria-selected': String(k === sel), 'aria-controls': 'log', tabindex: k === sel ? '0' : '-1',
      onclick: () => pick(k), onkeydown: e => {
        const to = {ArrowRight: k + 1, ArrowLeft: k - 1, Home: 1, End: n}[e.key];
        if (to >= 1 && to <= n) { e.preventDefault(); pick(to); }
      }}, 'Attempt ' + k + attemptMark(inst, k))));
    tabs.hidden = n < 2;
    out.setAttribute('role', n < 2 ? 'log' : 'tabpanel');
    if (n >= 2) out.setAttribute('aria-labelledby', 'tab-attempt-' + sel); else out.removeAttribute('aria-labelledby');
    if (had) document.getElementById('tab-attempt-' + sel).focus();
  }
  function pick(k) {
    shown = k === inst.attempts ? 0 : k;
    if (following) { following.abort(); following = null; } // a stream ended by a tab switch
    drawTabs();
    document.getElementById('tab-attempt-' + k).focus();
    if (!shown) { follow(); return; }
    out.textContent = '';
    logState.textContent = 'attempt ' + k;
    api(path + '/log?attempt=' + k, {signal: page.signal}).then(l => {
      if (shown !== k) return;
      out.textContent = l.output || '';
      logState.textContent = 'attempt ' + k + (l.output ? '' : ': no output kept');
    }, showError);
  }
  let following = null;
  async function follow() {
    if (following || shown) return;
    if (TERMINAL.has(inst.state) || inst.state === 'SCHEDULED') {
      try {
        const l = await api(path + '/log', {signal: page.signal});
        if (shown) return; // another attempt's tab was picked meanwhile
        out.textContent = l.output || '';
        logState.textContent = l.output ? 'attempt ' + l.attempt : 'no output';
      } catch (err) { showError(err); }
      if (inst.state === 'SUCCESS') {
        try {
          const r = await api(path + '/result', {signal: page.signal});
          result.replaceChildren(h('div', {class: 'row'}, h('h2', {}, 'Result'), h('span', {class: 'muted'}, 'attempt ' + r.attempt)),
            h('pre', {class: 'log'}, JSON.stringify(r.result, null, 2)));
          result.hidden = false;
        } catch (err) { if (err.status !== 404) showError(err); }
      }
      return;
    }
    const ctl = new AbortController();
    following = ctl;
    const stop = () => ctl.abort();
    page.signal.addEventListener('abort', stop);
    out.textContent = '';
    logState.textContent = inst.state === 'RUNNING' ? '● streaming' : 'no attempt yet: the output streams here when one runs';
    await stream(path + '/log?follow=true', (type, ev) => {
      if (ctl.signal.aborted) return;
      if (type === 'log') {
        const atEnd = out.scrollTop + out.clientHeight >= out.scrollHeight - 8;
        if (ev.offset === 0 && out.textContent) out.textContent = ''; // a new attempt
        logState.textContent = '● streaming attempt ' + (ev.attempt || '');
        out.append(ev.data || '');
        if (atEnd) out.scrollTop = out.scrollHeight;
      } else if (type === 'end') {
        logState.textContent = 'ended: ' + (ev.state || '');
        ctl.abort();
      }
    }, ctl.signal, ok => { if (!ok && !ctl.signal.aborted) logState.textContent = 'reconnecting…'; });
    page.signal.removeEventListener('abort', stop);
    if (following === ctl) following = null;
  }
  follow();
}

// shardGrid draws a sharded instance's shards: a square per shard in
// its state's colour (a link to it), and those that did not succeed.
function shardGrid(l) {
  const by = l.summary ? l.summary.byState || {} : {};
  const counts = Object.keys(by).sort().map(s => by[s] + ' ' + s).join(', ');
  const label = s => 'shard ' + (s.shard ? s.shard.index : '?') + ': ' + s.state + (s.attempts > 1 ? ', ' + s.attempts + ' attempts' : '') +
    (s.executor ? ' on ' + s.executor : '');
  const rest = l.shards.filter(s => s.state !== 'SUCCESS');
  return section('Shards',
    h('p', {class: 'muted', id: 'shard-summary'}, (l.summary ? l.summary.total : l.shards.length) + ' shards' + (counts ? ': ' + counts : '')),
    l.shards.length ? h('div', {class: 'strip', id: 'shard-grid', role: 'group', 'aria-label': 'Shards by state'}, l.shards.map(s =>
      h('a', {class: 'sq ' + stateClass(s.state), href: '#/instances/' + s.id, title: label(s), 'aria-label': label(s)}))) :
      h('p', {class: 'empty'}, 'no shards yet: it fans out when it starts'),
    rest.length ? table(['Shard', 'Instance', 'State', 'Attempts', 'Executor', 'Last error'], rest.map(s => h('tr', {},
      h('td', {}, s.shard ? String(s.shard.index) : ''), h('td', {}, h('a', {href: '#/instances/' + s.id, class: 'mono'}, s.id)),
      h('td', {}, badge(s.state)), h('td', {}, String(s.attempts)), h('td', {}, s.executor || (s.shard && s.shard.executor) || ''),
      h('td', {class: 'clip', title: s.lastError || ''}, s.lastError || '')))) : null);
}

function actions(inst, path) {
  if (!can('operator')) return [];
  const out = [];
  const decide = (what, label, cls, withComment, note) => h('button', {class: cls, id: 'act-' + what, onclick: () => {
    const comment = h('textarea', {id: 'comment', rows: 3, maxlength: 1024, 'aria-label': 'Comment'});
    dialog(label + ' ' + inst.id + '?', h('div', {},
      withComment ? [h('label', {for: 'comment'}, 'Comment (kept in the instance\'s events)'), comment] : h('p', {}, note || label + ' this instance.')),
    label, async () => api(path + '/' + what, {method: 'POST', body: withComment ? {comment: comment.value} : {}}),
    {danger: cls === 'danger'});
  }}, label);
  if (inst.state === 'WAITING_APPROVAL') {
    out.push(decide('approve', 'Approve', 'primary', true), decide('reject', 'Reject', 'danger', true));
  }
  if (inst.state === 'RUNNING') out.push(decide('terminate', 'Terminate', 'danger', true));
  if (!TERMINAL.has(inst.state) && inst.state !== 'RUNNING') out.push(decide('cancel', 'Cancel', '', true));
  if (TERMINAL.has(inst.state) && inst.shards && inst.state !== 'SUCCESS') {
    out.push(decide('rerun', 'Re-run failed shards', '', false, 'Run again the shards that did not succeed (the ' +
      ((inst.shards.byState || {}).SUCCESS || 0) + ' that succeeded keep their results); the instance runs until they end.'));
  } else if (TERMINAL.has(inst.state)) {
    out.push(decide('rerun', 'Re-run', '', false, 'Run it again: the same instance and fire time, attempt ' + (inst.attempts + 1) +
      ' next (the earlier attempts stay), admitted as a fresh fire would be (approval, dependsOn, concurrency).'));
  }
  return out;
}

// events is the instance's timeline, oldest first: its events as the API
// answers them, each once. An attempt's start and end are events already
// ("started", "attempt_failed"): the end gains the attempt's exit, where
// it ran and how long it took (before, the page also added its own
// "attempt 1 failed" line for each end, so every end showed twice).
function events(inst) {
  const byNumber = new Map((inst.attemptList || []).map(a => [a.number, a]));
  const items = (inst.events || []).map(e => {
    const m = e.type.startsWith('attempt_') && /^attempt (\d+)/.exec(e.message || '');
    const a = m && byNumber.get(Number(m[1]));
    return {time: e.time, type: e.type, text: [e.message, a ? '(' + attemptDetail(a) + ')' : '', e.actor ? 'by ' + e.actor : '', e.node ? 'on ' + e.node : ''].filter(Boolean).join(' ')};
  });
  if (!items.length) return h('p', {class: 'empty'}, 'Nothing happened yet.');
  return h('ol', {class: 'timeline-list'}, items.map(i => h('li', {},
    h('time', {datetime: i.time}, fmtTime(i.time).slice(5)), ' ', h('strong', {}, i.type), i.text ? ' — ' + i.text : '')));
}

// attemptMark is a tab's mark of how attempt k ended.
function attemptMark(inst, k) {
  const a = (inst.attemptList || []).find(x => x.number === k);
  if (!a || !a.outcome) return a ? ' (running)' : '';
  return a.outcome === 'success' ? ' ✓' : ' ✗';
}

function outcome(a) {
  return [a.exitCode !== undefined && a.exitCode !== null ? 'exit ' + a.exitCode : '', a.httpStatus ? 'HTTP ' + a.httpStatus : '', a.error || ''].filter(Boolean).join(', ');
}

// attemptDetail says how an ended attempt ended, where and how long.
function attemptDetail(a) {
  return [a.exitCode !== undefined && a.exitCode !== null ? 'exit ' + a.exitCode : '', a.httpStatus ? 'HTTP ' + a.httpStatus : '',
    'on ' + a.executor + (a.host ? ' (' + a.host + (a.pid ? ', pid ' + a.pid : '') + ')' : ''), 'after ' + between(a.startedAt, a.endedAt)].filter(Boolean).join(', ');
}

// lineageOf: the instance's runs (a re-run runs the same instance again),
// the instances upstream of it (the one whose onSuccess or onFailure made
// it, the instance it is a shard of, its dependsOn tasks' instances of its
// date) and downstream (those its onSuccess and onFailure made, its
// shards, the instances of its date of the tasks depending on its task),
// from its events, params and lineage.
function lineageOf(inst, task) {
  const link = id => h('a', {href: '#/instances/' + id, class: 'mono'}, id);
  const p = inst.params || {};
  const up = [];
  if (p.parent_instance) up.push(h('li', {}, 'created by onSuccess of ', taskLink(p.parent_task), ' instance ', link(p.parent_instance)));
  if (p.failed_instance) up.push(h('li', {}, 'triggered by onFailure of ', taskLink(p.failed_task), ' instance ', link(p.failed_instance)));
  if (inst.parent) up.push(h('li', {}, 'shard of instance ', link(inst.parent)));
  // dependsOn, for the instance's scheduled date: the upstream instances
  // (a success, else a failure) and the dependent tasks' instances.
  const lin = inst.lineage || {};
  const linked = (l, rel) => h('li', {'data-instance': l.instance}, rel + ' ', taskLink(l.task), ' instance ', link(l.instance), ' ', badge(l.state));
  for (const l of lin.upstream || []) up.push(linked(l, 'dependsOn ' + lin.date + ':'));
  const have = new Set((lin.upstream || []).map(l => l.task));
  const deps = (task && task.policy && task.policy.dependsOn || []).filter(d => !have.has(d));
  if (deps.length) up.push(h('li', {}, 'dependsOn: ' + (lin.date ? 'no instance yet for ' + lin.date + ' of ' : 'the same date\'s success of '),
    deps.map((d, i) => [i ? ', ' : '', taskLink(d)])));
  const down = (lin.downstream || []).map(l => linked(l, 'depends on it for ' + lin.date + ':'));
  for (const e of inst.events || []) {
    if (e.type !== 'on_success' && e.type !== 'alerted') continue;
    for (const m of (e.message || '').matchAll(/(?:created|triggered) ([a-z0-9][a-z0-9._-]*) \(?instance ([0-9a-f]{16})/g)) {
      down.push(h('li', {}, (e.type === 'on_success' ? 'onSuccess created ' : 'onFailure triggered ') , taskLink(m[1]), ' instance ', link(m[2])));
    }
  }
  if (inst.shards) down.push(h('li', {}, inst.shards.total + ' shards (above)'));
  const runs = (inst.events || []).filter(e => e.type === 'rerun');
  return h('div', {class: 'grid'},
    h('div', {}, h('h3', {}, 'Runs'), h('ol', {id: 'lineage-runs'},
      h('li', {}, 'first fired ' + fmtTime((inst.events || []).find(e => e.type === 'fired' || e.type === 'created')?.time || inst.firedAt)),
      runs.map(e => h('li', {}, 're-run ' + fmtTime(e.time) + ': ' + (e.message || ''))),
      runs.length ? null : h('li', {class: 'muted'}, 'never re-run'))),
    h('div', {}, h('h3', {}, 'Upstream'), up.length ? h('ul', {id: 'lineage-up'}, up) : h('p', {class: 'muted'}, 'none: fired by its own schedule or a request')),
    h('div', {}, h('h3', {}, 'Downstream'), down.length ? h('ul', {id: 'lineage-down'}, down) : h('p', {class: 'muted'}, 'none')));
}

function taskLink(name) {
  return h('a', {href: '#/tasks/' + encodeURIComponent(name || '')}, name || '?');
}

function attemptTable(inst) {
  return table(['#', 'Executor', 'Host', 'PID', 'Started', 'Took', 'Outcome', 'Exit'], (inst.attemptList || []).map(a => h('tr', {},
    h('td', {}, String(a.number)), h('td', {}, a.executor), h('td', {}, a.host || ''), h('td', {}, a.pid ? String(a.pid) : ''),
    h('td', {}, fmtTime(a.startedAt)), h('td', {}, between(a.startedAt, a.endedAt)),
    h('td', {}, a.outcome ? h('span', {class: 'badge ' + (a.outcome === 'success' ? 'ok' : 'bad')}, a.outcome) : h('span', {class: 'badge run'}, 'running')),
    h('td', {class: 'clip', title: a.error || ''}, outcome(a)))), 'No attempt has started.');
}
