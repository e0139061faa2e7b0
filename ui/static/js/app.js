// The console's shell: login, routing (#/path?query), the banner and
// keyboard shortcuts. Each page module exports render(main, route, page)
// and stops its timers and streams when page.signal aborts.

import {api, ApiError, token, setToken, whoami, forget, setUnauthorizedHandler} from './api.js';
import {h, setPageZone, zoneSwitch} from './util.js';
import {showError, showInfo, clearError} from './notice.js';
import * as overview from './overview.js';
import * as tasks from './tasks.js';
import * as task from './task.js';
import * as instances from './instances.js';
import * as instance from './instance.js';
import * as calendars from './calendars.js';
import * as windows from './windows.js';
import * as pools from './pools.js';
import * as alerts from './alerts.js';
import * as executors from './executors.js';
import * as cluster from './cluster.js';
import * as channels from './channels.js';
import * as audit from './audit.js';

const main = document.getElementById('main');
let current = null; // AbortController of the page on screen

const routes = [
  [/^\/?$/, overview],
  [/^\/tasks\/?$/, tasks],
  [/^\/tasks\/([^/?]+)$/, task],
  [/^\/instances\/?$/, instances],
  [/^\/instances\/([0-9a-f]{16})$/, instance],
  [/^\/calendars\/?$/, calendars],
  [/^\/windows\/?$/, windows],
  [/^\/pools\/?$/, pools],
  [/^\/alerts\/?$/, alerts],
  [/^\/executors\/?$/, executors],
  [/^\/cluster\/?$/, cluster],
  [/^\/channels\/?$/, channels],
  [/^\/audit\/?$/, audit],
];

async function route() {
  if (current) current.abort();
  current = new AbortController();
  clearError();
  setPageZone('');
  const path = location.hash.slice(1).split('?')[0] || '/';
  document.querySelectorAll('[data-nav]').forEach(a => {
    const on = (a.dataset.nav === 'overview' && path === '/') || (a.dataset.nav !== 'overview' && path.startsWith('/' + a.dataset.nav));
    on ? a.setAttribute('aria-current', 'page') : a.removeAttribute('aria-current');
  });
  try {
    await whoami();
  } catch (err) {
    if (err.status === 401 || err.status === 403) return login(err);
    showError(err);
  }
  showWho();
  for (const [re, mod] of routes) {
    const m = path.match(re);
    if (!m) continue;
    main.replaceChildren();
    try {
      await mod.render(main, m.slice(1).map(decodeURIComponent), {signal: current.signal});
    } catch (err) {
      showError(err);
      if (!main.childElementCount) main.append(h('p', {class: 'empty'}, 'This page could not be loaded.'));
    }
    return;
  }
  main.replaceChildren(h('h1', {}, 'Not found'), h('p', {}, 'No page at ', h('code', {}, path), '. ', h('a', {href: '#/'}, 'Overview')));
}

function showWho() {
  const who = document.getElementById('who');
  who.replaceChildren();
  whoami().then(me => {
    who.append(h('span', {class: 'muted', 'data-role': me.role}, me.name + ' · ' + me.role + (me.node ? ' · via ' + me.node : '')));
    if (me.acl) who.append(' ', h('button', {class: 'link', onclick: logout}, 'Sign out'));
  }, () => {});
}

function logout() {
  setToken('');
  forget();
  login();
}

// login asks for an ACL token; the token is checked with whoami before it
// is kept.
function login(err) {
  if (current) current.abort();
  document.getElementById('who').replaceChildren();
  const input = h('input', {id: 'token', type: 'password', autocomplete: 'off', required: true, placeholder: 'ACL token secret', 'aria-label': 'ACL token'});
  const msg = h('p', {class: 'error', role: 'alert'}, err && token() ? (err instanceof ApiError ? err.text() : String(err)) : '');
  const form = h('form', {class: 'card login', onsubmit: async e => {
    e.preventDefault();
    setToken(input.value.trim());
    forget();
    try {
      await whoami(true);
      route();
    } catch (e2) {
      setToken('');
      msg.textContent = e2 instanceof ApiError ? e2.text() : String(e2);
    }
  }},
  h('h1', {}, 'Sign in'),
  h('p', {}, 'This cluster has ACLs enabled. Paste a token (', h('code', {}, 'ax acl token create'), '). It is kept in this browser tab only.'),
  h('label', {for: 'token'}, 'Token'), input, msg,
  h('button', {type: 'submit', class: 'primary'}, 'Sign in'));
  main.replaceChildren(form);
  input.focus();
}

setUnauthorizedHandler(err => { setToken(''); forget(); login(err); });

// Keyboard: g o / g t / g i / g c / g w / g p / g a / g e / g m / g n / g u go to a page, / focuses the page's first
// filter, ? lists the keys.
let pendingG = 0;
document.addEventListener('keydown', e => {
  const inField = e.target instanceof Element && e.target.closest('input, textarea, select, [contenteditable], dialog');
  if (inField || e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === 'g') { pendingG = Date.now(); return; }
  if (Date.now() - pendingG < 1000) {
    const to = {o: '#/', t: '#/tasks', i: '#/instances', c: '#/calendars', w: '#/windows', p: '#/pools', a: '#/alerts', e: '#/executors', m: '#/cluster', n: '#/channels', u: '#/audit'}[e.key];
    pendingG = 0;
    if (to) { location.hash = to; e.preventDefault(); return; }
  }
  if (e.key === '/') {
    const f = main.querySelector('.filters input, .filters select');
    if (f) { f.focus(); e.preventDefault(); }
  } else if (e.key === '?') {
    showInfo('Keys: g o overview · g t tasks · g i instances · g c calendars · g w windows · g p pools · g a alerts · g e executors · g m cluster members · g n channels · g u audit · / filter · Esc closes dialogs');
  }
});

document.getElementById('who').before(zoneSwitch(route));
window.addEventListener('hashchange', route);
route();
