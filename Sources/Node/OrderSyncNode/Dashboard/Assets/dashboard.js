'use strict';
(function () {
  const $ = (id) => document.getElementById(id);
  const per = 50;
  let page = 1;
  let total = 0;
  let events = null;
  let reloadTimer = null;
  let known = new Set();
  // Times are shown in the browser's own time zone, named on the page.
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'local time';
  const clockFormat = new Intl.DateTimeFormat(undefined, {
    year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit'
  });

  // An instant from the StorePOS form (2016-01-12T21:35:16+0800) or RFC 3339; null if neither.
  function instant(text) {
    if (!text) return null;
    const m = /^(.*\d\d:\d\d:\d\d(?:\.\d+)?)([+-]\d\d):?(\d\d)$/.exec(text);
    const d = new Date(m ? m[1] + m[2] + ':' + m[3] : text);
    return isNaN(d.getTime()) ? null : d;
  }

  // The time as the browser's clock reads it in its zone; the text itself when unreadable.
  function localTime(text) {
    const d = instant(text);
    return d ? clockFormat.format(d) : (text || '');
  }

  // 45 s, 12 min, 3 h.
  function span(seconds) {
    const s = Math.max(0, Math.round(seconds));
    if (s < 120) return s + ' s';
    if (s < 7200) return Math.round(s / 60) + ' min';
    return Math.round(s / 3600) + ' h';
  }

  // How long a paired terminal has been away: the master's awaySeconds, else since last seen.
  function awayFor(t) {
    if (t.awaySeconds != null) return span(t.awaySeconds);
    const seen = instant(t.lastSeen);
    return seen ? span((Date.now() - seen.getTime()) / 1000) : '?';
  }

  // A clock's offset from the master's: "10 min ahead", "40 s behind".
  function offsetText(ms) {
    return span(Math.abs(ms) / 1000) + (ms >= 0 ? ' ahead' : ' behind');
  }

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
      // A standby (a slave) says so: it serves the dashboard once promoted.
      const body = await r.json().catch(() => ({}));
      const said = body.error && body.error.code === 'standby' ? body.error.message : null;
      showLogin(r.status === 401 ? 'This token is not valid (revoked or mistyped).' : said || 'Login failed (HTTP ' + r.status + ').');
      return;
    }
    start();
  }

  function start() {
    $('login').hidden = true;
    $('board').hidden = false;
    $('logout').hidden = false;
    // The event stream (the live badge) and the first reads are independent: a read that
    // fails at load (a dropped connection, a master still starting) is tried again, so the
    // page never stays offline with an empty table.
    openEvents();
    firstRead();
  }

  // Status (then the change feed from its seq), orders and refused operations; what failed is
  // read again a second later until all of it came, while the board is shown.
  let firstReadTimer = null;
  function firstRead() {
    firstReadTimer = null;
    const status = api('/api/status').then((s) => {
      renderStatus(s);
      if (!feed) openFeed(s.seq);
      return true;
    }).catch(() => false);
    Promise.all([status, loadOrders(), loadRejections()]).then((done) => {
      if (done.every((ok) => ok)) {
        searchJournal();
      } else if (!$('board').hidden && !firstReadTimer) {
        firstReadTimer = setTimeout(firstRead, 1000);
      }
    });
  }

  // After a stream closed for good: a 401 shows the login form (api), anything else (the
  // master restarting, a network error) tries again after `ms`.
  function reopenLater(open, ms) {
    api('/api/status').then(() => true, (e) => e.message !== 'not logged in').then((again) => {
      if (again && !$('board').hidden) setTimeout(open, ms);
    });
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
        reopenLater(() => api('/api/status').then((s) => { scheduleReload(); if (!feed) openFeed(s.seq); }).catch(() => {}), 1000);
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
        reopenLater(openEvents, 2000);
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
    const peers = new Map((s.peers || []).filter((p) => p.terminalId).map((p) => [p.terminalId, p]));
    // Paired but not connected: away. The summary is not "ready" while any is.
    const away = (s.terminals || []).filter((t) => !t.connected);
    const awayText = away.length === 0 ? null : (away.length === 1 ? '1 till away: ' : away.length + ' tills away: ')
      + away.map((t) => t.name + ' (' + awayFor(t) + ')').join(', ');
    const skewed = (s.terminals || []).filter((t) => { const p = peers.get(t.terminalId); return p && p.clock && p.clock.skewed; })
      .map((t) => t.name + ' ' + offsetText(peers.get(t.terminalId).clock.offsetMillis));
    const state = awayText && s.state === 'ready' ? awayText : [s.state, awayText].filter((x) => x).join(' \u00b7 ');
    const summary = [
      ['State', state, awayText ? 'away' : null], ['Orders', s.orders], ['Journal seq', s.seq],
      ['Terminals up', (s.terminals || []).filter((t) => t.connected).length + ' / ' + (s.terminals || []).length],
      ['Uptime', Math.round((s.uptimeSeconds || 0) / 60) + ' min'],
      // Failover: the master's term, and the voters a promotion needs a majority of.
      // The node serving the page: the master (a promoted till says so at once), or a candidate.
      ['Role', s.role],
      ['Term', s.term],
      ['Voters', s.voters ? s.voters.count + ' (majority ' + s.voters.majority + ')' : null],
      // Clocks off by more than the bound (Docs/PROTOCOL.md 4.8), only when there are any.
      ...(skewed.length ? [['Clock off', skewed.join(', '), 'clock']] : [])
    ].map(([k, v, warn]) => {
      const d = document.createElement('div');
      if (warn) {
        d.className = 'warn';
        d.dataset.warn = warn;
      }
      const b = document.createElement('b');
      b.textContent = v == null ? '' : String(v);
      const sp = document.createElement('span');
      sp.textContent = k;
      d.append(b, sp);
      return d;
    });
    $('summary').replaceChildren(...summary);
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
      cell(tr, 'Last heard', p ? ago(p.lastSeenMillisAgo) : localTime(t.lastSeen) + ' (' + awayFor(t) + ' ago)');
      cell(tr, 'Lag', t.lag + (t.lag === 1 ? ' operation' : ' operations'));
      // What its outbox held when it last said; while away it may hold more by now.
      const waiting = t.outbox == null ? '\u2014' : t.outbox + (t.outbox === 1 ? ' change' : ' changes');
      cell(tr, 'Outbox', waiting + (t.connected || t.outbox == null ? '' : ' when last heard'),
        'outbox' + (t.outbox > 0 ? ' waiting' : ''));
      // What its standby copy lacks, as its last ack said (connected terminals only).
      const copy = p && p.standbyLag != null ? (p.standbyLag === 0 ? 'current' : p.standbyLag + ' behind') : '\u2014';
      cell(tr, 'Standby copy', copy, 'standby' + (p && p.standbyLag > 0 ? ' waiting' : ''));
      // Its clock against the master's, measured while connected.
      const c = p && p.clock;
      cell(tr, 'Clock', c ? (Math.abs(c.offsetMillis) < 1000 ? 'in step' : offsetText(c.offsetMillis)) : '\u2014',
        'clock' + (c && c.skewed ? ' skewed' : ''));
      cell(tr, 'Address', t.address, 'mono');
      return tr;
    }));
    $('no-terminals').hidden = (s.terminals || []).length > 0;
    $('terminals').hidden = (s.terminals || []).length === 0;
  }

  async function loadOrders() {
    // Newest first: tonight's orders on the first page.
    const body = await api('/api/orders?sort=-created&page=' + page + '&per=' + per).catch(() => null);
    if (!body) return false;
    total = body.total;
    const fresh = new Set();
    fill($('orders').tBodies[0], body.orders.map((o) => {
      const tr = document.createElement('tr');
      tr.dataset.uuid = o.uuid;
      tr.dataset.version = o.version;
      const made = instant(o.created);
      tr.dataset.created = made ? String(made.getTime()) : '';
      const key = o.uuid + '@' + o.version;
      fresh.add(key);
      if (known.size && !known.has(key)) tr.className = 'fresh';
      cell(tr, 'Customer', o.customerName, 'customer');
      cell(tr, 'Status', o.status);
      cell(tr, 'Table', o.tableName || '');
      cell(tr, 'Items', (o.items || []).length, 'optional');
      cell(tr, 'Created', localTime(o.created));
      cell(tr, 'Order', o.uuid, 'mono');
      return tr;
    }));
    known = fresh;
    const pages = Math.max(1, Math.ceil(total / per));
    $('order-count').textContent = '(' + total + ')';
    $('page').textContent = 'page ' + page + ' of ' + pages;
    $('prev').disabled = page <= 1;
    $('next').disabled = page >= pages;
    return true;
  }

  async function loadRejections() {
    const body = await api('/api/rejections?limit=1000').catch(() => null);
    if (!body) return false;
    const list = body.rejections.slice(-100).reverse();
    fill($('rejections').tBodies[0], list.map((r) => {
      const tr = document.createElement('tr');
      cell(tr, 'When', localTime(r.at));
      cell(tr, 'From', r.origin);
      cell(tr, 'Operation', r.operation || '');
      cell(tr, 'Order', r.order || '', 'mono');
      cell(tr, 'Reason', r.code + ': ' + r.message);
      return tr;
    }));
    $('no-rejections').hidden = list.length > 0;
    $('rejections').hidden = list.length === 0;
    return true;
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
      cell(tr, 'When', localTime(e.at));
      cell(tr, 'From', e.origin);
      cell(tr, 'Operation', e.operation);
      cell(tr, 'Orders', e.orders.join(' '), 'mono');
      return tr;
    }));
  }

  document.addEventListener('DOMContentLoaded', () => {
    for (const z of document.querySelectorAll('.zone')) z.textContent = z.classList.contains('muted') ? '(' + zone + ')' : zone;
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
