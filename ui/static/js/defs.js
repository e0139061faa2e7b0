// The pages of named definitions the API stores whole (calendars and
// blackout windows): a polled table, and for a writer a create/replace
// form and a delete button per row.

import {api, can} from './api.js';
import {showError, dialog} from './notice.js';
import {h, table} from './util.js';

// listPage renders a list page: spec.title, spec.path (/v1/calendars),
// spec.key (the list's field in the answer), spec.headers and
// spec.row(def, actions) for each definition, spec.empty when there is
// none, spec.form(def) for the writer's dialog (see formDialog). The list
// is polled every 5 s, like the overview, until the page changes.
export async function listPage(main, page, spec) {
  const list = h('div', {});
  const load = async () => {
    const res = await api(spec.path, {signal: page.signal});
    const defs = res[spec.key] || [];
    list.replaceChildren(table(can('writer') ? [...spec.headers, h('span', {class: 'sr'}, 'Actions')] : spec.headers,
      defs.map(d => spec.row(d, can('writer') ? rowActions(spec, d, load) : null)), spec.empty));
  };
  main.append(h('div', {class: 'row wrap'}, h('h1', {}, spec.title), h('span', {class: 'grow'}),
    can('writer') ? h('div', {class: 'row wrap actions'},
      h('button', {class: 'primary', id: 'act-new', onclick: () => formDialog(spec, null, load)}, 'New ' + spec.noun)) : null),
  list);
  await load();
  const timer = setInterval(() => load().catch(showError), 5000);
  page.signal.addEventListener('abort', () => clearInterval(timer));
}

function rowActions(spec, d, reload) {
  const path = spec.path + '/' + encodeURIComponent(d.name);
  return h('td', {class: 'row'},
    h('button', {class: 'act-edit', 'aria-label': 'Replace ' + d.name, onclick: () => formDialog(spec, d, reload)}, 'Replace'),
    h('button', {class: 'danger act-delete', 'aria-label': 'Delete ' + d.name, onclick: () =>
      dialog('Delete ' + spec.noun + ' ' + d.name + '?', h('p', {}, spec.deleteText), 'Delete', async () => {
        await api(path, {method: 'DELETE'});
        await reload();
        return true;
      }, {danger: true})}, 'Delete'));
}

// formDialog opens the create (def null) or replace form of spec.form:
// {fields, read(form)}. The PUT's refusal is shown in the dialog, naming
// the field, and that field is marked invalid and focused.
function formDialog(spec, def, reload) {
  const f = spec.form(def || {});
  const name = h('input', {id: 'def-name', name: 'name', required: true, autocomplete: 'off', value: def ? def.name : '', readonly: !!def});
  const body = h('div', {}, field('def-name', 'Name', name), ...f.fields);
  dialog((def ? 'Replace ' : 'New ') + spec.noun + (def ? ' ' + def.name : ''), body, def ? 'Replace' : 'Create', async form => {
    form.querySelectorAll('[aria-invalid]').forEach(el => el.removeAttribute('aria-invalid'));
    try {
      const res = await api(spec.path + '/' + encodeURIComponent(name.value.trim()), {method: 'PUT', body: f.read(form)});
      await reload();
      return res;
    } catch (err) {
      markInvalid(form, err);
      throw err;
    }
  });
}

// markInvalid marks and focuses the form's field that an API error
// names (its first path element: "exclude[1]" is the field exclude).
export function markInvalid(form, err) {
  const el = err.field && form.querySelector('[name="' + err.field.split(/[.[]/)[0] + '"]');
  if (el) { el.setAttribute('aria-invalid', 'true'); el.focus(); }
}

// keyValues reads one key=value per line into an object.
export function keyValues(text) {
  const out = {};
  for (const l of lines(text)) {
    const i = l.indexOf('=');
    out[i < 0 ? l : l.slice(0, i).trim()] = i < 0 ? '' : l.slice(i + 1).trim();
  }
  return out;
}

// field is a labelled input with an optional hint under it.
export function field(id, label, input, hint) {
  return h('div', {class: 'field wide'}, h('label', {for: id}, label), input, hint ? h('span', {class: 'muted small', id: id + '-hint'}, hint) : null);
}

// textArea is a one-entry-per-line text area holding lines.
export function textArea(id, name, lines, placeholder) {
  const ta = h('textarea', {id, name, rows: 4, spellcheck: 'false', placeholder, 'aria-describedby': id + '-hint'});
  ta.value = (lines || []).join('\n');
  return ta;
}

// lines splits a text area's value into its non-empty trimmed lines.
export function lines(s) {
  return s.split('\n').map(x => x.trim()).filter(Boolean);
}

// compact shows the first n entries and how many more there are (all of
// them in the title).
export function compact(list, n = 6) {
  if (!list || !list.length) return h('span', {class: 'muted'}, '—');
  const more = list.length - n;
  return h('span', {title: list.join(', ')}, list.slice(0, n).join(', ') + (more > 0 ? ' … +' + more + ' more' : ''));
}

// taskLinks links to the named tasks, the first n of them.
export function taskLinks(names, n = 10) {
  if (!names || !names.length) return h('span', {class: 'muted'}, 'none');
  return h('span', {class: 'tasks'}, names.slice(0, n).map((t, i) => [i ? ', ' : '', h('a', {href: '#/tasks/' + encodeURIComponent(t)}, t)]),
    names.length > n ? ' … +' + (names.length - n) + ' more' : '');
}
