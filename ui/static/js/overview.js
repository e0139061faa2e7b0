// Overview: the cluster at a glance. GET /v1/overview every 5 s, GET
// /v1/upcoming every 30 s.

import {api} from './api.js';
import {showError} from './notice.js';
import {h, svg, section, table, fmtTime, ago, badge} from './util.js';
import {runsText} from './executors.js';

const COUNTED = ['READY', 'RUNNING', 'BLOCKED', 'WAITING_APPROVAL', 'RETRYING', 'SCHEDULED'];

export async function render(main, _, page) {
  let within = '1h';
  const stamp = h('span', {class: 'muted'});
  const body = h('div', {class: 'grid'});
  const upcoming = h('div', {});
  main.append(h('div', {class: 'row'}, h('h1', {}, 'Overview'), stamp), body,
    section('Upcoming fires',
      h('div', {class: 'row', role: 'group', 'aria-label': 'Window'},
        ['1h', '1d'].map(w => h('button', {class: 'toggle', 'aria-pressed': String(w === within), dataset: {within: w}, onclick: e => {
          within = w;
          e.target.parentNode.querySelectorAll('button').forEach(b => b.setAttribute('aria-pressed', String(b.dataset.within === w)));
          loadUpcoming();
        }}, 'next ' + (w === '1h' ? 'hour' : 'day')))),
      upcoming));

  async function load() {
    try {
      const o = await api('/v1/overview', {signal: page.signal});
      body.replaceChildren(...cards(o));
      stamp.textContent = 'updated ' + fmtTime(o.time).slice(11);
    } catch (err) { showError(err); }
  }
  async function loadUpcoming() {
    try {
      const u = await api('/v1/upcoming?within=' + within + '&limit=500', {signal: page.signal});
      upcoming.replaceChildren(timeline(u));
    } catch (err) { showError(err); }
  }
  await Promise.all([load(), loadUpcoming()]);
  const t1 = setInterval(load, 5000), t2 = setInterval(loadUpcoming, 30000);
  page.signal.addEventListener('abort', () => { clearInterval(t1); clearInterval(t2); });
}

function cards(o) {
  const counts = o.counts || {};
  const failRate = (w) => {
    const done = (w.SUCCESS || 0) + (w.FAILED || 0) + (w.TERMINATED || 0);
    return done ? Math.round(100 * ((w.FAILED || 0) + (w.TERMINATED || 0)) / done) + '% failed' : 'nothing finished';
  };
  const win = (label, w = {}) => h('div', {class: 'stat'},
    h('div', {class: 'muted'}, label),
    h('div', {class: 'big'}, String(w.fired || 0), h('small', {}, ' fired')),
    h('div', {}, h('a', {href: '#/instances?state=SUCCESS'}, (w.SUCCESS || 0) + ' succeeded'), ' · ',
      h('a', {href: '#/instances?state=FAILED', class: w.FAILED ? 'bad-text' : ''}, (w.FAILED || 0) + ' failed'),
      (w.TERMINATED ? ' · ' + w.TERMINATED + ' terminated' : '')),
    h('div', {class: 'muted'}, failRate(w)));
  return [
    section('Instances now',
      h('div', {class: 'counts'}, COUNTED.map(s => h('a', {class: 'count', href: '#/instances?state=' + s, dataset: {count: s}},
        h('span', {class: 'big'}, String(counts[s] || 0)), badge(s)))),
      h('p', {class: 'muted'}, (o.tasks ? o.tasks.total + ' tasks, ' + o.tasks.paused + ' paused' : ''))),
    section('Throughput',
      h('div', {class: 'row wrap'}, win('Last hour', o.lastHour), win('Last day', o.lastDay)),
      sparkline(o.perMinute || [])),
    section('Members', members(o)),
    section('Executors', executors(o)),
    section('Recent failures', table(['Finished', 'Task', 'Instance', 'State', 'Error'],
      (o.recentFailures || []).map(f => h('tr', {},
        h('td', {title: f.finishedAt}, ago(f.finishedAt)),
        h('td', {}, h('a', {href: '#/tasks/' + encodeURIComponent(f.task)}, f.task)),
        h('td', {}, h('a', {href: '#/instances/' + f.id, class: 'mono'}, f.id)),
        h('td', {}, badge(f.state)),
        h('td', {class: 'clip', title: f.lastError || ''}, f.lastError || ''))),
      'No failures recorded. Failed and terminated instances show here.')),
    section('Alerts', alerts(o),
      h('h2', {class: 'sub'}, 'Misfires'),
      table(['When', 'Task', 'What'], (o.recentMisfires || []).map(m => h('tr', {},
        h('td', {title: m.time}, ago(m.time)),
        h('td', {}, h('a', {href: '#/tasks/' + encodeURIComponent(m.task)}, m.task)),
        h('td', {}, m.message))), 'No misfires: every due fire was made on time.')),
  ];
}

// alerts lists the firing alerts (GET /v1/alerts has the history).
function alerts(o) {
  const list = o.alerts || [];
  const pending = (o.notificationsPending || 0) + (o.alertsPending || 0);
  const sev = {critical: 'bad', warning: 'warn', info: 'off'};
  const subject = a => {
    const s = a.subject || {};
    if (s.instance) return h('a', {href: '#/instances/' + s.instance}, (s.task ? s.task + ' ' : '') + s.instance);
    if (s.task) return h('a', {href: '#/tasks/' + encodeURIComponent(s.task)}, s.task);
    return s.node ? 'node ' + s.node : s.executor ? 'executor ' + s.executor : 'cluster';
  };
  return [
    h('p', {class: 'muted', id: 'alerts-firing'}, (o.alertsFiring || 0) + ' firing' + (pending ? ' · ' + pending + ' notifications waiting to be sent' : ''),
      ' · ', h('a', {href: '#/alerts'}, 'all alerts, silences and history')),
    table(['Since', 'Severity', 'Rule', 'Subject', 'Summary'], list.map(a => h('tr', {dataset: {alert: a.id}},
      h('td', {title: a.firstSeen}, ago(a.firstSeen)),
      h('td', {}, h('span', {class: 'badge ' + (sev[a.severity] || 'off')}, a.severity)),
      h('td', {class: 'mono small'}, a.rule),
      h('td', {}, subject(a)),
      h('td', {}, a.summary, a.count > 1 ? h('span', {class: 'muted'}, ' ×' + a.count) : null, a.silenced ? h('span', {class: 'badge off'}, 'silenced') : null))),
    'No alert is firing.'),
  ];
}

function members(o) {
  if (!o.cluster) return h('p', {class: 'error'}, 'Cluster status unavailable: ' + (o.clusterError || 'no answer'));
  const c = o.cluster;
  return [
    h('p', {class: 'muted'}, 'term ' + c.term + ' · commit ' + c.commitIndex + ' · protocol ' + c.protocol),
    table(['Node', 'Role', 'Health', 'Lag', 'Version', 'Address'], (c.nodes || []).map(n => h('tr', {},
      h('td', {}, n.id),
      h('td', {}, n.leader ? h('strong', {}, 'leader') : (n.suffrage === 'voter' ? 'follower' : n.suffrage)),
      h('td', {title: n.problem || ''}, h('span', {class: 'badge ' + (n.status === 'ok' ? 'ok' : n.status ? 'bad' : 'off')}, n.status || '?'),
        n.problem ? h('div', {class: 'muted small'}, n.problem) : null),
      h('td', {}, n.lag === undefined || n.lag === null ? '—' : String(n.lag)),
      h('td', {}, n.version || '—'),
      h('td', {class: 'mono'}, n.httpAddr || n.raftAddr))), 'No members.'),
  ];
}

function executors(o) {
  if (!o.executors) return h('p', {class: 'error'}, 'Executors unavailable: ' + (o.executorsError || 'no answer'));
  return table(['Executor', 'Host', 'Slots in use', 'Runs', 'Last heartbeat'], o.executors.map(e => {
    const runs = runsText(e.capabilities);
    const labels = Object.entries(e.labels || {}).map(([k, v]) => k + '=' + v).join(' ');
    const total = e.capacity || e.running + e.free; // an older executor declares no capacity
    return h('tr', {},
      h('td', {}, e.name, labels ? h('div', {class: 'muted small'}, labels) : null),
      h('td', {}, e.host || '—'),
      h('td', {}, meter(e.running, total), ' ' + e.running + ' / ' + total),
      h('td', {}, runs),
      h('td', {title: e.lastSeen}, ago(e.lastSeen)));
  }), 'No executor has polled the leader recently. Start one with `ax executor -server ...`, or run agents with -executor.');
}

function meter(v, max) {
  return h('meter', {min: 0, max: Math.max(max, 1), value: v});
}

// sparkline draws fired (bars) and failed (red) per minute.
function sparkline(points) {
  if (!points.length) return h('p', {class: 'empty'}, 'No fires in the last hour.');
  const W = 600, H = 60, bw = W / points.length;
  const max = Math.max(1, ...points.map(p => p.fired || 0));
  const bars = points.flatMap((p, i) => {
    const fh = (p.fired || 0) / max * H, bh = (p.failed || 0) / max * H;
    return [svg('rect', {x: i * bw, y: H - fh, width: Math.max(bw - 1, 1), height: fh, class: 'bar'},
      svg('title', {}, fmtTime(p.minute).slice(11, 16) + ': ' + (p.fired || 0) + ' fired, ' + (p.succeeded || 0) + ' succeeded, ' + (p.failed || 0) + ' failed')),
    bh ? svg('rect', {x: i * bw, y: H - bh, width: Math.max(bw - 1, 1), height: bh, class: 'bar-bad'}) : null];
  });
  return h('figure', {class: 'spark'}, svg('svg', {viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img', 'aria-label': 'Fires per minute, last hour'}, bars),
    h('figcaption', {class: 'muted'}, 'fires per minute, last 60 minutes (peak ' + max + '); failures in red'));
}

// timeline draws the upcoming fires: one row per task (the 12 that fire
// first), a dot per fire, then the next fires as a list. When the window
// holds more fires than were asked for (truncated), the chart ends at the
// last fire it got and says so: drawn to the window's end, every task
// would seem to stop firing there.
function timeline(u) {
  const fires = u.fires || [];
  if (!fires.length) return h('p', {class: 'empty'}, 'Nothing is due in this window (paused and event tasks do not fire on their own).');
  const from = new Date(u.from).getTime();
  const last = new Date(fires[fires.length - 1].time).getTime();
  const to = u.truncated ? Math.max(last, from + 60000) : new Date(u.to).getTime();
  const rows = [];
  const byTask = new Map();
  for (const f of fires) {
    if (!byTask.has(f.task)) { if (byTask.size >= 12) continue; byTask.set(f.task, []); rows.push(f.task); }
    byTask.get(f.task).push(f.time);
  }
  const W = 700, L = 150, RH = 18, H = rows.length * RH + 20;
  const x = t => L + (new Date(t).getTime() - from) / (to - from) * (W - L - 10);
  const ticks = [];
  for (let i = 0; i <= 4; i++) {
    const t = new Date(from + (to - from) * i / 4).toISOString();
    ticks.push(svg('text', {x: x(t), y: H - 4, class: 'tick', 'text-anchor': 'middle'}, fmtTime(t).slice(11, 16)));
  }
  const chart = svg('svg', {viewBox: `0 0 ${W} ${H}`, class: 'timeline', role: 'img', 'aria-label': 'Upcoming fires by task'},
    rows.map((task, i) => [
      svg('text', {x: 0, y: i * RH + 13, class: 'lbl'}, task.length > 20 ? task.slice(0, 19) + '…' : task),
      svg('line', {x1: L, x2: W - 10, y1: i * RH + 9, y2: i * RH + 9, class: 'rule'}),
      byTask.get(task).map(t => svg('circle', {cx: x(t), cy: i * RH + 9, r: 3.5, class: 'dot'}, svg('title', {}, task + ' ' + fmtTime(t)))),
    ]), ticks);
  return h('div', {},
    h('div', {class: 'scroll', tabindex: '0'}, chart),
    h('p', {class: 'muted', id: 'upcoming-note'}, (u.truncated ?
      'the first ' + fires.length + ' fires, up to ' + fmtTime(fires[fires.length - 1].time).slice(11, 16) + ': the window holds more, so the chart ends there' :
      fires.length + ' fires in the window') + (byTask.size < new Set(fires.map(f => f.task)).size ? '; the chart shows the first 12 tasks' : '')),
    table(['When', 'Task'], fires.slice(0, 10).map(f => h('tr', {},
      h('td', {title: f.time}, fmtTime(f.time) + ' (' + ago(f.time) + ')'),
      h('td', {}, h('a', {href: '#/tasks/' + encodeURIComponent(f.task)}, f.task)))), ''));
}
