import {h} from './util.js';

// lineDiff compares two texts line by line (longest common subsequence)
// and returns [{op: ' ' | '-' | '+', text}] in order. Task definitions are
// a few hundred lines at most, so the quadratic table is small.
export function lineDiff(a, b) {
  const x = a.split('\n'), y = b.split('\n');
  const n = x.length, m = y.length;
  const lcs = Array.from({length: n + 1}, () => new Uint16Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) { out.push({op: ' ', text: x[i]}); i++; j++; }
    else if (lcs[i + 1][j] >= lcs[i][j + 1]) out.push({op: '-', text: x[i++]});
    else out.push({op: '+', text: y[j++]});
  }
  while (i < n) out.push({op: '-', text: x[i++]});
  while (j < m) out.push({op: '+', text: y[j++]});
  return out;
}

// definitionText is a task definition as the diffs compare it: JSON,
// without the fields every write changes (version, times, the author,
// next fires, runs).
const VOLATILE_FIELDS = new Set(['version', 'createdAt', 'updatedAt', 'updatedBy', 'nextFireTimes', 'runs', 'completed']);
export function definitionText(task) {
  return task ? JSON.stringify(Object.fromEntries(Object.entries(task).filter(([k]) => !VOLATILE_FIELDS.has(k))), null, 2) : '';
}

// changedLines diffs two texts and keeps each change with two lines of
// context around it: [] when they are the same.
function changedLines(a, b) {
  const all = lineDiff(a, b);
  const keep = new Uint8Array(all.length);
  all.forEach((l, i) => { if (l.op !== ' ') for (let k = Math.max(0, i - 2); k <= Math.min(all.length - 1, i + 2); k++) keep[k] = 1; });
  return all.some(l => l.op !== ' ') ? all.filter((_, i) => keep[i]) : [];
}

// diffView shows lineDiff(a, b) as the history does: added and removed
// lines marked, unchanged ones within two lines of a change for context.
// It returns [changed line count, the <pre>].
export function diffView(a, b) {
  const lines = changedLines(a, b);
  const changed = lines.filter(l => l.op !== ' ').length;
  return [changed, h('pre', {class: 'code diff', tabindex: '0'}, lines.map(l =>
    h('span', {class: l.op === '+' ? 'add' : l.op === '-' ? 'del' : ''}, l.op + ' ' + l.text + '\n')))];
}
