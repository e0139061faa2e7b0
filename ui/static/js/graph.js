// The task page's dependency graph (GET /v1/tasks/{name}/graph): the
// tasks a task runs after (left) and before (right), by how many links
// away, as Airflow's graph view draws a DAG. Each task is a link to its
// page, reachable by keyboard, coloured by its newest instance's state;
// the same graph is given as text below it.

import {h, svg, stateClass, fmtTime} from './util.js';

const W = 168, H = 44, GX = 64, GY = 12, P = 6;
const KINDS = {dependsOn: 'depends on', onSuccess: 'runs on success of', onFailure: 'runs on failure of'};

function where(n) {
  return n.level === 0 ? 'this task' : n.level < 0 ? 'upstream, ' + -n.level + (n.level === -1 ? ' link' : ' links') + ' away'
    : 'downstream, ' + n.level + (n.level === 1 ? ' link' : ' links') + ' away';
}

function latest(n) {
  if (n.missing) return 'not defined';
  const r = n.lastRun;
  return (r ? r.state : 'never ran') + (n.paused ? ' · paused' : '');
}

export function graphView(g) {
  if (g.edges.length === 0) {
    return h('p', {class: 'empty', id: 'graph-none'}, 'No task runs before or after this one (dependsOn, onSuccess, onFailure).');
  }
  const levels = [...new Set(g.nodes.map(n => n.level))].sort((a, b) => a - b);
  const pos = new Map();
  let rows = 0;
  levels.forEach((l, col) => {
    const inCol = g.nodes.filter(n => n.level === l);
    rows = Math.max(rows, inCol.length);
    inCol.forEach((n, row) => pos.set(n.name, {x: P + col * (W + GX), y: P + row * (H + GY)}));
  });
  const width = P * 2 + levels.length * (W + GX) - GX, height = P * 2 + rows * (H + GY) - GY;
  const edges = g.edges.map(e => {
    const a = pos.get(e.from), b = pos.get(e.to);
    let d;
    if (b.x > a.x) { // forward: right side to left side
      const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x - 2, y2 = b.y + H / 2, mx = (x1 + x2) / 2;
      d = `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`;
    } else { // within a column or backwards: round the bottom
      const x1 = a.x + W / 2, y1 = a.y + H, x2 = b.x + W / 2, y2 = b.y + H + 2, low = Math.max(y1, y2) + GY;
      d = `M${x1},${y1} C${x1},${low} ${x2},${low} ${x2},${y2}`;
    }
    return svg('path', {class: 'edge ' + e.kind, d, 'marker-end': 'url(#arrow-' + e.kind + ')'},
      svg('title', {}, e.to + ' ' + KINDS[e.kind] + ' ' + e.from));
  });
  const nodes = g.nodes.map(n => {
    const p = pos.get(n.name), r = n.lastRun;
    const cls = 'node ' + (n.missing ? 'missing' : r ? stateClass(r.state) : 'none') + (n.level === 0 ? ' here' : '');
    // The name starts with the text shown (the name, the state).
    const label = n.name + ' ' + latest(n) + ', ' + where(n) + (r ? ', latest instance scheduled ' + fmtTime(r.scheduledAt) : '');
    const box = [
      svg('rect', {x: p.x, y: p.y, width: W, height: H, rx: 6}),
      svg('text', {},
        svg('tspan', {x: p.x + 10, y: p.y + 18, class: 'name'}, n.name.length > 22 ? n.name.slice(0, 21) + '…' : n.name), ' ',
        svg('tspan', {x: p.x + 10, y: p.y + 35, class: 'state'}, latest(n))),
    ];
    // The task itself and a task that does not exist are not links.
    return n.level === 0 || n.missing
      ? svg('g', {class: cls, 'data-task': n.name, role: 'img', 'aria-label': label}, svg('title', {}, label), box)
      : svg('a', {class: cls, href: '#/tasks/' + encodeURIComponent(n.name), 'data-task': n.name, 'aria-label': label}, svg('title', {}, label), box);
  });
  const markers = Object.keys(KINDS).map(k => svg('marker', {id: 'arrow-' + k, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse'},
    svg('path', {d: 'M0,0 L10,5 L0,10 z', class: 'head ' + k})));
  const byName = new Map(g.nodes.map(n => [n.name, n]));
  return [
    h('div', {class: 'scroll graph-box', tabindex: '0', role: 'region', 'aria-label': 'Dependency graph, scrollable'},
      svg('svg', {class: 'graph', id: 'dep-graph', width, height, viewBox: `0 0 ${width} ${height}`, role: 'group', 'aria-label': 'Dependency graph of ' + g.task},
        svg('defs', {}, markers), svg('g', {'aria-hidden': 'true'}, edges), nodes)),
    h('p', {class: 'muted small'}, 'Upstream on the left, downstream on the right, up to ' + g.depth + ' links away. ',
      h('span', {class: 'key dependsOn'}, '── dependsOn'), ' ', h('span', {class: 'key onSuccess'}, '- - onSuccess'), ' ', h('span', {class: 'key onFailure'}, '··· onFailure'),
      g.truncated ? h('strong', {id: 'graph-truncated'}, ' More tasks are linked than shown.') : null),
    h('details', {id: 'graph-text'}, h('summary', {}, 'The graph as text'),
      h('ul', {}, g.edges.map(e => h('li', {},
        h('a', {href: '#/tasks/' + encodeURIComponent(e.to)}, e.to), ' ' + KINDS[e.kind] + ' ', h('a', {href: '#/tasks/' + encodeURIComponent(e.from)}, e.from)))),
      h('ul', {}, g.nodes.map(n => h('li', {}, n.name + ': ' + where(n) + ', latest ' + latest(byName.get(n.name)))))),
  ];
}
