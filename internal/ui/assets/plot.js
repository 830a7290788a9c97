// Time-series plots in SVG: lines over a fixed time window, dashed
// reference lines (reservations, fair shares), and policy markers on the
// time axis. Each series path carries data-name and data-max (the largest
// value in the window) so that tests and scripts can read what is drawn.
import { h, fmtClock, colorOf } from './lib.js';

const NS = 'http://www.w3.org/2000/svg';
function s(tag, attrs, ...kids) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const k of kids.flat()) if (k !== null && k !== undefined) el.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return el;
}

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  // Four intervals: these maxima give round ticks (0.25, 0.5, 1, 1.5, 2, 2.5 × 10^k).
  for (const m of [1, 2, 4, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function fmtTick(v) {
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(1).replace(/\.0$/, '');
  return v.toFixed(2).replace(/\.?0+$/, '') || '0';
}

// timePlot draws { id, title, unit, windowMs, now, series: [{name, color?,
// points: [[t, v]...]}], refs: [{name, value, color?}], markers: [{t, kind,
// label}] } and returns a figure with the SVG and its legend.
export function timePlot(o) {
  const W = Math.round(o.width || 720), H = W < 500 ? 200 : 240, L = 48, R = 12, T = 24, B = 26;
  const t1 = o.now, t0 = t1 - o.windowMs;
  let max = 0;
  for (const se of o.series) for (const [t, v] of se.points) if (t >= t0 && v > max) max = v;
  for (const r of o.refs || []) if (r.value > max) max = r.value;
  const ymax = niceMax(max * 1.1);
  const x = t => L + (W - L - R) * (t - t0) / (t1 - t0);
  const y = v => H - B - (H - B - T) * v / ymax;

  const latest = o.series.map(se => {
    const last = se.points.length ? se.points[se.points.length - 1][1] : 0;
    return `${se.name} ${fmtTick(last)} ${o.unit}`;
  }).join(', ');
  const svg = s('svg', { class: 'plot', viewBox: `0 0 ${W} ${H}`, role: 'img', 'data-plot': o.id,
    'aria-label': `${o.title}, last ${Math.round(o.windowMs / 60000)} minutes. Latest: ${latest || 'no data'}.` });
  svg.append(s('title', {}, o.title));
  svg.append(s('text', { x: L, y: 14 }, `${o.title} (${o.unit})`));
  // Grid and y axis.
  for (let i = 0; i <= 4; i++) {
    const v = ymax * i / 4, yy = y(v);
    svg.append(s('line', { class: i ? 'grid' : 'axis', x1: L, x2: W - R, y1: yy, y2: yy }));
    svg.append(s('text', { x: L - 6, y: yy + 4, 'text-anchor': 'end' }, fmtTick(v)));
  }
  // Time axis: a tick each minute (two on a narrow plot), labelled with the clock.
  const minute = W < 500 ? 120000 : 60000;
  for (let t = Math.ceil(t0 / minute) * minute; t <= t1; t += minute) {
    const xx = x(t);
    svg.append(s('line', { class: 'grid', x1: xx, x2: xx, y1: T, y2: H - B }));
    svg.append(s('text', { x: xx, y: H - 8, 'text-anchor': 'middle' }, fmtClock(t).slice(0, 5)));
  }
  svg.append(s('line', { class: 'axis', x1: L, x2: L, y1: T, y2: H - B }));
  // Reference lines.
  for (const r of o.refs || []) {
    const yy = y(r.value);
    svg.append(s('line', { class: 'ref', x1: L, x2: W - R, y1: yy, y2: yy, stroke: r.color || colorOf(r.name), 'data-ref': r.name, 'data-value': r.value },
      s('title', {}, `${r.name}: ${fmtTick(r.value)} ${o.unit}`)));
  }
  // Series.
  for (const se of o.series) {
    const pts = se.points.filter(([t]) => t >= t0);
    let d = '', smax = 0;
    for (const [t, v] of pts) {
      d += (d ? 'L' : 'M') + x(t).toFixed(1) + ',' + y(v).toFixed(1);
      if (v > smax) smax = v;
    }
    svg.append(s('path', { class: 'series', d: d || `M${L},${y(0)}`, stroke: se.color || colorOf(se.name), 'data-name': se.name,
      'data-max': smax, 'data-points': pts.length, 'stroke-dasharray': se.dash || null }));
  }
  // Policy markers on the time axis. Labels go in up to three rows (16
  // units apart: a 12px line box is about 15) under
  // the title: each takes the first row where it clears the label before
  // it; one that fits no row is left out (its line and tooltip stay), so
  // a burst of triggers never piles its labels into one another.
  const rows = [];
  const marks = (o.markers || []).filter(m => m.t >= t0 && m.t <= t1).sort((a, b) => a.t - b.t);
  for (const m of marks) {
    const xx = x(m.t), label = m.short || m.label;
    // 12px bold: no character is wider than 8 units.
    const w = label.length * 8 + 6;
    const lx = Math.max(L + 2, Math.min(xx + 3, W - R - w));
    let row = rows.findIndex(end => end <= lx);
    if (row < 0 && rows.length < 3) row = rows.push(-Infinity) - 1;
    const g = s('g', { class: 'marker ' + (m.kind || 'on'), 'data-policy': m.policy || '', 'data-label': row < 0 ? 'omitted' : 'shown' },
      s('title', {}, m.label),
      s('line', { x1: xx, x2: xx, y1: T, y2: H - B }));
    if (row >= 0) {
      rows[row] = lx + w;
      g.append(s('text', { x: lx, y: T + 12 + 16 * row }, label));
    }
    svg.append(g);
  }
  const legend = h('ul', { class: 'legend' },
    o.series.map(se => h('li', {}, swatch(se.color || colorOf(se.name)), se.name)),
    (o.refs || []).map(r => h('li', {}, swatch(r.color || colorOf(r.name)), r.name + ' (dashed)')));
  return h('figure', { class: 'plotfig' }, svg, legend);
}

function swatch(color) {
  // A small SVG rather than a style attribute, which the CSP forbids.
  return s('svg', { class: 'sw', width: 14, height: 4, viewBox: '0 0 14 4', 'aria-hidden': 'true' }, s('rect', { width: 14, height: 4, fill: color }));
}
