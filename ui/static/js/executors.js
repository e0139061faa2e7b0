// Executors: those the leader heard from in the last minute, with their
// labels, what they can run, their slots (running of total, free), the
// attempts running on them and their last poll or heartbeat. GET
// /v1/executors and the RUNNING instances every 5 s.

import {api} from './api.js';
import {showError} from './notice.js';
import {h, table, ago, fmtTime} from './util.js';

export async function render(main, _, page) {
  const stamp = h('span', {class: 'muted'});
  const list = h('div', {id: 'executors'});
  main.append(h('div', {class: 'row wrap'}, h('h1', {}, 'Executors'), stamp), list,
    h('p', {class: 'muted small'}, 'The leader lists the executors it heard from (a poll or a heartbeat) in the last minute. ' +
      'Slots: attempts running of the total the executor offers; free is what its last poll reported.'));
  const load = async () => {
    const [ex, run] = await Promise.all([
      api('/v1/executors', {signal: page.signal}),
      api('/v1/instances?state=RUNNING&limit=1000', {signal: page.signal})]);
    const running = new Map();
    for (const i of run.instances || []) {
      if (!i.executor) continue;
      if (!running.has(i.executor)) running.set(i.executor, []);
      running.get(i.executor).push(i);
    }
    list.replaceChildren(executorTable(ex.executors || [], running));
    stamp.textContent = 'updated ' + fmtTime(new Date().toISOString()).slice(11);
  };
  await load();
  const timer = setInterval(() => load().catch(showError), 5000);
  page.signal.addEventListener('abort', () => clearInterval(timer));
}

// runsText is what an executor can run (no capabilities: an executor
// older than them, which runs shell and http).
export function runsText(cap) {
  if (!cap) return 'shell, http';
  return [cap.shell ? 'shell' : '', cap.http ? 'http' : '', ...(cap.handlers || []).map(x => 'sdk:' + x)].filter(Boolean).join(', ') || 'nothing';
}

function executorTable(list, running) {
  return table(['Executor', 'Labels', 'Runs', 'Slots', 'Running attempts', 'Last heartbeat'], list.map(e => {
    const total = e.capacity || e.running + e.free; // an older executor declares no capacity
    const mine = running.get(e.name) || [];
    return h('tr', {dataset: {executor: e.name}},
      h('td', {}, h('strong', {}, e.name), e.host ? h('div', {class: 'muted small'}, e.host) : null),
      h('td', {class: 'labels'}, Object.entries(e.labels || {}).map(([k, v]) => h('span', {class: 'tag'}, k + '=' + v))),
      h('td', {class: 'caps'}, runsText(e.capabilities)),
      h('td', {class: 'slots'}, h('meter', {min: 0, max: Math.max(total, 1), value: e.running, 'aria-label': 'Slots in use on ' + e.name}),
        ' ' + e.running + ' running / ' + total + ' · ' + e.free + ' free'),
      h('td', {class: 'running'}, mine.length ? mine.slice(0, 10).map((i, n) => [n ? ', ' : '',
        h('a', {href: '#/instances/' + i.id, class: 'mono', title: i.task + ' attempt ' + i.attempts}, i.task)]) : h('span', {class: 'muted'}, 'none'),
      mine.length > 10 ? ' … +' + (mine.length - 10) + ' more' : ''),
      h('td', {title: e.lastSeen}, ago(e.lastSeen)));
  }), 'No executor has polled the leader in the last minute. Start one with `ax executor -server ...`, or run agents with -executor.');
}
