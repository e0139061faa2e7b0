// toYAML writes a JSON value (a task definition as the API answers it)
// as block YAML that go.yaml.in/yaml/v3 — the server's reader of a YAML
// body, and ax task apply's — reads back to the same value: a string is
// plain only when it cannot be read as anything else, else double-quoted
// (JSON's escapes are YAML's), or a literal block when it has lines.

const PLAIN = /^[A-Za-z_][A-Za-z0-9_./-]*$/;
const RESERVED = /^(y|n|yes|no|on|off|true|false|null)$/i;

export function toYAML(v) {
  if (!block(v)) return scalar(v, '') + '\n';
  return lines(v, '') + '\n';
}

// block: a non-empty object or array, written on lines of its own.
function block(v) {
  return v !== null && typeof v === 'object' && Object.keys(v).length > 0;
}

function key(k) {
  return PLAIN.test(k) && !RESERVED.test(k) ? k : JSON.stringify(k);
}

// scalar writes a value on the line of its key; ind is the indentation
// of a literal block's lines.
function scalar(v, ind) {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return '[]';
  if (typeof v === 'object') return '{}';
  if (typeof v !== 'string') return String(v);
  if (PLAIN.test(v) && !RESERVED.test(v)) return v;
  // A literal block keeps a script readable: lines, no leading blank or
  // space (the indentation would be misread), at most one final newline,
  // no control characters but tab.
  if (v.includes('\n') && v.trim() && !/^[\n ]/.test(v) && !v.endsWith('\n\n') && !/[\x00-\x08\x0b-\x1f\x7f]/.test(v)) {
    const body = v.endsWith('\n') ? v.slice(0, -1) : v;
    return (v.endsWith('\n') ? '|' : '|-') + body.split('\n').map(l => '\n' + (l ? ind + l : '')).join('');
  }
  return JSON.stringify(v);
}

// lines writes a non-empty object or array at indentation ind.
function lines(v, ind) {
  const out = [];
  const sub = ind + '  ';
  if (Array.isArray(v)) {
    for (const x of v) out.push(ind + '- ' + (block(x) ? lines(x, sub).slice(sub.length) : scalar(x, sub)));
  } else {
    for (const [k, x] of Object.entries(v)) {
      if (x === undefined) continue;
      out.push(ind + key(k) + ':' + (block(x) ? '\n' + lines(x, sub) : ' ' + scalar(x, sub)));
    }
  }
  return out.join('\n');
}
