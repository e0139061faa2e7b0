// Calendars: the exclusion calendars triggers name (the days their
// fires skip or move off), the tasks using each; a writer creates,
// replaces and deletes them.

import {h} from './util.js';
import {listPage, field, textArea, lines, compact, taskLinks} from './defs.js';

// A weekday entry is a name ("sat", "saturday"); dates have digits.
const weekday = e => !/\d/.test(e);

export function render(main, _, page) {
  return listPage(main, page, {
    title: 'Calendars', noun: 'calendar', path: '/v1/calendars', key: 'calendars',
    headers: ['Calendar', 'Time zone', 'Excluded', 'Included', 'Used by'],
    empty: h('span', {}, 'No calendars yet. Create one with ', h('code', {}, 'ax calendar apply'), ' or PUT /v1/calendars/{name}.'),
    deleteText: 'Tasks naming a deleted calendar no longer skip its days.',
    row, form,
  });
}

function row(c, actions) {
  // Weekdays first ("sat, sun"), then dates and ranges in their order.
  const ex = c.exclude || [];
  const days = ex.filter(weekday);
  const rest = ex.filter(e => !weekday(e));
  return h('tr', {dataset: {calendar: c.name}},
    h('td', {}, h('strong', {}, c.name), c.description ? h('div', {class: 'muted small'}, c.description) : null),
    h('td', {}, c.timezone || 'UTC'),
    h('td', {class: 'mono small exclude'}, days.length ? h('span', {class: 'tag'}, 'every ' + days.join(', ')) : null, rest.length || !days.length ? compact(rest) : null),
    h('td', {class: 'mono small include'}, compact(c.include)),
    h('td', {class: 'used-by'}, taskLinks(c.usedBy)),
    actions);
}

function form(c) {
  const tz = h('input', {id: 'cal-tz', name: 'timezone', value: c.timezone || 'UTC', placeholder: 'Europe/Berlin', autocomplete: 'off'});
  const desc = h('input', {id: 'cal-desc', name: 'description', value: c.description || '', autocomplete: 'off'});
  const ex = textArea('cal-exclude', 'exclude', c.exclude, '2026-12-25\n2026-12-24/2026-12-26\nsat');
  const inc = textArea('cal-include', 'include', c.include, '2026-12-19');
  return {
    fields: [field('cal-tz', 'Time zone', tz), field('cal-desc', 'Description', desc),
      field('cal-exclude', 'Exclude', ex, 'One per line: a date (2026-12-25), a range of dates with both ends included (2026-12-24/2026-12-26), or a weekday (sat).'),
      field('cal-include', 'Include', inc, 'One per line: dates and ranges allowed whatever Exclude says (a working Saturday).')],
    read: () => ({timezone: tz.value.trim(), description: desc.value.trim(), exclude: lines(ex.value), include: lines(inc.value)}),
  };
}
