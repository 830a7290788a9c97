// The Policies page: an editor that validates as you type (the compiler's
// line:column, a caret under the fault, "did you mean"), the stored
// policies with their states, and "explain" for a tenant, bucket or key.
import { h, clear, api, fmtTime, toast, errorText, confirmButton, table } from './lib.js';

const showLabel = {
  static: 'active · static', pending: 'pending', armed: 'armed', triggered: 'active · triggered', disabled: 'disabled',
};

// caretBlock renders a diagnostic: the message, the source line and a
// caret under the column.
function caretBlock(d, kind) {
  const where = d.line > 0 ? `line ${d.line}:${d.column}: ` : '';
  const hint = d.suggestion ? ` (did you mean ${d.suggestion}?)` : '';
  const out = [h('div', { class: kind, 'data-line': d.line, 'data-column': d.column }, where + d.message + (d.message.includes('did you mean') ? '' : hint))];
  if (d.source) {
    const col = Math.max(1, d.column || 1);
    // Column counts characters; a tab in the source keeps the caret aligned
    // only if the caret line copies it.
    const pad = [...d.source].slice(0, col - 1).map(c => (c === '\t' ? '\t' : ' ')).join('');
    out.push(h('pre', { class: kind === 'warn' ? 'warn' : null, 'aria-label': `source line ${d.line} with a caret at column ${col}` }, d.source + '\n' + pad + '^'));
  }
  if (d.policies && d.policies.length) out.push(h('div', { class: 'small muted' }, 'Policies involved: ' + d.policies.join(', ')));
  return out;
}

function describe(p) {
  switch (p.show) {
    case 'triggered':
      return p.at ? `triggered at ${fmtTime(p.at)}${p.because ? ' because ' + p.because : ''}${p.on ? ' on ' + p.on : ''}` : (p.reason || 'triggered');
    case 'armed':
      // The values are the ones the trigger was last evaluated on, so
      // they say why it does not hold (the Controllers page's words), not
      // a comparison to read as true.
      return p.at ? `armed; switched off at ${fmtTime(p.at)}${p.because ? ': does not hold: ' + p.because + ' on ' + p.on : ''}` : 'armed: a controller evaluates its trigger';
    case 'pending':
      return p.reason || 'pending';
    case 'static':
      return 'in force since ' + fmtTime(p.created);
  }
  return p.reason || '';
}

export async function policiesPage(root, { session }) {
  const admin = session.role === 'admin';
  root.append(h('h1', { id: 'page-title' }, 'Policies'));
  const stops = [];
  if (admin) root.append(editor(() => loadList()));
  const listBox = h('div', { 'aria-live': 'polite' });
  root.append(h('section', { class: 'card' }, h('h2', {}, admin ? 'Stored policies' : 'Policies that apply to you'), listBox));
  async function loadList() {
    try {
      const ps = (await api('GET', '/policies')).policies || [];
      clear(listBox, table(['Policy', 'Text', 'State', 'Why', admin ? 'Actions' : ''],
        ps.map(p => h('tr', { 'data-policy': p.id, 'data-show': p.show },
          h('td', {}, h('code', {}, p.name || p.id)),
          h('td', {}, h('code', {}, p.text)),
          h('td', {}, h('span', { class: 'badge ' + p.show }, showLabel[p.show] || p.show)),
          h('td', { class: 'small' }, describe(p)),
          h('td', {}, admin ? confirmButton('Delete', async () => { await api('DELETE', '/v1/policies/' + encodeURIComponent(p.id)); toast('Policy deleted.'); await loadList(); }, `policy ${p.name || p.id}`) : null))),
      { label: 'Policies', empty: 'No policy.', stack: true }));
    } catch (e) { clear(listBox, h('p', { class: 'error' }, errorText(e))); }
  }
  await loadList();
  const timer = setInterval(loadList, 3000);
  stops.push(() => clearInterval(timer));
  root.append(explainForm(session));
  return () => stops.forEach(f => f());
}

function editor(onApplied) {
  const ta = h('textarea', { class: 'code', id: 'policy-text', name: 'text', rows: 5, spellcheck: 'false', autocomplete: 'off',
    'aria-describedby': 'policy-diagnostics', placeholder: 'FOR TENANT acme WHEN put_ops > 3 DO SET compression WITH engine=zstd TRANSIENT' });
  const diag = h('div', { class: 'diag', id: 'policy-diagnostics', 'aria-live': 'polite' });
  const applyBtn = h('button', { type: 'submit', id: 'policy-apply', disabled: true }, 'Apply');
  const form = h('form', { id: 'policy-form' }, h('label', { for: 'policy-text' }, 'Policy text (one policy per line; validated as you type)'), ta,
    diag, h('div', { class: 'actions' }, applyBtn));
  let seq = 0, timer = null;
  const validate = async () => {
    const text = ta.value;
    const my = ++seq;
    if (!text.trim()) { clear(diag); applyBtn.disabled = true; return; }
    try {
      const r = await api('POST', '/v1/policies:validate', text);
      if (my !== seq) return; // a newer keystroke is being validated
      const parts = [];
      for (const e of r.errors || []) parts.push(caretBlock(e, 'err'));
      for (const w of r.warnings || []) parts.push(caretBlock(w, 'warn'));
      if (r.valid) {
        parts.unshift(h('div', { class: 'ok', id: 'policy-valid' }, `Valid: ${r.policies.length} polic${r.policies.length === 1 ? 'y' : 'ies'}.`),
          h('ul', { class: 'small' }, r.policies.map(p => h('li', {}, `${(p.targets || []).join(', ')} → ${(p.actions || []).join('; ')} (${p.state})`))));
      }
      clear(diag, parts);
      ta.setAttribute('aria-invalid', r.valid ? 'false' : 'true');
      applyBtn.disabled = !r.valid;
    } catch (e) {
      if (my === seq) { clear(diag, h('div', { class: 'err' }, errorText(e))); applyBtn.disabled = true; }
    }
  };
  ta.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(validate, 250); });
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    try {
      const r = await api('POST', '/v1/policies', ta.value);
      toast(`Stored ${r.policies.length} polic${r.policies.length === 1 ? 'y' : 'ies'}.`);
      ta.value = '';
      clear(diag);
      applyBtn.disabled = true;
      await onApplied();
    } catch (e) {
      const b = e.body || {};
      clear(diag, (b.errors || []).length ? b.errors.map(d => caretBlock(d, 'err')) : h('div', { class: 'err' }, errorText(e)));
    }
  });
  return h('section', { class: 'card' }, h('h2', {}, 'Write a policy'), form);
}

function explainForm(session) {
  const admin = session.role === 'admin';
  const out = h('div', { 'aria-live': 'polite' });
  const f = h('form', { class: 'inline', id: 'explain-form' },
    h('label', {}, 'Tenant', h('input', { type: 'text', name: 'tenant', required: true, value: admin ? '' : session.tenant, readonly: !admin })),
    h('label', {}, 'Bucket', h('input', { type: 'text', name: 'bucket' })),
    h('label', {}, 'Key', h('input', { type: 'text', name: 'key' })),
    h('label', {}, 'Size (bytes)', h('input', { type: 'number', name: 'size', min: 0 })),
    h('label', {}, 'Content type', h('input', { type: 'text', name: 'type' })),
    h('button', { type: 'submit' }, 'Explain'));
  f.addEventListener('submit', async ev => {
    ev.preventDefault();
    const q = new URLSearchParams();
    for (const k of ['tenant', 'bucket', 'key', 'size', 'type']) if (f[k].value) q.set(k, f[k].value);
    try {
      const ex = await api('GET', '/v1/explain?' + q.toString());
      clear(out,
        (ex.pipelines || []).map(p => h('div', {}, h('h3', {}, `${p.method} at the ${p.stage} stage`),
          table(['Filter', 'Parameters', 'From policy', 'Level', 'Target'], (p.filters || []).map(s => h('tr', {},
            h('td', {}, h('code', {}, s.filter), s.callable ? ' (callable)' : ''),
            h('td', { class: 'small' }, Object.entries(s.params || {}).map(([k, v]) => `${k}=${v}`).join(', ')),
            h('td', {}, h('code', {}, s.policy_name || s.policy)), h('td', {}, s.level), h('td', {}, s.target))), { empty: 'No filter.' }))),
        (ex.removed || []).length ? h('p', { class: 'small' }, 'Removed by a more specific DELETE: ' + ex.removed.map(s => `${s.filter} (${s.note || s.policy})`).join('; ')) : null,
        (ex.pending || []).length ? h('p', { class: 'small' }, 'Dynamic policies not in force now: ' + ex.pending.join(', ')) : null,
        (ex.warnings || []).map(w => h('p', { class: 'small warn' }, w.message)));
    } catch (e) { clear(out, h('p', { class: 'error' }, errorText(e))); }
  });
  return h('section', { class: 'card' }, h('h2', {}, 'Explain the effective pipeline'), f, out);
}
