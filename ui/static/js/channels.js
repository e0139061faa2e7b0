// Channels: the notification channels, each with its kind, its target
// (the URL's credential and every secret redacted), which alerts it
// takes (minSeverity, events) and which tasks' alerts reach it (named in
// policy.notify, or matched by labels); an operator sends a test
// notification through the real notifier and reads whether it was
// delivered or why not. GET /v1/channels and /v1/tasks.

import {api, can} from './api.js';
import {showError} from './notice.js';
import {h, table, fmtTime} from './util.js';

export async function render(main, _, page) {
  const list = h('div', {id: 'channels'});
  main.append(h('div', {class: 'row wrap'}, h('h1', {}, 'Channels')), list,
    h('p', {class: 'muted small'}, 'Alerts reach a channel when its task names it in policy.notify, or when the task\'s labels hold the channel\'s match ' +
      '(no match: every alert, the cluster\'s too), at the channel\'s minimum severity and events. ' +
      (can('operator') ? 'Test sends a test notification now, once, whatever the match; nothing else changes.' : 'Operators can send a test notification.')));
  const [chs, tasks] = await Promise.all([api('/v1/channels', {signal: page.signal}), allTasks(page.signal)]);
  list.replaceChildren(channelTable(chs.channels || [], tasks));
}

// allTasks reads every task, a page at a time.
async function allTasks(signal) {
  let out = [], cursor = '';
  do {
    const p = await api('/v1/tasks?limit=1000' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''), {signal});
    out = out.concat(p.tasks || []);
    cursor = p.nextCursor || '';
  } while (cursor);
  return out;
}

// redact keeps a URL's scheme and host: its path and query are often the
// credential (a Slack webhook's, a robot's token). The API already hides
// them below writer; the page hides them from everyone's screen.
export function redact(u) {
  try {
    const x = new URL(u);
    return x.origin + (x.pathname.length > 1 || x.search ? '/…' : '');
  } catch {
    return u ? '(redacted)' : '';
  }
}

function target(c) {
  if (c.type === 'email') {
    const e = c.email || {};
    return [h('div', {}, 'to ' + (e.to || []).join(', ')), h('div', {class: 'muted small'}, 'from ' + (e.from || '') + ' via ' + (e.smtp || '') +
      ' (' + (e.tls || 'starttls') + ')' + (e.username ? ', user ' + e.username : '') + (e.passwordSet ? ', password set' : ''))];
  }
  return [h('span', {class: 'mono'}, redact(c.url)), c.secretSet ? h('div', {class: 'muted small'}, 'signed (secret set)') : null];
}

function users(c, tasks) {
  const named = tasks.filter(t => ((t.policy || {}).notify || []).includes(c.name)).map(t => t.name);
  const match = Object.entries(c.match || {});
  const matched = match.length ? tasks.filter(t => match.every(([k, v]) => (t.labels || {})[k] === v)).map(t => t.name).filter(n => !named.includes(n)) : [];
  const link = n => h('a', {href: '#/tasks/' + encodeURIComponent(n)}, n);
  const few = (names, why) => names.length ? h('div', {}, why + ': ', names.slice(0, 8).map((n, i) => [i ? ', ' : '', link(n)]),
    names.length > 8 ? ' … +' + (names.length - 8) + ' more' : '') : null;
  return [few(named, 'named in policy.notify'),
    match.length ? [h('div', {}, 'match ', match.map(([k, v]) => h('span', {class: 'tag'}, k + '=' + v))), few(matched, 'matched by labels')] :
      h('div', {}, 'every alert (no match)'),
    h('div', {class: 'muted small'}, 'severity ≥ ' + (c.minSeverity || 'info') + ' · ' + (c.events || ['firing', 'resolved']).join(', '))];
}

function channelTable(list, tasks) {
  return table(['Channel', 'Kind', 'Target', 'Takes', 'Updated', can('operator') ? 'Test' : null].filter(Boolean), list.map(c => {
    const status = h('div', {class: 'small test-result', role: 'status', 'aria-live': 'polite'});
    const btn = can('operator') ? h('button', {class: 'act-test', 'aria-label': 'Send a test notification to ' + c.name, onclick: async () => {
      btn.disabled = true;
      status.textContent = 'sending…';
      try {
        const r = await api('/v1/channels/' + encodeURIComponent(c.name) + '/test', {method: 'POST', body: {}});
        status.replaceChildren(r.delivered ? h('span', {class: 'ok-text'}, '✓ delivered in ' + r.tookMs + ' ms via ' + r.node) :
          h('span', {class: 'bad-text'}, '✗ not delivered: ' + r.error + (r.permanent ? ' (trying again will not help)' : '')));
      } catch (err) {
        status.textContent = '';
        showError(err);
      } finally { btn.disabled = false; }
    }}, 'Test') : null;
    return h('tr', {dataset: {channel: c.name}},
      h('td', {}, h('strong', {}, c.name)), h('td', {}, c.type), h('td', {class: 'target'}, target(c)), h('td', {class: 'users'}, users(c, tasks)),
      h('td', {title: c.updatedAt || ''}, fmtTime(c.updatedAt), c.updatedBy ? h('div', {class: 'muted small'}, 'by ' + c.updatedBy) : null),
      btn ? h('td', {}, btn, status) : null);
  }), 'No channel. A writer adds one with `ax channel apply` or PUT /v1/channels/{name}.');
}
