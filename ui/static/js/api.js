// The console's client of the public /v1 API. The ACL token lives in
// sessionStorage only: it is gone when the tab closes and never sent to
// anything but this origin's API.

const TOKEN = 'ax.token';

export function token() { return sessionStorage.getItem(TOKEN) || ''; }
export function setToken(t) { t ? sessionStorage.setItem(TOKEN, t) : sessionStorage.removeItem(TOKEN); }

// ApiError is an answer of the API's error object ({"error": {code,
// message, field}}) or a failure to reach it.
export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || (status ? 'HTTP ' + status : 'the node did not answer'));
    this.status = status;
    this.code = e.code || '';
    this.field = e.field || '';
  }
  // text is what the console shows: the field, the message, the code.
  text() {
    return (this.field ? this.field + ': ' : '') + this.message + (this.code ? ' (' + this.code + ')' : '');
  }
}

let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

function headers(extra) {
  const hd = {'Accept': 'application/json', ...extra};
  const t = token();
  if (t) hd['Authorization'] = 'Bearer ' + t;
  return hd;
}

// api calls the API: api('/v1/tasks'), api('/v1/tasks/x/pause', {method:
// 'POST'}), api(path, {method: 'PUT', body: obj}) or {method: 'PUT', text,
// type: 'application/yaml'}. It resolves to the
// decoded answer and rejects with an ApiError.
export async function api(path, opts = {}) {
  const init = {method: opts.method || 'GET', headers: headers(), signal: opts.signal};
  if (opts.body !== undefined) {
    init.body = JSON.stringify(opts.body);
    init.headers['Content-Type'] = 'application/json';
  } else if (opts.text !== undefined) { // a body as written, of opts.type
    init.body = opts.text;
    init.headers['Content-Type'] = opts.type;
  }
  if (init.method !== 'GET') init.headers['Idempotency-Key'] = opts.key || newKey();
  let res;
  try {
    res = await fetch(path, init);
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new ApiError(0, {error: {message: 'the node did not answer: ' + err.message, code: 'unreachable'}});
  }
  const text = await res.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch { body = {error: {message: text.slice(0, 200)}}; }
  if (!res.ok) {
    const e = new ApiError(res.status, body);
    if (res.status === 401) onUnauthorized(e);
    throw e;
  }
  return body;
}

// newKey is an idempotency key for one user action: a retry of the same
// request (a lost answer) is answered with the first outcome.
export function newKey() {
  return 'ui-' + crypto.getRandomValues(new Uint32Array(4)).join('-');
}

const RANK = {reader: 1, operator: 2, writer: 3, admin: 4};
let me = null;

// whoami asks who the token is (cached until the token changes).
export async function whoami(force) {
  if (!me || force) me = await api('/v1/acl/whoami');
  return me;
}
export function forget() { me = null; }

// can reports whether the signed-in principal holds role (admin holds all;
// reader < operator < writer). The API enforces it; the console only hides
// buttons that would be refused.
export function can(role) {
  if (!me) return false;
  return me.role === 'admin' || (RANK[me.role] || 0) >= (RANK[role] || 99);
}

// stream reads a Server-Sent Events endpoint with fetch, so that the
// Authorization header goes with it (EventSource cannot send headers), and
// calls onEvent(type, data) for each event. It reconnects with backoff,
// resuming after the last event id, until signal is aborted. onState(ok)
// reports whether the stream is connected.
export async function stream(path, onEvent, signal, onState = () => {}) {
  let lastId = '', delay = 500;
  while (!signal.aborted) {
    try {
      const hd = headers({'Accept': 'text/event-stream'});
      if (lastId) hd['Last-Event-ID'] = lastId;
      const res = await fetch(path, {headers: hd, signal});
      if (!res.ok) {
        let body = null;
        try { body = await res.json(); } catch { /* not JSON */ }
        const e = new ApiError(res.status, body);
        if (res.status === 401) { onUnauthorized(e); return; }
        throw e;
      }
      onState(true);
      delay = 500;
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        // Split once per chunk: a busy stream brings hundreds of events
        // per read, and slicing the buffer per event would copy it as often.
        const blocks = (buf + value).split('\n\n');
        buf = blocks.pop();
        for (const block of blocks) {
          let type = 'message', data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue;
            const c = line.indexOf(':');
            const k = c < 0 ? line : line.slice(0, c);
            const v = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
            if (k === 'event') type = v;
            else if (k === 'data') data += (data ? '\n' : '') + v;
            else if (k === 'id') lastId = v;
          }
          if (!data && type === 'message') continue;
          let parsed = data;
          try { parsed = JSON.parse(data); } catch { /* plain text */ }
          onEvent(type, parsed);
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      onState(false, err);
    }
    if (signal.aborted) return;
    onState(false);
    await new Promise(r => setTimeout(r, delay));
    delay = Math.min(delay * 2, 10000);
  }
}
