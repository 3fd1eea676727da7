'use strict';
(function () {
  const $ = (id) => document.getElementById(id);
  const per = 50;
  let page = 1;
  let total = 0;
  let events = null;
  let reloadTimer = null;
  let known = new Set();

  function cell(tr, label, value, cls) {
    const td = document.createElement('td');
    td.dataset.label = label;
    td.textContent = value == null ? '' : String(value);
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function fill(tbody, rows) {
    tbody.replaceChildren(...rows);
  }

  async function api(path) {
    const r = await fetch(path, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
    if (r.status === 401) {
      showLogin('');
      throw new Error('not logged in');
    }
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error((body.error && body.error.message) || ('HTTP ' + r.status));
    return body;
  }

  function showLogin(message) {
    if (events) { events.close(); events = null; }
    if (feed) { feed.close(); feed = null; }
    $('board').hidden = true;
    $('logout').hidden = true;
    $('login').hidden = false;
    $('login-error').textContent = message || '';
    setLive(false);
  }

  function setLive(on) {
    const b = $('live');
    b.textContent = on ? 'live' : 'offline';
    b.classList.toggle('live', on);
  }

  async function login(token) {
    const r = await fetch('/api/session', {
      method: 'POST', credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token: token.trim() })
    });
    if (r.status !== 204) {
      showLogin(r.status === 401 ? 'This token is not valid (revoked or mistyped).' : 'Login failed (HTTP ' + r.status + ').');
      return;
    }
    start();
  }

  function start() {
    $('login').hidden = true;
    $('board').hidden = false;
    $('logout').hidden = false;
    api('/api/status').then((s) => { renderStatus(s); openFeed(s.seq); }).then(() => {
      loadOrders();
      loadRejections();
      searchJournal();
      openEvents();
    }).catch(() => {});
  }

  // The master's change feed from `seq` on: each change reloads what is shown. A cursor
  // the feed no longer answers (410) closes it: reload and follow from the status's seq.
  let feed = null;
  function openFeed(seq) {
    if (feed) feed.close();
    feed = new EventSource('/api/changes?since=' + encodeURIComponent(seq));
    feed.addEventListener('change', () => scheduleReload());
    feed.addEventListener('error', () => {
      if (feed && feed.readyState === EventSource.CLOSED) {
        feed = null;
        setTimeout(() => api('/api/status').then((s) => { scheduleReload(); openFeed(s.seq); }).catch(() => {}), 1000);
      }
    });
  }

  function openEvents() {
    if (events) events.close();
    events = new EventSource('/api/events');
    events.addEventListener('open', () => {
      setLive(true);
      // Changes made while the stream was down are not replayed: reload.
      scheduleReload();
    });
    events.addEventListener('status', (e) => renderStatus(JSON.parse(e.data)));
    events.addEventListener('refusals', () => loadRejections());
    events.addEventListener('revoked', () => showLogin('This token was revoked.'));
    events.addEventListener('error', () => {
      setLive(false);
      // Closed for good (401 after a revocation, or the master went away): ask why.
      if (events && events.readyState === EventSource.CLOSED) {
        events = null;
        api('/api/status').then(() => setTimeout(openEvents, 2000)).catch(() => {});
      }
    });
  }

  function scheduleReload() {
    if (reloadTimer) return;
    reloadTimer = setTimeout(() => {
      reloadTimer = null;
      loadOrders();
      loadRejections();
      searchJournal();
      api('/api/status').then(renderStatus).catch(() => {});
    }, 30);
  }

  function ago(ms) {
    if (ms == null) return '';
    const s = Math.round(ms / 1000);
    if (s < 2) return 'now';
    if (s < 120) return s + ' s ago';
    return Math.round(s / 60) + ' min ago';
  }

  function renderStatus(s) {
    $('store').textContent = (s.store || '') + (s.name ? ' \u00b7 ' + s.name : '');
    const summary = [
      ['State', s.state], ['Orders', s.orders], ['Journal seq', s.seq],
      ['Terminals up', (s.terminals || []).filter((t) => t.connected).length + ' / ' + (s.terminals || []).length],
      ['Uptime', Math.round((s.uptimeSeconds || 0) / 60) + ' min'],
      // Failover: the master's term, and the voters a promotion needs a majority of.
      ['Term', s.term],
      ['Voters', s.voters ? s.voters.count + ' (majority ' + s.voters.majority + ')' : null]
    ].map(([k, v]) => {
      const d = document.createElement('div');
      const b = document.createElement('b');
      b.textContent = v == null ? '' : String(v);
      const sp = document.createElement('span');
      sp.textContent = k;
      d.append(b, sp);
      return d;
    });
    $('summary').replaceChildren(...summary);
    const peers = new Map((s.peers || []).filter((p) => p.terminalId).map((p) => [p.terminalId, p]));
    const list = $('terminal-names');
    list.replaceChildren(...(s.terminals || []).map((t) => {
      const o = document.createElement('option');
      o.value = t.name;
      return o;
    }));
    fill($('terminals').tBodies[0], (s.terminals || []).map((t) => {
      const tr = document.createElement('tr');
      tr.dataset.terminal = t.terminalId;
      tr.dataset.state = t.connected ? 'up' : 'away';
      cell(tr, 'Terminal', t.name);
      cell(tr, 'State', t.connected ? 'up' : 'away', 'state ' + (t.connected ? 'up' : 'away'));
      const p = peers.get(t.terminalId);
      cell(tr, 'Last heard', p ? ago(p.lastSeenMillisAgo) : t.lastSeen);
      cell(tr, 'Lag', t.lag + (t.lag === 1 ? ' operation' : ' operations'));
      // What its outbox held when it last said; while away it may hold more by now.
      const waiting = t.outbox == null ? '\u2014' : t.outbox + (t.outbox === 1 ? ' change' : ' changes');
      cell(tr, 'Outbox', waiting + (t.connected || t.outbox == null ? '' : ' when last heard'),
        'outbox' + (t.outbox > 0 ? ' waiting' : ''));
      // What its standby copy lacks, as its last ack said (connected terminals only).
      const copy = p && p.standbyLag != null ? (p.standbyLag === 0 ? 'current' : p.standbyLag + ' behind') : '\u2014';
      cell(tr, 'Standby copy', copy, 'standby' + (p && p.standbyLag > 0 ? ' waiting' : ''));
      cell(tr, 'Address', t.address, 'mono');
      return tr;
    }));
    $('no-terminals').hidden = (s.terminals || []).length > 0;
    $('terminals').hidden = (s.terminals || []).length === 0;
  }

  async function loadOrders() {
    const body = await api('/api/orders?page=' + page + '&per=' + per).catch(() => null);
    if (!body) return;
    total = body.total;
    const fresh = new Set();
    fill($('orders').tBodies[0], body.orders.map((o) => {
      const tr = document.createElement('tr');
      tr.dataset.uuid = o.uuid;
      tr.dataset.version = o.version;
      const key = o.uuid + '@' + o.version;
      fresh.add(key);
      if (known.size && !known.has(key)) tr.className = 'fresh';
      cell(tr, 'Customer', o.customerName, 'customer');
      cell(tr, 'Status', o.status);
      cell(tr, 'Table', o.tableName || '');
      cell(tr, 'Items', (o.items || []).length, 'optional');
      cell(tr, 'Created', o.created);
      cell(tr, 'Order', o.uuid, 'mono');
      return tr;
    }));
    known = fresh;
    const pages = Math.max(1, Math.ceil(total / per));
    $('order-count').textContent = '(' + total + ')';
    $('page').textContent = 'page ' + page + ' of ' + pages;
    $('prev').disabled = page <= 1;
    $('next').disabled = page >= pages;
  }

  async function loadRejections() {
    const body = await api('/api/rejections?limit=1000').catch(() => null);
    if (!body) return;
    const list = body.rejections.slice(-100).reverse();
    fill($('rejections').tBodies[0], list.map((r) => {
      const tr = document.createElement('tr');
      cell(tr, 'When', r.at);
      cell(tr, 'From', r.origin);
      cell(tr, 'Operation', r.operation || '');
      cell(tr, 'Order', r.order || '', 'mono');
      cell(tr, 'Reason', r.code + ': ' + r.message);
      return tr;
    }));
    $('no-rejections').hidden = list.length > 0;
    $('rejections').hidden = list.length === 0;
  }

  async function searchJournal(event) {
    if (event) event.preventDefault();
    const f = new FormData($('journal-form'));
    const q = new URLSearchParams({ limit: '100' });
    for (const name of ['order', 'terminal']) {
      const v = String(f.get(name) || '').trim();
      if (v) q.set(name, v);
    }
    for (const name of ['from', 'to']) {
      const v = String(f.get(name) || '');
      if (v) q.set(name, String(new Date(v).getTime()));
    }
    $('journal-error').textContent = '';
    let body;
    try {
      body = await api('/api/journal?' + q.toString());
    } catch (e) {
      $('journal-error').textContent = e.message;
      return;
    }
    fill($('journal').tBodies[0], body.entries.map((e) => {
      const tr = document.createElement('tr');
      cell(tr, 'Seq', e.seq);
      cell(tr, 'When', e.at);
      cell(tr, 'From', e.origin);
      cell(tr, 'Operation', e.operation);
      cell(tr, 'Orders', e.orders.join(' '), 'mono');
      return tr;
    }));
  }

  document.addEventListener('DOMContentLoaded', () => {
    $('login-form').addEventListener('submit', (e) => {
      e.preventDefault();
      login($('token').value);
    });
    $('journal-form').addEventListener('submit', searchJournal);
    $('prev').addEventListener('click', () => { if (page > 1) { page -= 1; loadOrders(); } });
    $('next').addEventListener('click', () => { page += 1; loadOrders(); });
    $('logout').addEventListener('click', () => {
      fetch('/api/session', { method: 'DELETE', credentials: 'same-origin' }).finally(() => showLogin(''));
    });
    // An address with #token=... opened while the page is already open.
    window.addEventListener('hashchange', () => { if (!tokenFromAddress()) start(); });
    if (!tokenFromAddress()) start();
  });

  // Logs in with the token of the address (#token=...), then takes it off the address.
  function tokenFromAddress() {
    const m = /^#token=([0-9a-fA-F]+)$/.exec(location.hash);
    if (!m) return false;
    history.replaceState(null, '', location.pathname);
    login(m[1]);
    return true;
  }
})();
