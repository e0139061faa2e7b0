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

// diffView shows lineDiff(a, b) as the history does: added and removed
// lines marked, unchanged ones within two lines of a change for context.
// It returns [changed line count, the <pre>].
export function diffView(a, b) {
  const lines = lineDiff(a, b);
  const changed = lines.filter(l => l.op !== ' ').length;
  return [changed, h('pre', {class: 'code diff', tabindex: '0'}, lines.filter((l, j) => l.op !== ' ' || near(lines, j)).map(l =>
    h('span', {class: l.op === '+' ? 'add' : l.op === '-' ? 'del' : ''}, l.op + ' ' + l.text + '\n')))];
}

// near keeps unchanged lines within two of a change, for context.
function near(lines, j) {
  for (let k = Math.max(0, j - 2); k <= Math.min(lines.length - 1, j + 2); k++) if (lines[k].op !== ' ') return true;
  return false;
}
