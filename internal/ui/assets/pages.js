// The dashboard's pages. Each render(root, ctx) fills root and may return
// a function that stops what it started (timers, live subscriptions).
import {
  h, clear, api, capabilities, has, notAvailable, fmtBytes, fmtRate, fmtNum, fmtTime, toast, errorText,
  confirmButton, table, colorOf,
} from './lib.js';
import { timePlot } from './plot.js';
import * as live from './live.js';
import { policiesPage } from './policies.js';

const MB = 1e6;

// widthOf is the width a plot drawn in el gets, so that its text is
// drawn at its real size on a phone as on a wide screen.
function widthOf(el) { return Math.max(280, Math.min(el.clientWidth || 720, 1400)); }

// cellWidth is the width of a plot in one of n cards of a .grid (columns
// of at least 340 px, 16 px apart; 1 rem of padding on each side).
function cellWidth(grid, n) {
  const w = grid.clientWidth || 720;
  const cols = Math.max(1, Math.min(n, Math.floor((w + 16) / 356)));
  return Math.max(280, Math.floor((w - 16 * (cols - 1)) / cols) - 34);
}

function title(text, ...rest) { return h('h1', { id: 'page-title' }, text, ...rest); }

function card(heading, ...body) {
  return h('section', { class: 'card' }, heading ? h('h2', {}, heading) : null, ...body);
}

// unavailable renders a panel for an API this server lacks, or the error.
function failure(what, e) {
  if (e && e.unavailable) return notAvailable(what);
  return h('p', { class: 'error', role: 'alert' }, `${what}: ${errorText(e)}`);
}

// every runs fn now and every ms until stopped.
function every(ms, fn) {
  let stopped = false, timer = null;
  const loop = async () => {
    if (stopped) return;
    try { await fn(); } catch (e) { console.error(e); }
    if (!stopped) timer = setTimeout(loop, ms);
  };
  loop();
  return () => { stopped = true; clearTimeout(timer); };
}

// tenantPlots shows a tenant's GET/PUT MB/s and ops/s, live, with its
// policies' triggers on the time axis.
function tenantPlots(container, tenant) {
  const mbs = h('div'), ops = h('div');
  container.append(h('div', { class: 'grid' }, card(null, mbs), card(null, ops)));
  return live.subscribe(() => {
    const now = live.now(), windowMs = live.liveState().historyMs, markers = live.markersFor(tenant);
    clear(mbs, timePlot({ width: widthOf(mbs), id: `tenant-bw-${tenant}`, title: `${tenant}: bandwidth`, unit: 'MB/s', windowMs, now, markers,
      series: [{ name: 'GET', color: '#1f5fbf', points: live.seriesOf(tenant, live.GET_BW, MB) },
        { name: 'PUT', color: '#c2410c', points: live.seriesOf(tenant, live.PUT_BW, MB) }] }));
    clear(ops, timePlot({ width: widthOf(ops), id: `tenant-ops-${tenant}`, title: `${tenant}: operations`, unit: 'ops/s', windowMs, now, markers,
      series: [{ name: 'GET', color: '#1f5fbf', points: live.seriesOf(tenant, live.GET_OPS) },
        { name: 'PUT', color: '#c2410c', points: live.seriesOf(tenant, live.PUT_OPS) }] }));
  });
}

// secretPanel shows fresh credentials once; dismissing it forgets them.
function secretPanel(c) {
  const panel = h('div', { class: 'secret', role: 'alert', id: 'new-secret' },
    h('p', {}, h('strong', {}, `New credentials for ${c.tenant}. `), 'The secret key is shown this once and never again: store it now.'),
    h('dl', {},
      h('dt', {}, 'Access key'), h('dd', {}, h('code', { id: 'new-access-key' }, c.access_key)),
      h('dt', {}, 'Secret key'), h('dd', {}, h('code', { id: 'new-secret-key' }, c.secret_key))),
    h('button', { type: 'button', class: 'secondary', onclick: () => panel.remove() }, 'I have stored it'));
  return panel;
}

function usageCells(u) {
  if (!u) return [h('td', { class: 'num' }, '–'), h('td', { class: 'num' }, '–'), h('td', { class: 'num' }, '–'), h('td', { class: 'num' }, '–')];
  const saved = u.logical_bytes > 0 ? (100 * u.savings).toFixed(1) + ' %' : '–';
  return [h('td', { class: 'num' }, String(u.objects)), h('td', { class: 'num' }, fmtBytes(u.logical_bytes)),
    h('td', { class: 'num' }, fmtBytes(u.stored_bytes)), h('td', { class: 'num' }, saved)];
}

function usageCard(u) {
  if (!u) return card('Storage', h('p', { class: 'muted' }, 'Usage is not available.'));
  const pct = u.logical_bytes > 0 ? Math.max(0, Math.min(100, 100 * u.stored_bytes / u.logical_bytes)) : 0;
  const bar = h('div', { class: 'bar', role: 'meter', 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': pct.toFixed(0), 'aria-label': 'stored bytes as a share of logical bytes' });
  bar.append(svgBar(pct));
  return card('Storage',
    h('p', {}, `${u.objects} objects: clients wrote ${fmtBytes(u.logical_bytes)}, the storage holds ${fmtBytes(u.stored_bytes)}`,
      u.logical_bytes > 0 ? ` — filters saved ${fmtBytes(u.saved_bytes)} (${(100 * u.savings).toFixed(1)} %).` : '.'),
    bar);
}

// quotaCard shows a tenant's quotas (the effective limit: the smaller of
// the stored one and the policies') beside its usage counters.
function quotaCard(q) {
  if (!q) return card('Quota', h('p', { class: 'muted' }, 'Quotas are not available.'));
  const lim = (n, bytes) => (n ? (bytes ? fmtBytes(n) : String(n)) : 'none');
  const row = (name, limit, used, bytes) => h('tr', {}, h('td', {}, name), h('td', { class: 'num' }, lim(limit, bytes)),
    h('td', { class: 'num' }, bytes ? fmtBytes(used) : String(used)));
  const e = q.effective || {}, u = q.usage || {};
  return card('Quota',
    table(['Quota', 'Limit', 'Used'], [
      row('bytes', e.bytes, u.bytes || 0, true), row('objects', e.objects, u.objects || 0, false),
      row('buckets', e.buckets, u.buckets || 0, false), row('open uploads', e.uploads, u.uploads || 0, false),
    ], { label: 'Quota' }),
    h('p', { class: 'muted small' }, `The storage holds ${fmtBytes(u.physical_bytes || 0)} after filters. Limits are set with facet ctl quota set or SET quota in a policy.`));
}

function svgBar(pct) {
  const NS = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('viewBox', '0 0 100 4'); svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('width', '100%'); svg.setAttribute('height', '8'); svg.setAttribute('aria-hidden', 'true');
  const r = document.createElementNS(NS, 'rect');
  r.setAttribute('width', String(pct)); r.setAttribute('height', '4'); r.setAttribute('fill', '#137333');
  svg.append(r);
  return svg;
}

// ---- Overview -------------------------------------------------------------

async function overview(root, { session }) {
  if (session.role !== 'admin') {
    root.append(title('Overview'));
    const u = await api('GET', `/v1/tenants/${encodeURIComponent(session.tenant)}/usage`).catch(() => null);
    root.append(usageCard(u));
    const plots = h('div');
    root.append(h('h2', {}, 'Live throughput'), plots);
    return tenantPlots(plots, session.tenant);
  }
  root.append(title('Overview'));
  const nodesBox = h('div'), aggBox = h('div'), busyBox = h('div'), perTenant = h('div');
  root.append(h('div', { class: 'grid' }, card('Nodes', nodesBox), card('Busiest tenants (last 10 s)', busyBox)),
    h('div', { class: 'grid' }, card(null, aggBox), card(null, perTenant)));
  let apiNodes = null;
  const caps = await capabilities();
  if (has(caps, '/nodes')) apiNodes = await api('GET', '/v1/nodes').then(d => d.nodes || [], () => null);
  return live.subscribe(st => {
    const now = live.now(), windowMs = st.historyMs;
    // Nodes: those that report workload samples, and those the API lists.
    const seen = live.nodesSeen(), rows = [];
    const names = new Set([...seen.keys(), ...(apiNodes || []).map(n => n.name)]);
    for (const name of [...names].sort()) {
      const s = seen.get(name), an = (apiNodes || []).find(n => n.name === name);
      const reporting = s && s.t >= now - 5 * st.periodMs;
      rows.push(h('tr', {}, h('td', {}, name),
        h('td', {}, h('span', { class: 'badge ' + (reporting ? 'reporting' : 'silent') }, reporting ? 'reporting' : (s ? 'silent since ' + new Date(s.t).toLocaleTimeString() : 'no samples'))),
        h('td', { class: 'num' }, s ? fmtRate(s.v[0]) : '–'), h('td', { class: 'num' }, s ? fmtRate(s.v[1]) : '–'),
        h('td', {}, an ? `${an.backend}${an.devices && an.devices.length ? ', ' + an.devices.length + ' device(s)' : ''}` : '–')));
    }
    clear(nodesBox, table(['Node', 'State', { label: 'GET', num: true }, { label: 'PUT', num: true }, 'Backend'], rows, { label: 'Nodes', empty: 'No node has reported yet.' }),
      h('p', { class: 'muted small' }, st.connected ? 'Live: one sample per period.' : 'Live feed disconnected; retrying.'));
    clear(aggBox, timePlot({ width: widthOf(aggBox), id: 'aggregate-bw', title: 'Aggregate throughput', unit: 'MB/s', windowMs, now, markers: live.markersFor(null),
      series: [{ name: 'GET', color: '#1f5fbf', points: live.totalOf(live.GET_BW, MB) }, { name: 'PUT', color: '#c2410c', points: live.totalOf(live.PUT_BW, MB) }] }));
    const avg = live.averageOver(10000);
    const busy = Object.entries(avg).sort((a, b) => (b[1][0] + b[1][1]) - (a[1][0] + a[1][1]) || (b[1][2] + b[1][3]) - (a[1][2] + a[1][3])).slice(0, 10);
    clear(busyBox, table(['Tenant', { label: 'GET MB/s', num: true }, { label: 'PUT MB/s', num: true }, { label: 'GET ops/s', num: true }, { label: 'PUT ops/s', num: true }],
      busy.map(([t, v]) => h('tr', {}, h('td', {}, h('a', { href: '#/tenants/' + encodeURIComponent(t) }, t)),
        h('td', { class: 'num' }, fmtNum(v[0] / MB, 2)), h('td', { class: 'num' }, fmtNum(v[1] / MB, 2)),
        h('td', { class: 'num' }, fmtNum(v[2])), h('td', { class: 'num' }, fmtNum(v[3])))), { label: 'Busiest tenants', empty: 'No traffic in the last 10 s.' }));
    const top = live.tenantsSeen().slice(0, 8);
    clear(perTenant, timePlot({ width: widthOf(perTenant), id: 'tenants-bw', title: 'Per tenant (GET + PUT)', unit: 'MB/s', windowMs, now, markers: live.markersFor(null),
      series: top.map(t => ({ name: t, points: live.seriesOf(t, live.GET_BW, MB).map(([tt, v], i) => [tt, v + live.seriesOf(t, live.PUT_BW, MB)[i][1]]) })) }));
  });
}

// ---- Tenants --------------------------------------------------------------

async function tenants(root, ctx) {
  const { session, arg } = ctx;
  if (session.role !== 'admin') return tenantDetail(root, session.tenant, session);
  if (arg[0]) return tenantDetail(root, arg[0], session);
  root.append(title('Tenants'));
  const secretBox = h('div');
  const nameInput = h('input', { type: 'text', id: 'tenant-name', name: 'name', required: true, pattern: '[a-z0-9][a-z0-9_.\\-]{0,62}', autocomplete: 'off', spellcheck: 'false' });
  const form = h('form', { class: 'inline', id: 'tenant-create' },
    h('label', {}, 'New tenant name', nameInput), h('button', { type: 'submit', id: 'tenant-create-submit' }, 'Create tenant'));
  const listBox = h('div', { 'aria-live': 'polite' });
  root.append(card('Create a tenant', form, h('p', { class: 'muted small' }, 'Lower-case letters, digits, - _ and . (up to 63).'), secretBox), card('All tenants', listBox));
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    try {
      const c = await api('POST', '/v1/tenants', { name: nameInput.value.trim() });
      clear(secretBox, secretPanel(c));
      form.reset();
      toast(`Tenant ${c.tenant} created.`);
      await load();
    } catch (e) { toast(errorText(e)); }
  });
  async function load() {
    const list = (await api('GET', '/v1/tenants')).tenants || [];
    const usage = await Promise.all(list.map(t => api('GET', `/v1/tenants/${encodeURIComponent(t.name)}/usage`).catch(() => null)));
    clear(listBox, table(['Tenant', 'Created', { label: 'Objects', num: true }, { label: 'Logical', num: true }, { label: 'Stored', num: true }, { label: 'Saved', num: true }, 'Actions'],
      list.map((t, i) => h('tr', { 'data-tenant': t.name },
        h('td', {}, h('a', { href: '#/tenants/' + encodeURIComponent(t.name) }, t.name)), h('td', {}, fmtTime(t.created)), ...usageCells(usage[i]),
        h('td', {}, h('div', { class: 'actions' },
          h('a', { href: '#/tenants/' + encodeURIComponent(t.name) }, 'Keys and plots'),
          confirmButton('Delete', async () => { await api('DELETE', `/v1/tenants/${encodeURIComponent(t.name)}`); toast(`Tenant ${t.name} deleted.`); await load(); }, `tenant ${t.name}`))))),
    { label: 'Tenants', empty: 'No tenant yet.' }));
  }
  await load();
  return null;
}

async function tenantDetail(root, name, session) {
  const enc = encodeURIComponent(name);
  root.append(title(session.role === 'admin' ? `Tenant ${name}` : `Your tenant: ${name}`));
  if (session.role === 'admin') root.append(h('p', {}, h('a', { href: '#/tenants' }, '← All tenants')));
  const [u, buckets, q] = await Promise.all([
    api('GET', `/v1/tenants/${enc}/usage`).catch(() => null),
    api('GET', `/v1/tenants/${enc}/buckets`).then(d => d.buckets || [], () => []),
    api('GET', `/v1/tenants/${enc}/quota`).catch(() => null),
  ]);
  const plots = h('div');
  root.append(h('h2', {}, 'Live throughput (last 5 minutes)'), plots);
  const stop = tenantPlots(plots, name);
  const keysBox = h('div'), secretBox = h('div');
  root.append(h('div', { class: 'grid' }, usageCard(u), quotaCard(q),
    card('Buckets', table(['Bucket', 'Created'], buckets.map(b => h('tr', {}, h('td', {}, b.name), h('td', {}, fmtTime(b.created)))), { label: 'Buckets', empty: 'No bucket yet.' }))),
  card('Access keys', secretBox, keysBox,
    h('button', { type: 'button', id: 'key-create', onclick: async () => {
      try { clear(secretBox, secretPanel(await api('POST', `/v1/tenants/${enc}/keys`))); await loadKeys(); } catch (e) { toast(errorText(e)); }
    } }, 'Create an access key')));
  async function loadKeys() {
    const keys = (await api('GET', `/v1/tenants/${enc}/keys`)).keys || [];
    clear(keysBox, table(['Access key', 'Created', 'Actions'], keys.map(k => h('tr', { 'data-key': k.access_key },
      h('td', {}, h('code', {}, k.access_key)), h('td', {}, fmtTime(k.created)),
      h('td', {}, confirmButton('Revoke', async () => { await api('DELETE', `/v1/tenants/${enc}/keys/${encodeURIComponent(k.access_key)}`); toast('Key revoked.'); await loadKeys(); }, `access key ${k.access_key}`)))),
    { label: 'Access keys', empty: 'No access key.' }),
    h('p', { class: 'muted small' }, 'Secret keys are shown once, when a key is created.'));
  }
  await loadKeys().catch(e => clear(keysBox, failure('Access keys', e)));
  return stop;
}

// ---- Filters --------------------------------------------------------------

async function filters(root) {
  root.append(title('Filters'));
  const caps = await capabilities();
  const listBox = h('div'), depBox = h('div');
  root.append(card('Registry', listBox));
  const tenantNames = ((await api('GET', '/v1/tenants').catch(() => ({ tenants: [] }))).tenants || []).map(t => t.name);
  async function load() {
    try {
      const fs = (await api('GET', '/v1/filters')).filters || [];
      clear(listBox, table(['Name', 'Kind', { label: 'Version', num: true }, 'Methods', 'Stages', 'Reversible', 'Usable by', 'Parameters', ''],
        fs.map(f => h('tr', { 'data-filter': f.name },
          h('td', {}, h('strong', {}, f.name), f.doc ? h('div', { class: 'muted small' }, f.doc) : null), h('td', {}, f.kind), h('td', { class: 'num' }, String(f.version)),
          h('td', {}, (f.methods || []).join(', ')), h('td', {}, (f.stages || []).join(', ')), h('td', {}, f.reversible ? 'yes' : 'no'),
          h('td', {}, f.owner ? 'tenant ' + f.owner : 'every tenant'),
          h('td', {}, (f.params || []).map(p => h('div', {}, h('code', {}, p.name), ` ${p.type}${p.default ? ' = ' + p.default : ''}${p.enum ? ' (' + p.enum.join('|') + ')' : ''}`))),
          h('td', {}, f.kind === 'wasm' && has(caps, '/filters/{filter}', 'delete')
            ? confirmButton('Delete', async () => { await api('DELETE', '/v1/filters/' + encodeURIComponent(f.name)); toast(`Filter ${f.name} deleted.`); await load(); }, `filter ${f.name}`) : null))),
      { label: 'Filters', stack: true }));
    } catch (e) { clear(listBox, failure('Filter registry', e)); }
    if (!has(caps, '/filters/dependencies')) { clear(depBox, notAvailable('Filter dependencies')); return; }
    try {
      const ds = (await api('GET', '/v1/filters/dependencies')).dependencies || [];
      clear(depBox, table(['Dependency', 'Owner', { label: 'Size', num: true }, 'SHA-256', 'Updated', ''], ds.map(d => h('tr', { 'data-dependency': d.name },
        h('td', {}, h('code', {}, d.name), d.doc ? h('div', { class: 'muted small' }, d.doc) : null), h('td', {}, d.owner || 'every tenant'),
        h('td', { class: 'num' }, fmtBytes(d.size)), h('td', {}, h('code', { class: 'small' }, (d.sha256 || '').slice(0, 16))), h('td', {}, fmtTime(d.updated)),
        h('td', {}, confirmButton('Delete', async () => { await api('DELETE', '/v1/filters/dependencies/' + encodeURIComponent(d.name)); toast(`Dependency ${d.name} deleted.`); await load(); }, `dependency ${d.name}`)))),
      { label: 'Dependencies', empty: 'No dependency file.', stack: true }));
    } catch (e) { clear(depBox, failure('Filter dependencies', e)); }
  }
  if (!has(caps, '/filters', 'post')) {
    await load();
    root.append(card('Upload a WebAssembly filter', notAvailable('WASM filter upload', 'This server cannot register filters at run time.')));
    return null;
  }
  root.append(card('Dependencies (read-only files mounted at /deps/NAME)', depBox));
  await load();
  root.append(card('Upload a WebAssembly filter', uploadForm(tenantNames, load)));
  return null;
}

// uploadForm uploads the dependency files first (POST /filters/dependencies,
// multipart: descriptor and data), then the module with a descriptor that
// names them (POST /filters, multipart: descriptor and module).
function uploadForm(tenantNames, reload) {
  const status = h('p', { class: 'small', 'aria-live': 'polite', id: 'filter-upload-status' });
  const f = h('form', { id: 'filter-upload', class: 'inline' },
    h('label', {}, 'Name', h('input', { type: 'text', name: 'name', required: true, spellcheck: 'false', pattern: '[a-z][a-z0-9_\\-]{0,62}' })),
    h('label', {}, 'Module (.wasm)', h('input', { type: 'file', name: 'module', accept: '.wasm,application/wasm', required: true })),
    h('label', {}, 'Methods', h('input', { type: 'text', name: 'methods', value: 'PUT,GET' })),
    h('label', {}, 'Stages', h('input', { type: 'text', name: 'stages', value: 'gateway' })),
    h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'reversible' }), 'Reversible'),
    h('label', {}, 'Usable by', h('select', { name: 'owner' }, h('option', { value: '' }, 'every tenant'), tenantNames.map(t => h('option', { value: t }, 'tenant ' + t)))),
    h('label', {}, 'Parameters (name:type:default, …)', h('input', { type: 'text', name: 'params', spellcheck: 'false' })),
    h('label', {}, 'Description', h('input', { type: 'text', name: 'doc' })),
    h('label', {}, 'Dependencies (read-only files)', h('input', { type: 'file', name: 'dependencies', multiple: true })),
    h('button', { type: 'submit', id: 'filter-upload-submit' }, 'Upload'));
  f.addEventListener('submit', async ev => {
    ev.preventDefault();
    const owner = f.owner.value;
    const deps = [];
    try {
      for (const file of f.dependencies.files) {
        // Dependency names are [a-z][a-z0-9-_]*: words.txt becomes words-txt.
        let name = file.name.toLowerCase().replace(/[^a-z0-9_\-]/g, '-');
        if (!/^[a-z]/.test(name)) name = 'd' + name;
        name = name.slice(0, 63);
        const fd = new FormData();
        fd.append('descriptor', JSON.stringify(Object.assign({ name }, owner ? { owner } : {})));
        fd.append('data', file, file.name);
        status.textContent = `Uploading dependency ${name}…`;
        await api('POST', '/v1/filters/dependencies', fd);
        deps.push(name);
      }
      const desc = {
        name: f.name.value.trim(),
        methods: f.methods.value.split(',').map(s => s.trim().toUpperCase()).filter(Boolean),
        stages: f.stages.value.split(',').map(s => s.trim().toLowerCase()).filter(Boolean),
      };
      if (owner) desc.owner = owner;
      if (f.reversible.checked) desc.reversible = true;
      if (f.doc.value.trim()) desc.doc = f.doc.value.trim();
      const params = f.params.value.split(',').map(s => s.trim()).filter(Boolean).map(p => {
        const [name, type, def] = p.split(':');
        return Object.assign({ name, type: type || 'string' }, def ? { default: def } : {});
      });
      if (params.length) desc.params = params;
      if (deps.length) desc.dependencies = deps;
      const fd = new FormData();
      fd.append('descriptor', JSON.stringify(desc));
      fd.append('module', f.module.files[0], f.module.files[0].name);
      status.textContent = `Uploading ${desc.name}…`;
      const info = await api('POST', '/v1/filters', fd);
      status.textContent = `Filter ${info.name} version ${info.version} registered.`;
      f.reset();
      await reload();
    } catch (e) { status.textContent = errorText(e); toast(errorText(e)); }
  });
  return [f, status];
}

// ---- SLOs -----------------------------------------------------------------

async function slos(root, { session }) {
  root.append(title('SLOs'));
  const admin = session.role === 'admin';
  const caps = admin ? await capabilities() : {};
  const tenantsList = admin ? ((await api('GET', '/v1/tenants').catch(() => ({ tenants: [] }))).tenants || []).map(t => t.name) : [session.tenant];
  let sloList = null, sloErr = null;
  const loadSLOs = async () => {
    try {
      if (admin) sloList = (await api('GET', '/v1/slos')).slos || [];
      else sloList = [await api('GET', '/v1/slos/' + encodeURIComponent(session.tenant))];
      sloErr = null;
    } catch (e) {
      sloList = null; sloErr = e;
      if (!admin && e.status === 404) sloList = []; // no SLO for this tenant
    }
  };
  await loadSLOs();
  const listBox = h('div');
  root.append(card('Objectives', listBox));
  const rate = v => (v === undefined || v === null || v === 0) ? '–' : fmtRate(v);
  const renderList = () => {
    if (!sloList) { clear(listBox, failure('SLOs', sloErr)); return; }
    clear(listBox, table(['Tenant', 'Set by', 'Reservation', 'GET', 'PUT', 'Limit', 'Weight', 'Ops/s', admin ? '' : null].filter(x => x !== null),
      sloList.map(s => h('tr', { 'data-slo': s.tenant },
        h('td', {}, s.tenant), h('td', {}, s.source === 'policy' ? `policy ${s.policy || ''}` : (s.source || '–')),
        h('td', {}, rate(s.reservation)), h('td', {}, rate(s.get)), h('td', {}, rate(s.put)), h('td', {}, rate(s.limit)),
        h('td', {}, s.weight ? String(s.weight) : '–'), h('td', {}, s.ops ? String(s.ops) : '–'),
        admin ? h('td', {}, s.source === 'api' && has(caps, '/slos/{name}', 'delete')
          ? confirmButton('Remove', async () => { await api('DELETE', '/v1/slos/' + encodeURIComponent(s.tenant)); toast('SLO removed.'); await loadSLOs(); renderList(); }, `the SLO of ${s.tenant}`) : null) : null)),
      { label: 'SLOs', empty: 'No SLO set.' }));
  };
  renderList();
  if (admin) {
    const f = h('form', { class: 'inline', id: 'slo-form' },
      h('label', {}, 'Tenant', h('select', { name: 'tenant', required: true }, tenantsList.map(t => h('option', { value: t }, t)))),
      h('label', {}, 'Reservation (MB/s)', h('input', { type: 'number', name: 'reservation', min: 0, step: 'any' })),
      h('label', {}, 'Limit (MB/s)', h('input', { type: 'number', name: 'limit', min: 0, step: 'any' })),
      h('label', {}, 'Weight', h('input', { type: 'number', name: 'weight', min: 0.001, step: 'any' })),
      h('button', { type: 'submit' }, 'Set SLO'));
    const viaAPI = has(caps, '/slos/{name}', 'put');
    const note = h('p', { class: 'muted small' }, viaAPI ? 'Stored as the tenant\'s SLO record (PUT /v1/slos/TENANT); it takes effect within a controller period.'
      : 'Written as a policy: FOR TENANT t DO SET bandwidth WITH reservation=…, limit=…, weight=….');
    f.addEventListener('submit', async ev => {
      ev.preventDefault();
      const spec = {};
      if (f.reservation.value) spec.reservation = `${f.reservation.value}MB/s`;
      if (f.limit.value) spec.limit = `${f.limit.value}MB/s`;
      if (f.weight.value) spec.weight = Number(f.weight.value);
      if (!Object.keys(spec).length) { toast('Give a reservation, a limit or a weight.'); return; }
      try {
        if (viaAPI) await api('PUT', '/v1/slos/' + encodeURIComponent(f.tenant.value), spec);
        else await api('POST', '/v1/policies', `FOR TENANT ${f.tenant.value} DO SET bandwidth WITH ${Object.entries(spec).map(([k, v]) => `${k}=${v}`).join(', ')}`);
        toast('SLO set.');
        await loadSLOs(); renderList();
      } catch (e) { toast(errorText(e)); }
    });
    root.append(card('Set reservation, limit and weight', f, note));
  }
  // Live: served MB/s against reservation and the share the bandwidth
  // controller assigns (the rate "asked" of the tenant's flows in /bw).
  const plots = h('div', { class: 'grid' });
  root.append(h('h2', {}, 'Served bandwidth against the objective'), plots);
  let shares = null;
  const stopShares = has(caps, '/bw') ? every(2000, async () => { shares = assignedShares(await api('GET', '/v1/bw').catch(() => null)); }) : () => {};
  const stopLive = live.subscribe(st => {
    const now = live.now(), seen = live.tenantsSeen();
    const show = admin ? tenantsList.filter(t => seen.includes(t) || (sloList || []).some(s => s.tenant === t)) : [session.tenant];
    clear(plots, show.length ? show.map(t => {
      const s = (sloList || []).find(x => x.tenant === t);
      const refs = [];
      const res = s && (s.reservation || (s.get || 0) + (s.put || 0));
      if (res) refs.push({ name: 'reservation', value: res / MB, color: '#137333' });
      if (shares && shares[t] !== undefined) refs.push({ name: 'fair share', value: shares[t] / MB, color: '#7e22ce' });
      const served = live.seriesOf(t, live.GET_BW, MB).map(([tt, v], i) => [tt, v + live.seriesOf(t, live.PUT_BW, MB)[i][1]]);
      return card(null, timePlot({ width: cellWidth(plots, show.length), id: 'slo-' + t, title: `${t}: served`, unit: 'MB/s', windowMs: st.historyMs, now, refs, markers: live.markersFor(t),
        series: [{ name: 'served', color: colorOf(t), points: served }] }));
    }) : h('p', { class: 'muted' }, 'No tenant has traffic or an SLO yet.'));
  });
  return () => { stopShares(); stopLive(); };
}

// assignedShares adds up, per tenant, the rate the bandwidth controller
// assigned its flows on every node (bytes/s): its fair share of the
// moment. A flow without an assignment (asked 0 is "unlimited", or a
// static SLO limit) is no share, and draws no line at zero.
function assignedShares(bw) {
  if (!bw || !Array.isArray(bw.nodes)) return null;
  const out = {};
  for (const n of bw.nodes) for (const f of n.flows || []) {
    if (typeof f.tenant === 'string' && f.source === 'assigned' && typeof f.asked === 'number' && f.asked > 0 && f.class !== 'background') out[f.tenant] = (out[f.tenant] || 0) + f.asked;
  }
  return out;
}

// ---- Controllers ----------------------------------------------------------

async function controllers(root) {
  root.append(title('Controllers'));
  const box = h('div', { 'aria-live': 'polite' });
  root.append(card('Supervised controllers', box, h('p', { class: 'muted small' }, 'Refreshed every 2 seconds.')));
  return every(2000, async () => {
    try {
      const cs = (await api('GET', '/v1/controllers')).controllers || [];
      clear(box, table(['Controller', 'Kind', 'Policy', 'State', 'Active', { label: 'Restarts', num: true }, 'Last evaluation', 'Values', 'Reason / last failure'],
        cs.map(c => h('tr', { 'data-controller': c.id },
          h('td', {}, h('code', {}, c.id)), h('td', {}, c.kind), h('td', {}, c.policy || '–'),
          h('td', {}, h('span', { class: 'badge ' + c.state }, c.state)), h('td', {}, c.active ? 'yes' : 'no'),
          h('td', { class: 'num' }, String(c.restarts)), h('td', {}, c.last_evaluation || !c.last_seen ? fmtTime(c.last_evaluation) : 'heartbeat ' + fmtTime(c.last_seen)),
          h('td', {}, (c.values || []).map(v => h('div', { class: 'small' }, `${v.metric}=${fmtNum(v.value, 2)} on ${v.target}`))),
          h('td', { class: 'small' }, c.reason || '', c.last_failure ? h('div', { class: 'error' }, c.last_failure) : null))),
      { label: 'Controllers', empty: 'No controller runs.', stack: true }));
    } catch (e) { clear(box, failure('Controllers', e)); }
  });
}

// ---- Nodes and devices ----------------------------------------------------

// deviceTable lists each node's storage devices as the QoS view sees them:
// what the device moved over the last period (all of it, not only Facet's),
// what the streams reading from it need, and those streams by flow.
function deviceTable(nodes, bwRate) {
  const rows = [];
  for (const n of nodes) for (const d of n.devices || []) {
    const perFlow = new Map();
    for (const st of d.streams || []) {
      const f = st.flow || 'unclassified';
      const cur = perFlow.get(f) || { n: 0, served: 0 };
      perFlow.set(f, { n: cur.n + 1, served: cur.served + (st.served || 0) });
    }
    const flows = [...perFlow].map(([f, v]) => `${f} ×${v.n} ${bwRate(v.served)}`).join(', ');
    rows.push(h('tr', { 'data-device': d.device, 'data-node': n.node },
      h('td', {}, n.node), h('td', {}, d.device),
      h('td', { class: 'num' }, d.served >= 0 ? bwRate(d.served) : 'unknown'), h('td', { class: 'num' }, bwRate(d.asked)),
      h('td', { class: 'num' }, String((d.streams || []).length)), h('td', {}, flows || '–')));
  }
  return table(['Node', 'Device', { label: 'Moved', num: true }, { label: 'Asked', num: true }, { label: 'Streams', num: true }, 'Streams by flow'], rows,
    { label: 'Devices per node', empty: 'No node reports its storage devices (a gateway without a data directory has none).' });
}

async function nodes(root) {
  root.append(title('Nodes and devices'));
  const caps = await capabilities();
  const osBox = h('div'), flowBox = h('div'), devBox = h('div'), liveBox = h('div'), cacheBox = h('div');
  root.append(card('Bandwidth asked and served, active streams (osinfo)', osBox), card('Flows per node (tenant × class)', flowBox),
    card('Object cache (caching filter)', cacheBox), card('Devices', devBox), card('Workload per node (live)', liveBox));
  const bwRate = v => (typeof v === 'number' ? fmtRate(v) : '–');
  const stopBw = has(caps, '/bw') ? every(2000, async () => {
    try {
      const os = has(caps, '/bw/osinfo') ? await api('GET', '/v1/bw/osinfo') : await api('GET', '/v1/bw');
      clear(osBox, table(['Node', 'Stage', 'Device', { label: 'Capacity', num: true }, { label: 'Asked', num: true }, { label: 'Served', num: true }, { label: 'Streams', num: true }, 'Assigned by', 'Updated'],
        (os.nodes || []).map(n => h('tr', { 'data-node': n.node },
          h('td', {}, n.node), h('td', {}, n.stage || '–'), h('td', {}, n.device || '–'),
          h('td', { class: 'num' }, n.capacity ? bwRate(n.capacity) : 'not set'), h('td', { class: 'num' }, bwRate(n.asked)), h('td', { class: 'num' }, bwRate(n.served)),
          h('td', { class: 'num' }, String(n.streams ?? '–')), h('td', {}, n.assigner || '–'), h('td', {}, fmtTime(n.updated)))),
        { label: 'Bandwidth per node', empty: 'No node has reported bandwidth yet.' }),
        os.algorithm ? h('p', { class: 'muted small' }, `Algorithm: ${os.algorithm}; assignment ${os.seq ?? ''}.`) : null,
        deviceTable(os.nodes || [], bwRate));
      const bw = await api('GET', '/v1/bw');
      const rows = [];
      for (const n of bw.nodes || []) for (const f of n.flows || []) {
        rows.push(h('tr', {}, h('td', {}, n.node), h('td', {}, f.tenant), h('td', {}, f.class), h('td', { class: 'num' }, bwRate(f.asked)), h('td', {}, f.source || '–'),
          h('td', { class: 'num' }, bwRate(f.served)), h('td', { class: 'num' }, String(f.active ?? f.streams ?? '–')),
          h('td', {}, f.ops_rate ? `${fmtNum(f.ops_rate)}/s ${f.ops_source || ''}` : '–'),
          h('td', { class: 'num' }, fmtNum(f.ops)), h('td', { class: 'num' }, fmtNum(f.queued ?? 0)), h('td', { class: 'num' }, fmtNum(f.rejected)), h('td', { class: 'num' }, fmtNum(f.waited_seconds, 2))));
      }
      clear(flowBox, table(['Node', 'Tenant', 'Class', { label: 'Asked', num: true }, 'Source', { label: 'Served', num: true }, { label: 'Active', num: true },
        'Ops cap', { label: 'Ops/s', num: true }, { label: 'Queued/s', num: true }, { label: 'SlowDown/s', num: true }, { label: 'Waited s', num: true }], rows, { label: 'Flows', empty: 'No flow.' }));
    } catch (e) { clear(osBox, failure('Bandwidth view', e)); clear(flowBox); }
  }) : (clear(osBox, notAvailable('Bandwidth view (/v1/bw)', 'The QoS controller that reports asked and served bandwidth per node is not in this build.')), () => {});
  if (has(caps, '/nodes')) {
    try {
      const ns = (await api('GET', '/v1/nodes')).nodes || [];
      clear(devBox, ns.map(n => h('div', {}, h('h3', {}, n.name, ' ', h('span', { class: 'muted small' }, n.backend)),
        n.note ? h('p', { class: 'muted' }, n.note) : null,
        n.io ? h('p', { class: 'small' }, Object.entries(n.io).map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : v}`).join(' · ')) : null,
        genericTable(n.devices || [], 'Devices'))));
    } catch (e) { clear(devBox, failure('Nodes', e)); }
  } else clear(devBox, notAvailable('Node and device list (/v1/nodes)'));
  // The object cache of each node, as GET /v1/nodes reports it (counters
  // since the node started; the same as facet_cache_* in /metrics).
  const stopCache = has(caps, '/nodes') ? every(2000, async () => {
    try {
      const ns = ((await api('GET', '/v1/nodes')).nodes || []).filter(n => n.cache);
      clear(cacheBox, table(['Node', { label: 'Objects', num: true }, { label: 'Held', num: true }, { label: 'Hit ratio', num: true },
        { label: 'Hits', num: true }, { label: 'Misses', num: true }, { label: 'Served from cache', num: true }, { label: 'Evictions', num: true },
        { label: 'Invalidated', num: true }, { label: 'Stale', num: true }, 'Bus'],
      ns.map(n => { const c = n.cache; return h('tr', { 'data-cache-node': n.name },
        h('td', {}, n.name), h('td', { class: 'num' }, String(c.entries)), h('td', { class: 'num' }, fmtBytes(c.bytes)),
        h('td', { class: 'num', 'data-hit-ratio': String(c.hit_ratio) }, (c.hits + c.misses) ? fmtNum(100 * c.hit_ratio) + ' %' : '–'),
        h('td', { class: 'num' }, String(c.hits)), h('td', { class: 'num' }, String(c.misses)), h('td', { class: 'num' }, fmtBytes(c.served_bytes)),
        h('td', { class: 'num' }, String(c.evictions)), h('td', { class: 'num' }, String(c.invalidations)), h('td', { class: 'num' }, String(c.stale)),
        h('td', {}, h('span', { class: 'badge ' + (c.bus_connected ? 'reporting' : 'silent') }, c.bus_connected ? 'connected' : 'unreachable'))); }),
      { label: 'Object cache per node', empty: 'No node has an object cache (--cache-dir).' }),
      h('p', { class: 'muted small' }, 'Counters since each node started. Every hit is checked against the object\'s ETag; the bus only frees dead entries early.'));
    } catch (e) { clear(cacheBox, failure('Object cache', e)); }
  }) : (clear(cacheBox, notAvailable('Object cache (/v1/nodes)')), () => {});
  const stopLive = live.subscribe(st => {
    const seen = live.nodesSeen(), now = live.now();
    clear(liveBox, table(['Node', 'State', { label: 'GET MB/s', num: true }, { label: 'PUT MB/s', num: true }, { label: 'GET ops/s', num: true }, { label: 'PUT ops/s', num: true }],
      [...seen.entries()].sort().map(([n, s]) => h('tr', {}, h('td', {}, n),
        h('td', {}, h('span', { class: 'badge ' + (s.t >= now - 5 * st.periodMs ? 'reporting' : 'silent') }, s.t >= now - 5 * st.periodMs ? 'reporting' : 'silent')),
        h('td', { class: 'num' }, fmtNum(s.v[0] / MB, 2)), h('td', { class: 'num' }, fmtNum(s.v[1] / MB, 2)),
        h('td', { class: 'num' }, fmtNum(s.v[2])), h('td', { class: 'num' }, fmtNum(s.v[3])))), { label: 'Nodes', empty: 'No node has reported in the last 5 minutes.' }));
  });
  return () => { stopBw(); stopCache(); stopLive(); };
}

// genericTable renders a list of objects as a table, for views whose
// exact fields this page does not need to know.
function genericTable(items, label) {
  const cols = [];
  for (const it of items) for (const k of Object.keys(it || {})) if (!cols.includes(k)) cols.push(k);
  // A nested record (a device's mount, its block device) reads as one
  // "key: value" line per field rather than as JSON.
  const flat = v => (v === null || v === undefined) ? '–' : Array.isArray(v) ? v.map(flat).join(', ') : (typeof v === 'object' ? JSON.stringify(v) : String(v));
  const cell = v => (v !== null && typeof v === 'object' && !Array.isArray(v))
    ? Object.entries(v).map(([k, x]) => h('div', { class: 'small' }, `${k}: ${flat(x)}`)) : flat(v);
  return table(cols, items.map(it => h('tr', {}, cols.map(c => h('td', { class: typeof it[c] === 'number' ? 'num' : null }, cell(it[c]))))), { label, stack: true });
}

// ---- Volumes and pools ----------------------------------------------------

async function volumes(root) {
  root.append(title('Volumes and pools'));
  const caps = await capabilities();
  const poolBox = h('div'), volBox = h('div');
  root.append(card('Pools: reservations against capacity', poolBox), card('Volumes: placement and throttles', volBox));
  const blockOff = e => (e && e.status === 501) ? notAvailable('Block storage', 'Block storage is not running on this node (' + errorText(e) + ').') : null;
  const load = async () => {
    if (has(caps, '/pools')) {
      try { clear(poolBox, poolsView((await api('GET', '/v1/pools')).pools || [])); } catch (e) { clear(poolBox, blockOff(e) || failure('Pools', e)); }
    } else clear(poolBox, notAvailable('Pools (/v1/pools)', 'Block storage is not in this build.'));
    if (has(caps, '/volumes')) {
      try { clear(volBox, volumesView((await api('GET', '/v1/volumes')).volumes || [])); } catch (e) { clear(volBox, blockOff(e) || failure('Volumes', e)); }
    } else clear(volBox, notAvailable('Volumes (/v1/volumes)', 'Block storage is not in this build.'));
  };
  return every(5000, load);
}

// share renders used of total as "used of total (p %)" with a meter.
function share(used, total, fmt) {
  const pct = total > 0 ? Math.min(100, 100 * (used || 0) / total) : 0;
  return [`${fmt(used || 0)} of ${total ? fmt(total) : '?'}${total ? ` (${pct.toFixed(0)} %)` : ''}`,
    h('div', { class: 'bar', role: 'meter', 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': pct.toFixed(0), 'aria-label': 'reserved share' }, svgBar(pct))];
}

function poolsView(ps) {
  const iops = v => `${Math.round(v)} IO/s`;
  return table(['Pool', 'Usage', 'Capacity reserved', 'MB/s reserved', 'IOPS reserved', 'Volumes'],
    ps.map(p => h('tr', { 'data-pool': p.name },
      h('td', {}, h('strong', {}, p.name), p.dir ? h('div', { class: 'muted small' }, p.dir) : null), h('td', {}, p.usage || '–'),
      h('td', {}, share(p.reserved_capacity, p.capacity, fmtBytes)), h('td', {}, share(p.reserved_seq_bw, p.seq_bw, fmtRate)),
      h('td', {}, share(p.reserved_iops, p.rand_iops, iops)), h('td', {}, (p.volumes || []).join(', ') || '–'))),
    { label: 'Pools', empty: 'No pool.' });
}

function volumesView(vs) {
  const thr = t => {
    if (!t) return 'none';
    const parts = [];
    if (t.read_bw) parts.push(`read ${fmtRate(t.read_bw)}`);
    if (t.write_bw) parts.push(`write ${fmtRate(t.write_bw)}`);
    if (t.read_iops) parts.push(`read ${t.read_iops} IO/s`);
    if (t.write_iops) parts.push(`write ${t.write_iops} IO/s`);
    return parts.join(', ') || 'none';
  };
  return table(['Volume', 'Tenant', { label: 'Size', num: true }, 'Class', 'Placement', 'Throttle in force', 'Filters', 'Now', 'Open'],
    vs.map(v => h('tr', { 'data-volume': v.name },
      h('td', {}, h('strong', {}, v.name)), h('td', {}, v.tenant || '–'), h('td', { class: 'num' }, fmtBytes(v.size)),
      h('td', {}, `${v.class || '–'}${v.seq_bw ? ' ' + fmtRate(v.seq_bw) : ''}${v.iops ? ' ' + v.iops + ' IO/s' : ''}`),
      h('td', {}, (v.extents || []).map(e => h('div', { class: 'small' }, `${e.pool}: ${fmtBytes(e.capacity)}${e.seq_bw ? ', ' + fmtRate(e.seq_bw) : ''}${e.iops ? ', ' + e.iops + ' IO/s' : ''}`))),
      h('td', { class: 'small' }, thr(v.effective_throttle || v.throttle)),
      h('td', { class: 'small' }, (v.filters || []).map(f => f.filter).join(' → ') || '–'),
      h('td', { class: 'small' }, v.rates ? `R ${fmtRate(v.rates.read_bw || 0)} · W ${fmtRate(v.rates.write_bw || 0)} · ${Math.round((v.rates.read_iops || 0) + (v.rates.write_iops || 0))} IO/s` : '–'),
      h('td', {}, v.open ? 'yes' : 'no'))),
    { label: 'Volumes', empty: 'No volume.' });
}

export const pages = {
  overview: { title: 'Overview', render: overview },
  tenants: { title: 'Tenants', render: tenants },
  policies: { title: 'Policies', render: policiesPage },
  filters: { title: 'Filters', render: filters, adminOnly: true },
  slos: { title: 'SLOs', render: slos },
  controllers: { title: 'Controllers', render: controllers, adminOnly: true },
  nodes: { title: 'Nodes and devices', render: nodes, adminOnly: true },
  volumes: { title: 'Volumes and pools', render: volumes, adminOnly: true },
};
