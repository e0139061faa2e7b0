// The task editor of a writer: a definition written as YAML or JSON, sent
// first as a dry run (PUT /v1/tasks/{name}?dryRun=true answers what the
// write would do: create, update or unchanged, and the definition as it
// would be stored), shown as a diff against the stored one; then saved,
// with the version it was opened at as a precondition, so that a
// concurrent edit is refused rather than overwritten. YAML goes to the
// server as written (Content-Type application/yaml): it reads it as ax
// task apply reads a file, so the console has no YAML parser of its own.

import {api} from './api.js';
import {dialog, KEEP} from './notice.js';
import {h, fill} from './util.js';
import {diffView} from './diff.js';
import {toYAML} from './yaml.js';

const FORMAT = 'ax.defFormat';
// The fields the server owns, and paused (operational state: a save
// without it leaves the task paused or active as it is) and rollout (a
// rollout is started by adding one).
const SERVER = ['createdAt', 'updatedAt', 'updatedBy', 'nextFireTimes', 'runs', 'completed', 'paused', 'rollout'];
const TEMPLATE = {trigger: {type: 'cron', expression: '0 2 * * *', timezone: 'UTC'}, action: {type: 'shell', command: 'echo hello'}};

// definition is the editable part of a task (its version kept: the
// precondition of the save).
export function definition(t) {
  const d = {...t};
  for (const k of SERVER) delete d[k];
  return d;
}

function render(obj, fmt) {
  return fmt === 'yaml' ? toYAML(obj) : JSON.stringify(obj, null, 2) + '\n';
}

// openEditor edits task t (as GET /v1/tasks/{name} answered it), or
// creates a task when t is null.
export function openEditor(t) {
  let fmt = localStorage.getItem(FORMAT) === 'json' ? 'json' : 'yaml';
  let shown = t ? definition(t) : TEMPLATE; // what the text was made from
  const name = t ? null : h('input', {id: 'def-name', name: 'name', required: true, autocomplete: 'off'});
  const ta = h('textarea', {id: 'task-def', class: 'mono', rows: 20, spellcheck: 'false', 'aria-describedby': 'def-hint'});
  const label = h('label', {for: 'task-def'});
  const plan = h('div', {id: 'def-plan', 'aria-live': 'polite'});
  let planned = null; // {text, fmt, name, plan} of the last dry run
  const show = () => {
    ta.value = render(shown, fmt);
    label.textContent = 'Definition (' + fmt.toUpperCase() + ')';
  };
  show();
  const radios = ['yaml', 'json'].map(f => h('label', {class: 'row'},
    h('input', {type: 'radio', name: 'fmt', value: f, checked: f === fmt, onchange: () => switchTo(f)}), f.toUpperCase()));
  const note = h('span', {class: 'muted small', id: 'fmt-note'});
  // switchTo writes the definition in the other format: the text as it
  // was made, or JSON text as edited; edited YAML stays as it is (the
  // console does not parse YAML) and is sent as YAML.
  const switchTo = f => {
    note.textContent = '';
    if (ta.value !== render(shown, fmt)) {
      if (fmt === 'json') {
        try { shown = JSON.parse(ta.value); } catch (err) { note.textContent = 'Not valid JSON, so not converted: ' + err.message; setFmt(fmt); return; }
      } else { note.textContent = 'Edited YAML is not converted: dry-run it, or undo your edits first.'; setFmt(fmt); return; }
    }
    fmt = f;
    localStorage.setItem(FORMAT, f);
    show();
  };
  const setFmt = f => radios.forEach(r => { r.querySelector('input').checked = r.querySelector('input').value === f; });
  const hint = t
    ? 'Saved only if nobody changed the task since you opened it (version ' + t.version + '). Paused is not part of the definition: the save leaves the task ' +
      (t.paused ? 'paused' : 'active') + ' (add "paused" to change it).'
    : 'A new task starts active. The dry run shows what would be created before you save.';
  const body = h('div', {class: 'editor'},
    name ? [h('label', {for: 'def-name'}, 'Name'), name] : null,
    h('fieldset', {class: 'row wrap'}, h('legend', {}, 'Format'), radios, note),
    label, ta, h('p', {class: 'muted small', id: 'def-hint'}, hint), plan);
  const path = () => '/v1/tasks/' + encodeURIComponent(t ? t.name : name.value.trim());
  const send = (query) => api(path() + query, {method: 'PUT', text: ta.value, type: fmt === 'yaml' ? 'application/yaml' : 'application/json'});
  const result = dialog((t ? 'Edit ' + t.name : 'New task'), body, 'Dry run', async form => {
    const ok = form.querySelector('button[type=submit]');
    const key = {text: ta.value, fmt, name: t ? t.name : name.value.trim()};
    if (!planned || planned.text !== key.text || planned.fmt !== key.fmt || planned.name !== key.name) {
      fill(plan, []);
      const p = await send('?dryRun=true');
      planned = {...key, plan: p};
      fill(plan, planView(p, fmt));
      ok.textContent = 'Save';
      return KEEP;
    }
    try {
      return await send('');
    } catch (err) {
      if (err.status === 409 && err.field === 'version') {
        err.message += '. Someone changed the task since you opened it: close this editor and open it again to edit the current definition (copy your text first).';
      }
      throw err;
    }
  });
  // An edit after the dry run asks for another.
  ta.addEventListener('input', () => {
    const ok = ta.closest('form').querySelector('button[type=submit]');
    if (planned && ta.value !== planned.text) ok.textContent = 'Dry run';
  });
  result.then(res => {
    if (!res) return;
    const target = '#/tasks/' + encodeURIComponent(res.name);
    if (location.hash === target) window.dispatchEvent(new HashChangeEvent('hashchange'));
    else location.hash = target;
  });
  return result;
}

// planView shows a dry run's plan: what the save would do, and the
// definition as it would be stored against the stored one.
function planView(p, fmt) {
  const words = {create: 'Creates the task', update: 'Updates the task from version ' + p.version + ' to ' + (p.version + 1), unchanged: 'No change: saving writes nothing'};
  const before = p.current ? render(definition({...p.current, version: undefined}), fmt) : '';
  const after = render(definition({...p.task, version: undefined}), fmt);
  const [changed, view] = diffView(before, after);
  return [h('p', {id: 'plan-op', dataset: {op: p.op}}, h('strong', {}, 'Dry run: '), words[p.op] || p.op,
    p.op === 'unchanged' ? '.' : '; ' + changed + ' changed lines (as the server would store it, defaults filled in). Save to apply.'),
  p.op === 'unchanged' ? null : view];
}
