// Pools: the shared slots that tasks naming a pool (policy.pool) take
// from, each with how many are busy and how many instances wait for one,
// its rate limit, and the tasks that use it; a writer creates, replaces
// and deletes them.

import {h} from './util.js';
import {listPage, field, taskLinks} from './defs.js';

export function render(main, _, page) {
  return listPage(main, page, {
    title: 'Pools', noun: 'pool', path: '/v1/pools', key: 'pools',
    headers: ['Pool', 'Slots busy', 'Waiting', 'Rate limit', 'Tasks'],
    empty: h('span', {}, 'No pools yet. Create one with ', h('code', {}, 'ax pool apply'), ' or PUT /v1/pools/{name}.'),
    deleteText: 'A pool that tasks still name cannot be deleted: change their policy.pool first.',
    row, form,
  });
}

// short drops a Go duration's zero tail: "1m0s" is "1m", "1h0m0s" "1h".
const short = d => String(d || '').replace(/([hm])0s$/, '$1').replace(/h0m$/, 'h');

// rate says a rate limit in words: "10 per 1m (burst 5), then delay".
function rate(r) {
  if (!r || !r.count) return h('span', {class: 'muted'}, 'none');
  return (r.count + ' per ' + short(r.per)) + (r.burst ? ' (burst ' + r.burst + ')' : '') + (r.onLimit ? ', then ' + r.onLimit : '');
}

function row(p, actions) {
  const full = p.busy >= p.slots;
  return h('tr', {dataset: {pool: p.name}, class: full ? 'held' : ''},
    h('td', {}, h('strong', {}, p.name), p.description ? h('div', {class: 'muted small'}, p.description) : null),
    h('td', {class: 'busy'}, h('meter', {min: '0', max: String(p.slots), value: String(p.busy), 'aria-label': p.name + ' slots busy'}),
      ' ' + p.busy + ' of ' + p.slots),
    h('td', {class: 'queued'}, String(p.queued || 0)),
    h('td', {class: 'small rate'}, rate(p.rateLimit)),
    h('td', {class: 'used-by'}, taskLinks(p.tasks)),
    actions);
}

function form(p) {
  const desc = h('input', {id: 'pool-desc', name: 'description', value: p.description || '', autocomplete: 'off'});
  const slots = h('input', {id: 'pool-slots', name: 'slots', type: 'number', min: '1', value: String(p.slots || 1)});
  const r = p.rateLimit || {};
  const count = h('input', {id: 'pool-rate-count', name: 'rateLimit', type: 'number', min: '0', value: r.count ? String(r.count) : ''});
  const per = h('input', {id: 'pool-rate-per', name: 'per', value: short(r.per), placeholder: '1m', autocomplete: 'off'});
  return {
    fields: [field('pool-desc', 'Description', desc), field('pool-slots', 'Slots', slots, 'How many instances of its tasks run at once, across them.'),
      field('pool-rate-count', 'Rate limit: starts', count, 'Empty: no rate limit.'), field('pool-rate-per', 'per', per)],
    read: () => {
      const out = {description: desc.value.trim(), slots: Number(slots.value)};
      if (count.value !== '') out.rateLimit = {...r, count: Number(count.value), per: per.value.trim()};
      return out;
    },
  };
}
