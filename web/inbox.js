// The Kiln inbox: approvals waiting for the signed-in user's tenant, decided here, kept live by
// each open run's event stream. Everything from a run (commands, diffs, log) is model output: it
// is shown as text, never as HTML.
'use strict';

const KEY = 'kiln-token';
const $ = (id) => document.getElementById(id);
const streams = new Map();
const ended = new Map();
let refreshTimer = 0;
let role = '';
let user = '';

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function say(text) {
  $('status').textContent = text;
}

async function api(path, init) {
  const token = sessionStorage.getItem(KEY);
  const res = await fetch(path, { ...init, headers: { ...(init && init.headers), Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' } });
  if (res.status === 401) {
    signOut('Your token was refused: sign in again.');
    throw new Error('unauthorized');
  }
  const type = res.headers.get('content-type') || '';
  const body = type.includes('json') ? await res.json() : await res.text();
  if (!res.ok) throw new Error((body && body.message) || `HTTP ${res.status}`);
  return body;
}

function signOut(message) {
  sessionStorage.removeItem(KEY);
  for (const s of streams.values()) s.abort();
  streams.clear();
  $('inbox').hidden = true;
  $('who').hidden = true;
  $('signout').hidden = true;
  $('login').hidden = false;
  say(message || '');
  $('token').focus();
}

async function start() {
  try {
    const me = await api('/me');
    role = me.role;
    user = me.user;
    $('who').textContent = `${me.user} · tenant ${me.tenant} · ${me.role}`;
    $('who').hidden = false;
    $('signout').hidden = false;
    $('login').hidden = true;
    $('inbox').hidden = false;
    await refresh();
    if (!streams.has(TENANT_STREAM)) void followTenant();
  } catch (e) {
    if (e.message !== 'unauthorized') say(`Could not load: ${e.message}`);
  }
}

function scheduleRefresh() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(() => refresh().catch((e) => say(`Could not refresh: ${e.message}`)), 250);
}

async function refresh() {
  const [{ approvals, needsHuman }, { runs }] = await Promise.all([api('/approvals'), api('/runs?limit=30')]);
  renderApprovals(approvals);
  renderHuman(needsHuman);
  renderRuns(runs);
  for (const r of runs) if (r.status === 'RUNNING' && !streams.has(r.runId)) void follow(r.runId);
}

function renderRuns(runs) {
  const body = $('runs');
  body.replaceChildren(
    ...runs.map((r) => {
      const end = ended.get(r.runId);
      const phase = end ? end : r.phase || r.status.toLowerCase();
      return el(
        'tr',
        { 'data-run': r.runId },
        el('td', { text: r.runId }),
        el('td', { class: 'phase', text: phase }),
        el('td', { text: r.repo || '' }),
        el('td', { text: r.startedBy || '' }),
        el('td', { text: r.startedAt ? new Date(r.startedAt).toLocaleString() : '' }),
      );
    }),
  );
}

// A card is redrawn only when what it shows changed: a refresh that another run's event caused
// does not wipe a reason being typed, move the focus, or fetch the diff again.
function renderApprovals(list) {
  $('empty').hidden = list.length > 0;
  const box = $('approvals');
  const focused = document.activeElement && document.activeElement.closest('.approval');
  const old = new Map([...box.children].map((e) => [e.dataset.key, e]));
  const want = list.map((item) => {
    const sig = JSON.stringify([user, role, item]);
    const prev = old.get(`${item.runId}/${item.approval.id}`);
    if (prev && prev.dataset.sig === sig) return prev;
    const next = card(item);
    next.dataset.sig = sig;
    const typed = prev && prev.querySelector('textarea');
    const fresh = next.querySelector('textarea');
    if (typed && fresh) fresh.value = typed.value;
    return next;
  });
  want.forEach((e, i) => {
    if (box.children[i] !== e) box.insertBefore(e, box.children[i] || null);
  });
  while (box.children.length > want.length) box.lastElementChild.remove();
  // the focused card was redrawn: the focus stays on that card, not on the page's top
  if (focused && !focused.isConnected) {
    const again = box.querySelector(`[data-key="${CSS.escape(focused.dataset.key)}"] button:not([disabled])`);
    if (again) again.focus();
  }
}

/** A call two approvers must approve: how many have, who, and whether the signed-in user is one of them. */
function votes(a) {
  if (!a.approvals) return null;
  const { needed, by } = a.approvals;
  return el('p', { class: 'votes' }, el('strong', { text: 'Approvals: ' }), `${by.length} of ${needed}${by.length ? ` (${by.join(', ')})` : ''}`);
}
/** An edit's preview is its diff; an MCP call's is the arguments it would send to its server. */
const previewTitle = (a) => (a.tool.startsWith('mcp__') ? 'The arguments it would send' : 'The change it would make');

const approvedByMe = (a) => Boolean(a.approvals && a.approvals.by.includes(user));

function card(item) {
  const a = item.approval;
  const key = `${item.runId}/${a.id}`;
  const id = `a-${key.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const parsed =
    a.segments && a.segments.length ? a.segments.map((s) => `${s.via && s.via.length ? `[${s.via.join(' > ')}] ` : ''}${s.text}`).join('\n') : a.summary;
  const diff = el('pre', { 'aria-label': 'diff so far', text: 'loading the diff…' });
  api(`/runs/${encodeURIComponent(item.runId)}/patch`)
    .then((t) => (diff.textContent = t || '(no changes yet)'))
    .catch((e) => (diff.textContent = `(diff unavailable: ${e.message})`));
  const reason = el('textarea', { id: `${id}-reason`, rows: '2', cols: '50' });
  const section = el(
    'article',
    { class: 'approval', 'data-key': key, 'aria-labelledby': `${id}-h` },
    el(
      'h3',
      { id: `${id}-h` },
      // the summary already names the tool ("run_command: npm run lint", 'mcp__docs__search {"q":"x"}')
      a.summary.startsWith(`${a.tool}:`) || a.summary.startsWith(`${a.tool} `) ? a.summary : `${a.tool}: ${a.summary}`,
      item.scripted ? ' ' : null,
      item.scripted ? el('span', { class: 'scripted', text: 'SCRIPTED model' }) : null,
    ),
    el('p', {}, el('strong', { text: 'Run ' }), `${item.runId} · ${item.repo} · started by ${item.startedBy || 'unknown'} · approval ${a.id}`),
    el('p', {}, el('strong', { text: 'Goal: ' }), item.goal),
    el('p', { class: 'reason' }, el('strong', { text: 'Why it asks: ' }), `${a.reason} (${a.rule})`),
    votes(a),
    el('h4', { text: 'The call' }),
    el('pre', { text: parsed }),
    a.preview ? el('h4', { text: previewTitle(a) }) : null,
    a.preview ? el('pre', { class: 'preview', 'aria-label': previewTitle(a).toLowerCase(), text: a.preview }) : null,
    el('h4', { text: 'Plan' }),
    item.plan && item.plan.length ? el('ol', {}, ...item.plan.map((p) => el('li', { text: `[${p.status}] ${p.step}` }))) : el('p', { text: '(no plan yet)' }),
    el('h4', { text: 'Last turns' }),
    el('pre', { text: item.recentLog.map((l) => `${l.kind.padEnd(8)} ${l.text}`).join('\n') }),
    el('h4', { text: 'Diff so far' }),
    diff,
    role !== 'approver'
      ? el('p', { text: `Your role (${role}) may not decide approvals: an approver's token can.` })
      : el(
          'div',
          { class: 'actions' },
          approvedByMe(a) ? el('p', { class: 'mine', text: `You approved this already; it waits for another approver (the same person counts once).` }) : null,
          button('Approve once', 'approve', () => decide(item.runId, a.id, { decision: 'approve', scope: 'once' }), approvedByMe(a)),
          // a call several approvers must approve needs them every time: the server takes no grant for the run
          a.approvals ? null : button('Approve for the run', 'approve', () => decide(item.runId, a.id, { decision: 'approve', scope: 'run' })),
          el('label', { for: `${id}-reason` }, 'Reason to reject', reason),
          button('Reject', 'reject', () => {
            if (!reason.value.trim()) {
              say('A rejection needs a reason: the model reads it.');
              reason.focus();
              return;
            }
            return decide(item.runId, a.id, { decision: 'reject', reason: reason.value.trim() });
          }),
        ),
  );
  return section;
}

function renderHuman(list) {
  $('human-empty').hidden = list.length > 0;
  $('human').replaceChildren(...list.map(humanCard));
}

function humanCard(item) {
  const id = `h-${item.runId.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const hint = el('textarea', { id: `${id}-hint`, rows: '2', cols: '50' });
  const send = (body) => async () => {
    try {
      const r = await api(`/runs/${encodeURIComponent(item.runId)}/human`, { method: 'POST', body: JSON.stringify(body) });
      say(`${r.action} sent to ${item.runId} as ${r.by}: ${r.result}`);
    } catch (e) {
      say(`Not applied: ${e.message}`);
    }
    scheduleRefresh();
  };
  return el(
    'article',
    { class: 'approval', 'aria-labelledby': `${id}-h` },
    el(
      'h3',
      { id: `${id}-h` },
      `${item.runId} needs a person`,
      item.scripted ? ' ' : null,
      item.scripted ? el('span', { class: 'scripted', text: 'SCRIPTED model' }) : null,
    ),
    el('p', {}, el('strong', { text: 'Goal: ' }), item.goal),
    el('p', { class: 'reason' }, el('strong', { text: 'Why: ' }), item.reason),
    el('pre', { text: item.recentLog.map((l) => `${l.kind.padEnd(8)} ${l.text}`).join('\n') }),
    role !== 'approver'
      ? el('p', { text: `Your role (${role}) may not answer: an approver's token can.` })
      : el(
          'div',
          { class: 'actions' },
          el('label', { for: `${id}-hint` }, 'Hint', hint),
          button('Send hint', 'approve', () =>
            hint.value.trim() ? send({ action: 'hint', text: hint.value.trim() })() : (say('Write the hint first.'), hint.focus()),
          ),
          button('Accept the patch', 'approve', send({ action: 'accept' })),
          button('Abandon', 'reject', send({ action: 'abandon' })),
        ),
  );
}

function button(label, cls, onClick, off) {
  const b = el('button', { type: 'button', class: cls, text: label });
  b.disabled = Boolean(off);
  b.addEventListener('click', async () => {
    b.disabled = true;
    try {
      await onClick();
    } finally {
      b.disabled = Boolean(off);
    }
  });
  return b;
}

async function decide(runId, approvalId, body) {
  try {
    const r = await api(`/runs/${encodeURIComponent(runId)}/approvals/${encodeURIComponent(approvalId)}`, { method: 'POST', body: JSON.stringify(body) });
    say(`${r.decision === 'approve' ? 'Approved' : 'Rejected'} ${approvalId} in ${runId} as ${r.by}: ${r.result}`);
  } catch (e) {
    say(`Not applied: ${e.message}`);
  }
  scheduleRefresh();
}

const TENANT_STREAM = '*';

/** The tenant's open runs as one stream: a run that starts (or starts to wait) shows at once. */
function followTenant() {
  return readStream(TENANT_STREAM, '/events', (ev) => {
    if (ev.event === 'runs') scheduleRefresh();
  });
}

function follow(runId) {
  return readStream(runId, `/runs/${encodeURIComponent(runId)}/events`, (ev) => {
    if (ev.event === 'state') scheduleRefresh();
    if (ev.event !== 'end') return false;
    const d = JSON.parse(ev.data);
    ended.set(runId, d.result ? d.result.state : d.status.toLowerCase());
    say(`${runId} ended: ${ended.get(runId)}${d.result && d.result.scripted ? ' (SCRIPTED model)' : ''}`);
    scheduleRefresh();
    return true;
  });
}

/**
 * Reads a Server-Sent Events stream until `onEvent` returns true, reconnecting (with
 * Last-Event-ID) when it drops. EventSource cannot send an Authorization header: fetch reads it.
 * Kept in `streams` under `key`, so signing out aborts it.
 */
async function readStream(key, path, onEvent) {
  const ctl = new AbortController();
  streams.set(key, ctl);
  let lastId = '';
  try {
    for (let tries = 0; tries < 20 && !ctl.signal.aborted; tries++) {
      const res = await fetch(path, {
        headers: { Authorization: `Bearer ${sessionStorage.getItem(KEY)}`, ...(lastId ? { 'Last-Event-ID': lastId } : {}) },
        signal: ctl.signal,
      });
      if (!res.ok || !res.body) return;
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let cut;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const ev = parse(buf.slice(0, cut));
          buf = buf.slice(cut + 2);
          if (ev.id) lastId = ev.id;
          if (onEvent(ev)) return;
        }
      }
    }
  } catch {
    /* aborted on sign-out, or the server went away: the next refresh follows again */
  } finally {
    streams.delete(key);
  }
}

function parse(block) {
  const ev = { event: 'message', data: '', id: '' };
  for (const line of block.split('\n')) {
    const i = line.indexOf(':');
    if (i <= 0) continue;
    const k = line.slice(0, i);
    const v = line.slice(i + 1).replace(/^ /, '');
    if (k === 'data') ev.data += (ev.data ? '\n' : '') + v;
    else if (k === 'event' || k === 'id') ev[k] = v;
  }
  return ev;
}

document.addEventListener('DOMContentLoaded', () => {
  $('login').addEventListener('submit', (e) => {
    e.preventDefault();
    sessionStorage.setItem(KEY, $('token').value.trim());
    $('token').value = '';
    say('');
    void start();
  });
  $('signout').addEventListener('click', () => signOut('Signed out.'));
  setInterval(() => {
    if (sessionStorage.getItem(KEY)) scheduleRefresh();
  }, 15000);
  if (sessionStorage.getItem(KEY)) void start();
  else signOut();
});
