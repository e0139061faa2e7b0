// Windows: the blackout windows that hold back the fires of the tasks
// their selector matches, each with where it stands now (active until
// when, or its next span, in your time zone) and the tasks it matches; a
// writer creates, replaces and deletes them.

import {h, fmtTime, zoneName, isZero} from './util.js';
import {listPage, field, textArea, lines, keyValues, compact, taskLinks} from './defs.js';

export function render(main, _, page) {
  return listPage(main, page, {
    title: 'Blackout windows', noun: 'window', path: '/v1/windows', key: 'windows',
    headers: ['Window', 'Time zone', 'Schedule', 'Selector', 'Status (your time)', 'Tasks held'],
    empty: h('span', {}, 'No blackout windows. Create one with PUT /v1/windows/{name}.'),
    deleteText: 'The tasks it holds fire again at once; what it held back is handled by their catch-up policy.',
    row, form,
  });
}

// span renders [from, until) in the viewer's zone.
export function span(from, until) {
  return fmtTime(from) + ' – ' + fmtTime(until) + ' ' + zoneName(until);
}

// status is a window's state in a sentence.
function status(s) {
  if (!s) return h('span', {class: 'muted'}, 'unknown (this node cannot load its time zone)');
  const next = !isZero(s.nextFrom) ? h('div', {class: 'muted small next'}, 'next ' + span(s.nextFrom, s.nextUntil)) : null;
  if (s.active) {
    return [h('span', {class: 'badge warn active', title: 'since ' + fmtTime(s.from)}, 'active until ' + fmtTime(s.until) + ' ' + zoneName(s.until)), next];
  }
  return next || h('span', {class: 'muted'}, 'no span ahead');
}

function row(w, actions) {
  const sched = [];
  if (w.cron) sched.push(h('div', {}, 'cron ', h('code', {}, w.cron), ' for ' + (w.duration || '?')));
  if (w.ranges && w.ranges.length) sched.push(h('div', {}, compact(w.ranges, 4)));
  const sel = Object.entries(w.selector || {});
  const st = w.status;
  return h('tr', {dataset: {window: w.name}, class: st && st.active ? 'held' : ''},
    h('td', {}, h('strong', {}, w.name), w.description ? h('div', {class: 'muted small'}, w.description) : null),
    h('td', {}, w.timezone || 'UTC'),
    h('td', {class: 'small schedule'}, sched),
    h('td', {class: 'small'}, sel.length ? sel.map(([k, v]) => h('span', {class: 'tag'}, k + '=' + v)) : h('span', {class: 'muted'}, 'every task')),
    h('td', {class: 'status'}, status(st)),
    h('td', {class: 'held-tasks'}, taskLinks(st && st.tasks)),
    actions);
}

function form(w) {
  const tz = h('input', {id: 'win-tz', name: 'timezone', value: w.timezone || 'UTC', placeholder: 'Europe/Berlin', autocomplete: 'off'});
  const desc = h('input', {id: 'win-desc', name: 'description', value: w.description || '', autocomplete: 'off'});
  const cron = h('input', {id: 'win-cron', name: 'cron', value: w.cron || '', placeholder: '0 22 * * fri', autocomplete: 'off', 'aria-describedby': 'win-cron-hint'});
  const dur = h('input', {id: 'win-duration', name: 'duration', value: w.duration || '', placeholder: '56h', autocomplete: 'off'});
  const ranges = textArea('win-ranges', 'ranges', w.ranges, '2026-12-24/2026-12-26\n2026-12-31T18:00/2027-01-01T06:00');
  const sel = textArea('win-selector', 'selector', Object.entries(w.selector || {}).map(([k, v]) => k + '=' + v), 'team=data');
  return {
    fields: [field('win-tz', 'Time zone', tz), field('win-desc', 'Description', desc),
      field('win-cron', 'Cron', cron, 'Starts each repeat, in the time zone; with a duration.'), field('win-duration', 'Duration', dur),
      field('win-ranges', 'Ranges', ranges, 'One per line: a date, a range of dates (both ends included) or of wall times (the end excluded).'),
      field('win-selector', 'Selector', sel, 'One label per line, key=value; a task must carry all of them. Empty: every task.')],
    read: () => {
      const selector = keyValues(sel.value);
      return {timezone: tz.value.trim(), description: desc.value.trim(), cron: cron.value.trim(), duration: dur.value.trim(),
        ranges: lines(ranges.value), selector};
    },
  };
}
