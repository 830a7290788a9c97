// Shared helpers: DOM building (text only, never HTML strings), the API
// client with the session's CSRF token, formatting.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'value') el.value = v;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

let csrf = '';
export function setCSRF(t) { csrf = t; }

// ApiError carries the answer's status and the control API's error body.
export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error) || ('HTTP ' + status));
    this.status = status;
    this.body = body || {};
  }
  get unavailable() { return this.status === 404 || this.status === 501 || this.status === 405; }
}

let onUnauthorized = () => {};
export function setUnauthorized(fn) { onUnauthorized = fn; }

// api calls /ui/api + path. body: an object (sent as JSON), a string
// (text/plain) or a FormData/Blob (sent as is).
export async function api(method, path, body, headers) {
  const opts = { method, headers: Object.assign({}, headers || {}), credentials: 'same-origin' };
  if (method !== 'GET' && method !== 'HEAD') opts.headers['X-CSRF-Token'] = csrf;
  if (body !== undefined) {
    if (typeof body === 'string') { opts.headers['Content-Type'] = opts.headers['Content-Type'] || 'text/plain'; opts.body = body; }
    else if (body instanceof FormData || body instanceof Blob || body instanceof ArrayBuffer) opts.body = body;
    else { opts.headers['Content-Type'] = 'application/json'; opts.body = JSON.stringify(body); }
  }
  const res = await fetch('api' + path, opts);
  let data = null;
  const ct = res.headers.get('Content-Type') || '';
  if (res.status !== 204) data = ct.includes('json') ? await res.json().catch(() => null) : await res.text();
  if (res.status === 401 && path !== '/login') onUnauthorized();
  if (!res.ok) throw new ApiError(res.status, typeof data === 'object' ? data : { error: data });
  return data;
}

// capabilities: the control API's paths and methods, from its OpenAPI
// document, so that pages for APIs this server lacks say so up front.
let caps = null;
export async function capabilities() {
  if (caps) return caps;
  try {
    const doc = await api('GET', '/v1/openapi.json');
    caps = doc.paths || {};
  } catch (e) {
    caps = {};
  }
  return caps;
}
export function resetCapabilities() { caps = null; }
export function has(c, path, method) {
  const p = c[path];
  return !!(p && p[(method || 'get').toLowerCase()]);
}

export function notAvailable(what, detail) {
  return h('div', { class: 'na', role: 'note' },
    h('strong', {}, what + ': not available on this server.'), ' ',
    detail || 'This Facet build does not have that API yet.');
}

export function fmtBytes(n) {
  if (n === null || n === undefined || isNaN(n)) return '–';
  const u = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'];
  let i = 0, v = Math.abs(n);
  while (v >= 1000 && i < u.length - 1) { v /= 1000; i++; }
  return (n < 0 ? '-' : '') + (i === 0 ? v.toFixed(0) : v.toFixed(v < 10 ? 2 : 1)) + ' ' + u[i];
}
export function fmtRate(bytesPerSec) { return (bytesPerSec / 1e6).toFixed(2) + ' MB/s'; }
export function fmtNum(v, d) { return (v === undefined || v === null) ? '–' : Number(v).toFixed(d === undefined ? 1 : d); }
export function fmtTime(t) {
  if (!t) return '–';
  const d = new Date(t);
  return isNaN(d) ? String(t) : d.toLocaleString();
}
export function fmtClock(ms) {
  const d = new Date(ms);
  return d.toTimeString().slice(0, 8);
}

export function toast(msg) {
  const t = document.getElementById('toast');
  t.textContent = msg;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.textContent = ''; }, 5000);
}

export function errorText(e) {
  return (e && e.message) ? e.message : String(e);
}

// confirmButton is a destructive button that asks for a second press
// instead of a modal dialog. what names the row's object ("tenant acme"):
// a list of buttons that all read "Delete" tells a screen reader nothing,
// so each one's accessible name says what it acts on.
export function confirmButton(label, onConfirm, what) {
  const name = armed => (armed ? 'Confirm: ' + label.toLowerCase() : label) + (what ? ' ' + what : '');
  const b = h('button', { type: 'button', class: 'danger', 'aria-label': what ? name(false) : null }, label);
  const reset = () => { b.classList.remove('armed'); b.textContent = label; if (what) b.setAttribute('aria-label', name(false)); };
  let timer = null;
  b.addEventListener('click', async () => {
    if (!b.classList.contains('armed')) {
      b.classList.add('armed');
      b.textContent = 'Confirm: ' + label.toLowerCase();
      if (what) b.setAttribute('aria-label', name(true));
      timer = setTimeout(reset, 5000);
      return;
    }
    clearTimeout(timer);
    b.disabled = true;
    try { await onConfirm(); } catch (e) { toast(errorText(e)); b.disabled = false; reset(); }
  });
  return b;
}

export function table(headers, rows, opts) {
  const o = opts || {};
  // A stacked table (opts.stack) shows each row as a block of labelled
  // fields on a narrow screen (app.css), where long free text (a policy,
  // a controller's reason) squeezed into columns reads one word a line.
  if (o.stack) {
    for (const r of rows) {
      [...r.children].forEach((td, i) => { const hd = headers[i]; if (hd && (hd.label || hd)) td.dataset.label = hd.label || hd; });
    }
  }
  return h('div', { class: 'tablewrap' },
    h('table', { 'aria-label': o.label || null, class: o.stack ? 'stack' : null },
      h('thead', {}, h('tr', {}, headers.map(hd => h('th', { scope: 'col', class: hd.num ? 'num' : null }, hd.label || hd)))),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: headers.length, class: 'muted' }, o.empty || 'Nothing yet.')))));
}

// Stable colours per name.
const palette = ['#1f5fbf', '#c2410c', '#137333', '#7e22ce', '#b42318', '#0e7490', '#a16207', '#be185d', '#4d7c0f', '#334155'];
export function colorOf(name) {
  let x = 0;
  for (const ch of name) x = (x * 31 + ch.codePointAt(0)) >>> 0;
  return palette[x % palette.length];
}
