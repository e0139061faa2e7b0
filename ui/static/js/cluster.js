// Cluster: the members (role, health, lag, applied index, contact with
// the leader, version), the term and indexes, and each member's clock
// offset from the cluster's as the node answering measures it; an admin
// transfers leadership and removes a member. GET /v1/cluster and
// /healthz every 5 s.

import {api, can} from './api.js';
import {showError, dialog, errText} from './notice.js';
import {h, fill, section, table, fmtTime} from './util.js';

export async function render(main, _, page) {
  const stamp = h('span', {class: 'muted'});
  const summary = h('p', {id: 'cluster-summary'}), members = h('div', {id: 'members'}), clock = h('div', {id: 'clock'});
  main.append(
    h('div', {class: 'row wrap'}, h('h1', {}, 'Cluster'), stamp, h('span', {class: 'grow'}),
      can('admin') ? h('div', {class: 'row wrap actions'},
        h('button', {id: 'act-transfer', onclick: () => transferDialog('', load)}, 'Transfer leadership')) : null),
    summary,
    section('Members', members),
    section('Clocks', clock));
  async function load() {
    const [c, hz] = await Promise.all([
      api('/v1/cluster', {signal: page.signal}),
      // /healthz answers 503 with the same JSON when this node is not
      // healthy: the page shows why and goes on without the clocks.
      api('/healthz', {signal: page.signal}).catch(err => { if (err.name === 'AbortError') throw err; return {error: err}; })]);
    summary.replaceChildren('Leader ', h('strong', {}, c.leader || 'none'), ' · term ' + c.term + ' · commit index ' + c.commitIndex +
      ' · applied ' + c.appliedIndex + ' · protocol ' + c.protocol + (hz.node ? ' · answered by ' + hz.node : ''));
    const offsets = new Map(((hz.clock && hz.clock.members) || []).map(m => [m.node, m]));
    members.replaceChildren(memberTable(c, offsets, load));
    fill(clock, clockText(hz));
    stamp.textContent = 'updated ' + fmtTime(new Date().toISOString()).slice(11);
  }
  await load();
  const timer = setInterval(() => load().catch(showError), 5000);
  page.signal.addEventListener('abort', () => clearInterval(timer));
}

function memberTable(c, offsets, reload) {
  const admin = can('admin');
  return table(['Node', 'Role', 'Health', 'Lag', 'Applied', 'Leader contact', 'Clock offset', 'Version', 'Address', ...(admin ? ['Actions'] : [])],
    (c.nodes || []).map(n => {
      const off = offsets.get(n.id);
      return h('tr', {dataset: {node: n.id}},
        h('td', {}, h('strong', {}, n.id)),
        h('td', {class: 'role'}, n.leader ? h('strong', {}, 'leader') : (n.suffrage === 'voter' ? 'follower' : n.suffrage), n.role && !n.leader && n.role !== 'follower' ? ' (' + n.role + ')' : ''),
        h('td', {title: n.problem || ''}, h('span', {class: 'badge ' + (n.status === 'ok' ? 'ok' : n.status ? 'bad' : 'off')}, n.status || '?'),
          n.problem ? h('div', {class: 'muted small'}, n.problem) : null),
        h('td', {class: 'lag'}, n.lag === undefined || n.lag === null ? '—' : String(n.lag)),
        h('td', {}, n.appliedIndex ? String(n.appliedIndex) : '—'),
        h('td', {}, n.leader ? '—' : (n.lastContact || '—') + (n.raftContact ? ' (Raft: ' + n.raftContact + ')' : '')),
        h('td', {class: 'offset'}, off ? [off.offset, off.rtt ? h('div', {class: 'muted small'}, 'rtt ' + off.rtt + ', ' + off.age + ' ago') : null] : '—'),
        h('td', {}, (n.version || '—') + (n.proto ? ' · proto ' + n.proto : '')),
        h('td', {class: 'mono small'}, n.httpAddr || '', h('div', {class: 'muted'}, 'raft ' + n.raftAddr)),
        admin ? h('td', {class: 'row wrap'},
          !n.leader && n.suffrage === 'voter' ? h('button', {class: 'act-transfer', 'aria-label': 'Make leader: ' + n.id,
            onclick: () => transferDialog(n.id, reload)}, 'Make leader') : null,
          h('button', {class: 'danger act-remove', 'aria-label': 'Remove ' + n.id, onclick: () => removeDialog(n, c, reload)}, 'Remove')) : null);
    }), 'No members.');
}

function clockText(hz) {
  if (hz.error) return h('p', {class: 'error'}, 'This node\'s /healthz: ' + errText(hz.error));
  const ck = hz.clock;
  if (!ck) return h('p', {class: 'empty'}, 'The clocks have not been measured yet.');
  return [
    h('p', {}, 'This node\'s clock is ' + (hz.clockOffset || '0s') + ' from the cluster\'s (the median of the members\' clocks); the bound is ' + ck.maxSkew + '. ' +
      (ck.quorum ? 'Enough members answered to tell whose clock is off.' : 'Too few members answered: offsets are from this node\'s clock.')),
    ck.corrected ? h('p', {class: 'warn-text'}, 'This node takes ' + ck.corrected + ' off its own clock to keep to the cluster\'s.') : null,
    ck.skewed && ck.skewed.length ? h('p', {class: 'bad-text', id: 'skewed'}, 'Off by more than the bound: ' + ck.skewed.map(s => s.node + ' (' + s.offset + ')').join(', ')) : null,
    ck.jump ? h('p', {class: 'warn-text'}, 'Clock step: ' + ck.jump.reason) : null,
  ];
}

function transferDialog(id, reload) {
  dialog(id ? 'Make ' + id + ' the leader?' : 'Transfer leadership?', h('p', {},
    (id ? id : 'The most up-to-date follower') + ' takes over; writes pause for the moment of the election.'), 'Transfer', async () => {
    await api('/v1/cluster/transfer', {method: 'POST', body: id ? {id} : {}});
    await reload().catch(() => {});
    return true;
  });
}

function removeDialog(n, c, reload) {
  const input = h('input', {id: 'remove-name', autocomplete: 'off', 'aria-label': 'Node id'});
  const voters = (c.nodes || []).filter(x => x.suffrage === 'voter').length;
  dialog('Remove ' + n.id + ' from the cluster?', h('div', {},
    h('p', {}, 'It stops being a member: ' + (n.suffrage === 'voter' ? voters - 1 + ' voters remain, and a majority of them is needed to write. ' : '') +
      'A replacement joins with a new id (ax agent -join). Type its id to confirm.'), input), 'Remove', async () => {
    if (input.value !== n.id) throw new Error('type "' + n.id + '" to confirm');
    await api('/v1/cluster/' + encodeURIComponent(n.id), {method: 'DELETE'});
    await reload().catch(() => {});
    return true;
  }, {danger: true});
}
