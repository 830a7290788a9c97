// The live feed: one EventSource per page load on /ui/api/events. The
// server keeps the last five minutes and sends them on connect ("hello"),
// then one "tick" per period; this module keeps the same window and tells
// the mounted page.
const state = { points: [], markers: [], periodMs: 1000, historyMs: 300000, series: ['get_bw', 'put_bw', 'get_ops', 'put_ops'], connected: false };
const listeners = new Set();
let es = null;

export const GET_BW = 0, PUT_BW = 1, GET_OPS = 2, PUT_OPS = 3;

export function connect() {
  if (es) return;
  es = new EventSource('api/events');
  es.addEventListener('hello', ev => {
    const d = JSON.parse(ev.data);
    state.points = d.points || [];
    state.markers = d.markers || [];
    state.periodMs = d.period_ms;
    state.historyMs = d.history_ms;
    state.connected = true;
    notify();
  });
  es.addEventListener('tick', ev => {
    const d = JSON.parse(ev.data);
    state.points.push({ t: d.t, tenants: d.tenants || {}, nodes: d.nodes || {} });
    for (const m of d.markers || []) state.markers.push(m);
    const cut = d.t - state.historyMs;
    while (state.points.length && state.points[0].t <= cut) state.points.shift();
    while (state.markers.length && state.markers[0].t <= cut) state.markers.shift();
    notify();
  });
  es.addEventListener('bye', () => disconnect());
  es.onerror = () => { state.connected = false; notify(); };
}

export function disconnect() {
  if (es) { es.close(); es = null; }
  state.points = []; state.markers = []; state.connected = false;
}

function notify() { for (const fn of listeners) { try { fn(state); } catch (e) { console.error(e); } } }

// subscribe calls fn now and at each update; it returns the unsubscriber.
export function subscribe(fn) {
  listeners.add(fn);
  fn(state);
  return () => listeners.delete(fn);
}

export function now() {
  const p = state.points;
  return p.length ? p[p.length - 1].t + state.periodMs : Date.now();
}

// seriesOf is one tenant's series idx as [t, v] pairs; scale divides.
export function seriesOf(tenant, idx, scale) {
  const k = scale || 1;
  return state.points.map(p => [p.t, ((p.tenants[tenant] || [0, 0, 0, 0])[idx] || 0) / k]);
}

// totalOf sums series idx over all tenants.
export function totalOf(idx, scale) {
  const k = scale || 1;
  return state.points.map(p => [p.t, Object.values(p.tenants).reduce((a, v) => a + (v[idx] || 0), 0) / k]);
}

export function tenantsSeen() {
  const s = new Set();
  for (const p of state.points) for (const t of Object.keys(p.tenants)) s.add(t);
  return [...s].sort();
}

export function nodesSeen() {
  const last = new Map();
  for (const p of state.points) for (const [n, v] of Object.entries(p.nodes || {})) last.set(n, { t: p.t, v });
  return last;
}

// averageOver returns per tenant the mean of each series over the last ms.
export function averageOver(ms) {
  const out = {};
  const pts = state.points.filter(p => p.t > now() - ms);
  for (const p of pts) for (const [t, v] of Object.entries(p.tenants)) {
    const a = out[t] || (out[t] = [0, 0, 0, 0]);
    for (let i = 0; i < 4; i++) a[i] += (v[i] || 0) / pts.length;
  }
  return out;
}

export function markersFor(tenant) {
  return state.markers.filter(m => !tenant || m.tenant === tenant).map(m => ({
    t: m.t, kind: m.kind, policy: m.policy,
    short: (m.name || m.policy) + (m.kind === 'on' ? ' on' : ' off'),
    label: `${m.name || m.policy} switched ${m.kind}${m.because ? ' because ' + m.because : ''}${m.on ? ' on ' + m.on : ''}`,
  }));
}

export function liveState() { return state; }
