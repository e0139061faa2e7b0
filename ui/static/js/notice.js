// The banner for errors and the dialogs the pages use for confirmations
// and forms (native <dialog>: modal, Esc closes, focus stays inside).

import {ApiError} from './api.js';
import {h} from './util.js';

const banner = document.getElementById('banner');

// showError puts an error in the banner: an API error shows its field,
// message and code as the API answered them.
export function showError(err) {
  if (err && err.name === 'AbortError') return;
  banner.hidden = false;
  banner.classList.remove('info');
  banner.replaceChildren(h('span', {}, errText(err)),
    h('button', {class: 'link', 'aria-label': 'Dismiss', onclick: () => { banner.hidden = true; }}, '×'));
}

export function clearError() { banner.hidden = true; }

// showInfo puts a message that is not an error in the banner.
export function showInfo(text) {
  showError(text);
  banner.classList.add('info');
}

export function errText(err) {
  return err instanceof ApiError ? err.text() : String((err && err.message) || err);
}

// KEEP, answered by a dialog's submit, keeps the dialog open (a step
// before the last: a dry run shown before the save).
export const KEEP = Symbol('keep the dialog open');

// dialog opens a modal form. body is the form's fields; submit(form) runs
// on submit and may throw an ApiError, which is shown in the dialog (the
// dialog stays open, as it does when submit answers KEEP); it resolves to
// submit's result, or null when closed.
export function dialog(title, body, submitLabel, submit, {danger = false} = {}) {
  return new Promise(resolve => {
    const msg = h('p', {class: 'error', role: 'alert'});
    const ok = h('button', {type: 'submit', class: danger ? 'danger' : 'primary'}, submitLabel);
    const form = h('form', {method: 'dialog'},
      h('h2', {}, title), body, msg,
      h('div', {class: 'row end'},
        h('button', {type: 'button', onclick: () => { d.close(); }}, 'Cancel'), ok));
    const d = h('dialog', {class: 'modal'}, form);
    let result = null;
    form.addEventListener('submit', async e => {
      e.preventDefault();
      ok.disabled = true;
      msg.textContent = '';
      try {
        result = await submit(form);
        if (result === KEEP) result = null;
        else d.close();
      } catch (err) {
        msg.textContent = errText(err);
      } finally {
        ok.disabled = false;
      }
    });
    d.addEventListener('close', () => { d.remove(); resolve(result); });
    document.body.append(d);
    d.showModal();
    const first = form.querySelector('input, textarea, select');
    (first || ok).focus();
  });
}
