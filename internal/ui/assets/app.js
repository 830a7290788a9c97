// The dashboard's shell: sign-in, the session, navigation between pages
// (#/page/arg), and the live feed's life cycle.
import { h, clear, api, setCSRF, setUnauthorized, errorText, resetCapabilities } from './lib.js';
import * as live from './live.js';
import { pages } from './pages.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const who = document.getElementById('who');
const signout = document.getElementById('signout');
let session = null;
let unmount = null;

function showLogin(message) {
  session = null;
  live.disconnect();
  resetCapabilities();
  if (unmount) { unmount(); unmount = null; }
  nav.hidden = true;
  signout.hidden = true;
  who.textContent = '';
  let mode = 'admin';
  const err = h('p', { class: 'error', role: 'alert', id: 'login-error' }, message || '');
  const tokenField = h('label', {}, 'Admin token', h('input', { type: 'password', name: 'token', id: 'login-token', autocomplete: 'current-password', required: true }));
  const akField = h('label', { hidden: true }, 'Access key', h('input', { type: 'text', name: 'access_key', id: 'login-access-key', autocomplete: 'username', spellcheck: 'false' }));
  const skField = h('label', { hidden: true }, 'Secret key', h('input', { type: 'password', name: 'secret_key', id: 'login-secret-key', autocomplete: 'current-password' }));
  const setMode = m => {
    mode = m;
    tokenField.hidden = m !== 'admin';
    akField.hidden = skField.hidden = m !== 'tenant';
    tokenField.querySelector('input').required = m === 'admin';
    akField.querySelector('input').required = skField.querySelector('input').required = m === 'tenant';
  };
  const form = h('form', { id: 'login-form', 'aria-labelledby': 'login-title' },
    h('fieldset', {}, h('legend', {}, 'Sign in as'),
      h('label', { class: 'check' }, h('input', { type: 'radio', name: 'mode', value: 'admin', id: 'mode-admin', checked: true, onchange: () => setMode('admin') }), 'Administrator'),
      h('label', { class: 'check' }, h('input', { type: 'radio', name: 'mode', value: 'tenant', id: 'mode-tenant', onchange: () => setMode('tenant') }), 'Tenant')),
    tokenField, akField, skField,
    h('button', { type: 'submit', id: 'login-submit' }, 'Sign in'), err);
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    const body = mode === 'admin'
      ? { token: form.token.value }
      : { access_key: form.access_key.value.trim(), secret_key: form.secret_key.value };
    try {
      const s = await api('POST', '/login', body);
      form.reset();
      start(s);
    } catch (e) {
      err.textContent = e.status === 401 ? 'Wrong token or keys.' : errorText(e);
    }
  });
  clear(main, h('section', { class: 'login card' }, h('h1', { id: 'login-title' }, 'Sign in to Facet'), form));
  tokenField.querySelector('input').focus();
}

function start(s) {
  session = s;
  setCSRF(s.csrf);
  who.textContent = s.role === 'admin' ? 'Administrator' : 'Tenant ' + s.tenant;
  signout.hidden = false;
  nav.hidden = false;
  for (const a of nav.querySelectorAll('a[data-admin]')) a.parentElement.hidden = s.role !== 'admin';
  live.connect();
  if (!location.hash || location.hash === '#' || location.hash.startsWith('#main')) location.hash = '#/overview';
  route();
}

async function route() {
  if (!session) return;
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  let name = parts[0] || 'overview';
  if (name === 'main') return; // the skip link
  let page = pages[name];
  if (!page || (page.adminOnly && session.role !== 'admin')) { name = 'overview'; page = pages.overview; }
  for (const a of nav.querySelectorAll('a')) {
    if (a.dataset.page === name) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  if (unmount) { unmount(); unmount = null; }
  const root = h('section', { 'aria-labelledby': 'page-title', 'data-page': name });
  clear(main, root);
  document.title = page.title + ' · Facet';
  try {
    unmount = await page.render(root, { session, arg: parts.slice(1) }) || null;
  } catch (e) {
    root.append(h('p', { class: 'error', role: 'alert' }, errorText(e)));
  }
}

signout.addEventListener('click', async () => {
  try { await api('POST', '/logout'); } catch (e) { /* the session may be gone already */ }
  showLogin('Signed out.');
});
window.addEventListener('hashchange', () => {
  if (location.hash === '#main') { main.focus(); return; }
  route().then(() => main.focus());
});
setUnauthorized(() => { if (session) showLogin('Your session ended; sign in again.'); });

api('GET', '/session').then(start, () => showLogin());
