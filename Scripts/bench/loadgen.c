/*
 * loadgen: a StorePOS load generator on raw sockets, for Scripts/perf.py.
 *
 * Opens R receiving terminals and one sending terminal to a master (plain WebSocket, no
 * subprotocol: what an unmodified StorePOS app speaks), sends Creates one order per message and
 * times each one from its send until every receiver has it. Independent of the code it
 * measures: its own RFC 6455 client, its own JSON scanning, one epoll loop, one thread.
 *
 *   loadgen --port P --mode max      --receivers 10 --ops 20000 --window 256
 *   loadgen --port P --mode rate     --receivers 10 --rate 1000 --duration 5 --warmup 1
 *   loadgen --port P --mode hold     --receivers 1000 --duration 10
 *   loadgen --port P --mode snapshot --expect 100000
 *
 * Prints one JSON object (see the end of main()). Build: gcc -O2 -Wall -Wextra -o loadgen loadgen.c -lm
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "loadgen_noise.h"

enum mode { MODE_MAX, MODE_RATE, MODE_HOLD, MODE_SNAPSHOT };

struct buf {
    unsigned char *data;
    size_t len, cap, off;
};

struct conn {
    int fd;
    int index;          /* receiver index, or -1 for the sender */
    int open;           /* ready for operations: upgraded (StorePOS), or `ready` received (paired) */
    int upgraded;       /* WebSocket handshake done */
    int closed;
    struct buf in, out, msg;
    int msg_opcode;
    long messages;      /* data messages received */
    uint64_t arrived_ns; /* when the kernel had the latest bytes read (SO_TIMESTAMPNS), monotonic */
    int stamped;         /* whether the kernel stamped them (else arrived_ns is when they were read) */
    uint64_t connected_ns;
    /* A paired terminal (--paired): its secure link, the stage of its handshake (1: Noise message
       sent, 2: hello sent, 3: live), the chunks of a message in parts, the last seq it got and
       the last it acknowledged. */
    struct noise_link *nl;
    int stage, key_index;
    struct buf plain;
    long last_seq, acked_seq;
};

static const char *host = "127.0.0.1";
static int port = 0;
static enum mode mode = MODE_MAX;
static int receivers = 10;
static long ops = 10000;
static long window_size = 256;
static double rate = 1000;
static double duration = 5, warmup = 1;
static long expect = 0;
static int order_bytes = 200;
static unsigned marker = 0;
static int json_only = 0;
static double settle_ms = 0;
static uint64_t last_rx_ns = 0;
/* --paired FILE: the master's public key, then one private key per terminal (hex, a line each). */
static const char *paired_file = NULL;
/* Paired: say the link reads batched transport messages (--batches 0: an older slave's link). */
static int batches = 1;
static const char *store_name = "bench";
static unsigned char master_key[32];
static unsigned char (*terminal_keys)[32];
static int terminal_key_count = 0;
static uint64_t last_ack_ns = 0;

static struct conn *conns;
static int nconns;
static int epfd;
static long errors_count = 0;
static char first_error[256] = "";

/* Per operation: send time and how many receivers still lack it. */
static uint64_t *sent_at;
static int *remaining;
static double *latency_ms;
static long latencies = 0;
/* Each operation's first and last arrival at a receiver's socket (the kernel's receive stamp),
   and the latencies they give: the master's delivery without the generator's own queueing. */
static uint64_t *first_arrival, *last_arrival;
static double *arrival_ms, *first_ms;
static int64_t realtime_less_monotonic;
static long stamped_deliveries;
static long measured_from = 0; /* ops before this index are warm-up */
static unsigned char *seen;    /* receivers x ops bits */
static long sent = 0, delivered = 0, delivered_ops = 0, duplicates = 0;
static long snapshot_orders = 0;
static uint64_t snapshot_done_ns = 0;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void error_note(const char *fmt, ...) {
    errors_count++;
    if (first_error[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(first_error, sizeof first_error, fmt, ap);
    va_end(ap);
}

static void buf_append(struct buf *b, const void *p, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        b->data = realloc(b->data, cap);
        if (!b->data) { perror("realloc"); exit(2); }
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void buf_consume(struct buf *b, size_t n) {
    b->off += n;
    if (b->off == b->len) { b->off = b->len = 0; }
    else if (b->off > (1u << 20) && b->off * 2 > b->len) {
        memmove(b->data, b->data + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
    }
}

static void watch(struct conn *c, int want_out) {
    struct epoll_event ev = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* A link that ended: out of the epoll set, so that its hang-up does not wake the loop for ever. */
static void drop(struct conn *c) {
    c->closed = 1;
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
}

static void flush_out(struct conn *c) {
    if (c->closed) return;
    while (c->out.len > c->out.off) {
        ssize_t n = send(c->fd, c->out.data + c->out.off, c->out.len - c->out.off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) break;
            error_note("send: %s", strerror(errno));
            drop(c);
            return;
        }
        buf_consume(&c->out, (size_t)n);
    }
    watch(c, c->out.len > c->out.off);
}

static uint32_t rng_state = 0x9e3779b9u;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

/* A masked client frame (RFC 6455 5.3) appended to c->out. */
static void send_frame(struct conn *c, int opcode, const char *payload, size_t n) {
    unsigned char head[14];
    size_t h = 0;
    head[h++] = (unsigned char)(0x80 | opcode);
    if (n < 126) head[h++] = (unsigned char)(0x80 | n);
    else if (n <= 0xFFFF) { head[h++] = 0x80 | 126; head[h++] = (unsigned char)(n >> 8); head[h++] = (unsigned char)n; }
    else { head[h++] = 0x80 | 127; for (int i = 7; i >= 0; i--) head[h++] = (unsigned char)(n >> (8 * i)); }
    uint32_t key = rnd();
    unsigned char k[4] = {(unsigned char)key, (unsigned char)(key >> 8), (unsigned char)(key >> 16), (unsigned char)(key >> 24)};
    memcpy(head + h, k, 4);
    h += 4;
    buf_append(&c->out, head, h);
    size_t start = c->out.len;
    buf_append(&c->out, payload, n);
    for (size_t i = 0; i < n; i++) c->out.data[start + i] ^= k[i & 3];
}

static struct conn *open_conn(int index) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) { error_note("socket: %s", strerror(errno)); return NULL; }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) {
        error_note("connect: %s", strerror(errno));
        close(fd);
        return NULL;
    }
    struct conn *c = &conns[nconns++];
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->index = index;
    c->connected_ns = now_ns();
    char req[320];
    int n = snprintf(req, sizeof req,
                     "GET / HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n%s\r\n",
                     host, port, paired_file ? "Sec-WebSocket-Protocol: ordersync.ik.v1\r\n" : "");
    if (paired_file) {
        int k = index >= 0 ? index : receivers;
        if (k >= terminal_key_count) { error_note("--paired holds %d terminal keys, %d needed", terminal_key_count, k + 1); exit(2); }
        c->nl = calloc(1, sizeof *c->nl);
        c->key_index = k;
    }
    buf_append(&c->out, req, (size_t)n);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
    return c;
}

static int hexval(int ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* The uuid of operation i: MMMMMMMM-0000-4000-8000-IIIIIIIIIIII. */
static void op_uuid(char out[37], long i) {
    snprintf(out, 37, "%08X-0000-4000-8000-%012lX", marker, i);
}

/* Operation i reached terminal c (its bytes stamped c->arrived_ns). */
static void delivered_to(const struct conn *c, long i) {
    if (i < 0 || i >= sent) { error_note("receiver %d got op %ld never sent", c->index, i); return; }
    size_t bit = (size_t)c->index * (size_t)ops + (size_t)i;
    uint64_t arrived = c->arrived_ns;
    if (seen[bit >> 3] & (1u << (bit & 7))) { duplicates++; return; }
    seen[bit >> 3] |= (unsigned char)(1u << (bit & 7));
    delivered++;
    stamped_deliveries += c->stamped;
    if (arrived < sent_at[i]) arrived = sent_at[i]; /* the two clocks' offset is read once */
    if (!first_arrival[i] || arrived < first_arrival[i]) first_arrival[i] = arrived;
    if (arrived > last_arrival[i]) last_arrival[i] = arrived;
    if (--remaining[i] == 0) {
        delivered_ops++;
        if (i >= measured_from) {
            arrival_ms[latencies] = (double)(last_arrival[i] - sent_at[i]) / 1e6;
            first_ms[latencies] = (double)(first_arrival[i] - sent_at[i]) / 1e6;
            latency_ms[latencies++] = (double)(now_ns() - sent_at[i]) / 1e6;
        }
    }
}

/* After the key at q (just past its closing quote): skips `\s*:\s*`; NULL if no colon. */
static const unsigned char *after_colon(const unsigned char *q, const unsigned char *end) {
    while (q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')) q++;
    if (q >= end || *q != ':') return NULL;
    q++;
    while (q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')) q++;
    return q;
}

/* Whether the message is a Create ("operation": 0, whatever the spacing). */
static int is_create(const unsigned char *p, size_t n) {
    const unsigned char *end = p + n, *q = p;
    while ((q = memmem(q, (size_t)(end - q), "\"operation\"", 11))) {
        const unsigned char *v = after_colon(q + 11, end);
        if (v && v < end && *v == '0') return 1;
        q += 11;
    }
    return 0;
}

/* A whole text message from the master. */
static void on_message(struct conn *c, const unsigned char *p, size_t n) {
    c->messages++;
    if (c->index < 0) return; /* the sender ignores what it gets (a StorePOS app gets no echo) */
    if (!is_create(p, n)) return;
    const unsigned char *q = p, *end = p + n;
    if (mode == MODE_SNAPSHOT) {
        /* The connect sequence: (Removes, then) Creates carrying every order. */
        while ((q = memmem(q, (size_t)(end - q), "\"uuid\"", 6))) { snapshot_orders++; q += 6; }
        if (snapshot_orders >= expect && !snapshot_done_ns) snapshot_done_ns = now_ns();
        return;
    }
    char prefix[10];
    snprintf(prefix, sizeof prefix, "%08X", marker);
    while ((q = memmem(q, (size_t)(end - q), "\"uuid\"", 6))) {
        const unsigned char *v = after_colon(q + 6, end);
        q += 6;
        if (!v || v >= end || *v != '"') continue;
        v++;
        if (end - v < 36) break;
        if (strncasecmp((const char *)v, prefix, 8) != 0) continue;
        long i = 0;
        for (int k = 24; k < 36; k++) {
            int h = hexval(v[k]);
            if (h < 0) { i = -1; break; }
            i = i * 16 + h;
        }
        delivered_to(c, i);
    }
}

/* Whether the n bytes at p hold the literal s. */
#define HAS(p, n, s) (memmem((p), (n), (s), sizeof(s) - 1) != NULL)

/* One sync message sealed for a paired terminal's link (chunks of at most 65,518 bytes; a rekey
   every 10,000 messages sent), as a masked binary frame. */
static void secure_send_as(struct conn *c, unsigned char control, const char *p, size_t n) {
    unsigned char sealed[65536 + 32];
    size_t off = 0;
    do {
        size_t chunk = n - off > 65518 ? 65518 : n - off;
        unsigned char header = (unsigned char)(control | (off + chunk < n ? 0x01 : 0));
        size_t m = noise_seal(c->nl, header, (const unsigned char *)p + off, chunk, sealed, 10000);
        send_frame(c, 0x2, (const char *)sealed, m);
        off += chunk;
    } while (off < n);
}

static void secure_send(struct conn *c, const char *p, size_t n) { secure_send_as(c, 0, p, n); }

static void send_ack(struct conn *c) {
    char ack[128];
    int n = snprintf(ack, sizeof ack, "{\"type\":\"ack\",\"seq\":%ld,\"outbox\":0,\"held\":%ld}", c->last_seq, c->last_seq);
    secure_send(c, ack, (size_t)n);
    c->acked_seq = c->last_seq;
    flush_out(c);
}

/* What an OrderSync slave acknowledges: the seq it applied, at most every 200 ms (PROTOCOL 4.5). */
static void ack_round(void) {
    if (!paired_file) return;
    uint64_t now = now_ns();
    if (now - last_ack_ns < 200000000ull) return;
    last_ack_ns = now;
    for (int k = 0; k < nconns; k++) {
        struct conn *c = &conns[k];
        if (c->stage == 3 && !c->closed && c->last_seq > c->acked_seq) send_ack(c);
    }
}

/* The WebSocket is open: the IK handshake's first message. */
static void secure_start(struct conn *c) {
    unsigned char first[96];
    if (noise_ik_start(c->nl, terminal_keys[c->key_index], master_key, "ordersync.ik.v1", first) != 0) {
        error_note("noise: could not start the handshake");
        c->closed = 1;
        return;
    }
    send_frame(c, 0x2, (const char *)first, sizeof first);
    flush_out(c);
    c->stage = 1;
}

/* A whole sync message on a paired terminal's link. */
static void on_sync_message(struct conn *c, const unsigned char *p, size_t n) {
    if (n > 12 && !memcmp(p, "{\"operation\"", 12)) {
        const unsigned char *q = memmem(p, n, "\"seq\":", 6);
        if (q && !HAS(p, n, "\"snapshot\"")) c->last_seq = strtol((const char *)q + 6, NULL, 10);
        on_message(c, p, n);
        return;
    }
    if (HAS(p, n, "\"type\":\"ready\"")) {
        const unsigned char *q = memmem(p, n, "\"seq\":", 6);
        if (q) c->last_seq = strtol((const char *)q + 6, NULL, 10);
        c->stage = 3;
        c->open = 1;
        send_ack(c);
    } else if (HAS(p, n, "\"type\":\"heartbeat\"")) {
        send_ack(c);
    } else if (HAS(p, n, "\"type\":\"error\"")) {
        error_note("the master answered an error: %.*s", (int)(n > 200 ? 200 : n), p);
    }
}

/* A whole WebSocket message: a StorePOS terminal's text, or a paired terminal's Noise message. */
static void on_frame_message(struct conn *c, const unsigned char *p, size_t n) {
    if (!c->nl) { on_message(c, p, n); return; }
    if (c->stage == 1) {
        unsigned char payload[1024];
        long pn = noise_ik_finish(c->nl, p, n, payload, sizeof payload);
        if (pn < 0) { error_note("noise: the master's handshake answer does not decrypt"); c->closed = 1; return; }
        if (HAS(payload, (size_t)pn, "\"refused\"")) {
            error_note("the master refused a paired terminal: %.*s", (int)pn, payload);
            c->closed = 1;
            return;
        }
        /* The link layer's features (SECURITY.md, "Transport messages"): broadcasts may come
           several to a transport message (header bit 0x08). --batches 0 leaves it unsaid. */
        static const char features[] = "{\"type\":\"features\",\"batches\":true}";
        if (batches) secure_send_as(c, 0x04, features, sizeof features - 1);
        char hello[256];
        int hn = snprintf(hello, sizeof hello,
                          "{\"type\":\"hello\",\"proto\":\"ordersync/1\",\"terminal\":\"loadgen-%d\",\"name\":\"loadgen-%d\","
                          "\"store\":\"%s\",\"lastSeq\":0,\"outbox\":0}", c->key_index, c->key_index, store_name);
        secure_send(c, hello, (size_t)hn);
        flush_out(c);
        c->stage = 2;
        return;
    }
    long pn = noise_open(c->nl, (unsigned char *)p, n);
    if (pn < 0) { error_note("noise: a transport message does not decrypt"); c->closed = 1; return; }
    unsigned char header = p[0];
    if (header & 0x04) return; /* a control message (paired, masterKey) */
    if (header & 0x08) { /* several whole sync messages, each after its 4-byte big-endian length */
        size_t at = 1;
        while (at + 4 <= (size_t)pn) {
            size_t len = (size_t)p[at] << 24 | (size_t)p[at + 1] << 16 | (size_t)p[at + 2] << 8 | p[at + 3];
            at += 4;
            if (len > (size_t)pn - at) break;
            on_sync_message(c, p + at, len);
            at += len;
        }
        if (at != (size_t)pn) { error_note("noise: a malformed batch of messages"); c->closed = 1; }
        return;
    }
    if (!(header & 0x01) && c->plain.len == 0) { on_sync_message(c, p + 1, (size_t)pn - 1); return; }
    buf_append(&c->plain, p + 1, (size_t)pn - 1);
    if (!(header & 0x01)) { on_sync_message(c, c->plain.data, c->plain.len); c->plain.len = 0; }
}

static void on_readable(struct conn *c) {
    unsigned char chunk[65536];
    for (;;) {
        union { char buf[CMSG_SPACE(sizeof(struct timespec))]; struct cmsghdr align; } control;
        struct iovec v = {.iov_base = chunk, .iov_len = sizeof chunk};
        struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof control.buf};
        ssize_t n = recvmsg(c->fd, &m, 0);
        if (n == 0) { if (!c->closed) error_note("a terminal's link was closed by the master"); drop(c); return; }
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) break;
            error_note("recv: %s", strerror(errno));
            drop(c);
            return;
        }
        buf_append(&c->in, chunk, (size_t)n);
        last_rx_ns = now_ns();
        c->arrived_ns = last_rx_ns;
        c->stamped = 0;
        for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
            if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_TIMESTAMPNS) continue;
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(h), sizeof ts);
            int64_t at = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - realtime_less_monotonic;
            if (at > 0 && (uint64_t)at <= c->arrived_ns) { c->arrived_ns = (uint64_t)at; c->stamped = 1; }
        }
        if ((size_t)n < sizeof chunk) break;
    }
    if (!c->upgraded) {
        unsigned char *d = c->in.data + c->in.off;
        size_t len = c->in.len - c->in.off;
        unsigned char *end = memmem(d, len, "\r\n\r\n", 4);
        if (!end) return;
        if (len < 12 || memcmp(d, "HTTP/1.1 101", 12) != 0) { error_note("handshake refused"); c->closed = 1; return; }
        buf_consume(&c->in, (size_t)(end + 4 - d));
        c->upgraded = 1;
        if (c->nl) secure_start(c);
        else c->open = 1;
    }
    for (;;) {
        unsigned char *d = c->in.data + c->in.off;
        size_t len = c->in.len - c->in.off;
        if (len < 2) break;
        int fin = d[0] & 0x80, opcode = d[0] & 0x0F;
        uint64_t plen = d[1] & 0x7F;
        size_t h = 2;
        if (plen == 126) { if (len < 4) break; plen = ((uint64_t)d[2] << 8) | d[3]; h = 4; }
        else if (plen == 127) { if (len < 10) break; plen = 0; for (int i = 2; i < 10; i++) plen = (plen << 8) | d[i]; h = 10; }
        if (d[1] & 0x80) { error_note("a masked frame from the master"); c->closed = 1; return; }
        if (len < h + plen) break;
        unsigned char *payload = d + h;
        if (opcode == 0x9) { send_frame(c, 0xA, (const char *)payload, (size_t)plen); flush_out(c); }
        else if (opcode == 0x8) { c->closed = 1; error_note("the master closed a terminal's link"); }
        else if (opcode == 0x1 || opcode == 0x2 || opcode == 0x0) {
            if (opcode != 0) c->msg_opcode = opcode;
            if (fin && opcode != 0 && c->msg.len == 0) on_frame_message(c, payload, (size_t)plen);
            else {
                buf_append(&c->msg, payload, (size_t)plen);
                if (fin) { on_frame_message(c, c->msg.data, c->msg.len); c->msg.len = 0; }
            }
        }
        buf_consume(&c->in, h + (size_t)plen);
    }
}

static char *order_text;
static size_t order_text_cap;
static char *name_pad;

/* One Create carrying operation i's order, padded to about --order-bytes of JSON: through its
   customerName up to 1,000 bytes (a text field holds at most 4 KiB), beyond that through an
   unknown member, which a master keeps and passes on (16 KiB of JSON per order at most). */
static void send_op(struct conn *s, long i) {
    char uuid[37];
    op_uuid(uuid, i);
    int pad = order_bytes - 150;
    if (pad < 1) pad = 1;
    int name_len = pad > 1000 ? 1000 : pad;
    int extra_len = pad - name_len > 12 ? pad - name_len - 12 : 0;
    if (!name_pad) { name_pad = malloc((size_t)pad + 1); memset(name_pad, 'g', (size_t)pad); }
    size_t need = (size_t)pad + 512;
    if (need > order_text_cap) { order_text = realloc(order_text, need); order_text_cap = need; }
    int n = snprintf(order_text, order_text_cap,
                     "{\"operation\":0,\"orders\":[{\"uuid\":\"%s\",\"customerName\":\"%.*s\",\"created\":\"2016-01-12T21:35:16+0800\","
                     "\"shippingMethod\":\"pickup\",\"tableName\":\"T%ld\",\"tableSize\":%ld%s%.*s%s}]}",
                     uuid, name_len, name_pad, i % 40, 1 + i % 8, extra_len ? ",\"x-pad\":\"" : "", extra_len, name_pad,
                     extra_len ? "\"" : "");
    if (s->nl) {
        /* An OrderSync slave names each operation (opId) and gets its broadcast and `result` back. */
        n--;
        n += snprintf(order_text + n, order_text_cap - (size_t)n, ",\"opId\":\"%08X-%ld\"}", marker, i);
    }
    sent_at[i] = now_ns();
    remaining[i] = receivers;
    if (s->nl) secure_send(s, order_text, (size_t)n);
    else send_frame(s, 0x1, order_text, (size_t)n);
    sent++;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct_of(const double *sorted, double p) {
    if (latencies == 0) return 0;
    long k = (long)ceil(p * (double)latencies) - 1;
    if (k < 0) k = 0;
    if (k >= latencies) k = latencies - 1;
    return sorted[k];
}

static double pct(double p) { return pct_of(latency_ms, p); }

/* The offset of CLOCK_REALTIME (the kernel's receive stamps) from CLOCK_MONOTONIC, read once. */
static int64_t clock_offset(void) {
    struct timespec r, m;
    clock_gettime(CLOCK_REALTIME, &r);
    clock_gettime(CLOCK_MONOTONIC, &m);
    return ((int64_t)r.tv_sec - (int64_t)m.tv_sec) * 1000000000 + (r.tv_nsec - m.tv_nsec);
}

static double cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static int hex32(const char *text, unsigned char out[32]) {
    for (int i = 0; i < 32; i++) {
        int a = hexval(text[2 * i]), b = a < 0 ? -1 : hexval(text[2 * i + 1]);
        if (b < 0) return -1;
        out[i] = (unsigned char)(a * 16 + b);
    }
    return 0;
}

static void load_keys(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) { perror(path); exit(2); }
    char line[256];
    int k = -1, cap = 0;
    while (fgets(line, sizeof line, f)) {
        if (strlen(line) < 64) continue;
        if (k < 0) { if (hex32(line, master_key) != 0) { fprintf(stderr, "loadgen: %s: not a key\n", path); exit(2); } k = 0; continue; }
        if (k == cap) { cap = cap ? cap * 2 : 64; terminal_keys = realloc(terminal_keys, (size_t)cap * 32); }
        if (hex32(line, terminal_keys[k]) != 0) { fprintf(stderr, "loadgen: %s: not a key\n", path); exit(2); }
        k++;
    }
    fclose(f);
    terminal_key_count = k < 0 ? 0 : k;
}

static void usage(void) {
    fprintf(stderr, "usage: loadgen --port P [--host H] [--mode max|rate|hold|snapshot] [--receivers N] [--ops N] [--window N]\n"
                    "               [--rate OPS/S] [--duration S] [--warmup S] [--expect N] [--order-bytes N] [--marker HEX]\n"
                    "               [--paired KEYFILE --store NAME [--batches 0|1]]\n");
    exit(2);
}

/* One epoll_wait of at most timeout_ms, handling what it reports. */
static void poll_once(int timeout_ms) {
    struct epoll_event evs[256];
    int n = epoll_wait(epfd, evs, 256, timeout_ms);
    for (int k = 0; k < n; k++) {
        struct conn *c = evs[k].data.ptr;
        if (evs[k].events & EPOLLOUT) flush_out(c);
        if (evs[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_readable(c);
    }
    ack_round();
}

/* SIGUSR1 in rate mode: nothing more is sent, and the run ends once what was sent is delivered
   (a driver measuring the terminals while something else happens stops them when it is over). */
static volatile sig_atomic_t stop_sending = 0;
static void on_stop_signal(int sig) {
    (void)sig;
    stop_sending = 1;
}

/* --settle-ms: read until the terminals have had nothing for that long (what a master sends a
   terminal that connects: every order of a large store), at most 600 s. */
static void settle(void) {
    if (settle_ms <= 0) return;
    uint64_t quiet = (uint64_t)(settle_ms * 1e6), settle_deadline = now_ns() + 600ull * 1000000000ull;
    while (now_ns() - last_rx_ns < quiet && now_ns() < settle_deadline) {
        poll_once(10);
    }
}

int main(int argc, char **argv) {
    signal(SIGUSR1, on_stop_signal);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name) (strcmp(a, name) == 0 && v && ++i)
        if (OPT("--host")) host = v;
        else if (OPT("--port")) port = atoi(v);
        else if (OPT("--mode")) {
            if (!strcmp(v, "max")) mode = MODE_MAX;
            else if (!strcmp(v, "rate")) mode = MODE_RATE;
            else if (!strcmp(v, "hold")) mode = MODE_HOLD;
            else if (!strcmp(v, "snapshot")) mode = MODE_SNAPSHOT;
            else usage();
        } else if (OPT("--receivers")) receivers = atoi(v);
        else if (OPT("--ops")) ops = atol(v);
        else if (OPT("--window")) window_size = atol(v);
        else if (OPT("--rate")) rate = atof(v);
        else if (OPT("--duration")) duration = atof(v);
        else if (OPT("--warmup")) warmup = atof(v);
        else if (OPT("--expect")) expect = atol(v);
        else if (OPT("--order-bytes")) order_bytes = atoi(v);
        else if (OPT("--marker")) marker = (unsigned)strtoul(v, NULL, 16);
        else if (OPT("--settle-ms")) settle_ms = atof(v);
        else if (OPT("--paired")) paired_file = v;
        else if (OPT("--store")) store_name = v;
        else if (OPT("--batches")) batches = atoi(v);
        else if (!strcmp(a, "--json")) json_only = 1;
        else usage();
#undef OPT
    }
    if (!port) usage();
    if (paired_file) load_keys(paired_file);
    if (!marker) marker = (unsigned)(now_ns() ^ (uint64_t)getpid()) & 0x7FFFFFFF;
    rng_state ^= marker;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) { rl.rlim_cur = rl.rlim_max; setrlimit(RLIMIT_NOFILE, &rl); }
    if (mode == MODE_RATE) {
        ops = (long)ceil(rate * (duration + warmup));
        measured_from = (long)ceil(rate * warmup);
    }
    if (mode == MODE_SNAPSHOT) receivers = 1;
    int nrecv = receivers;
    int with_sender = mode == MODE_MAX || mode == MODE_RATE;
    conns = calloc((size_t)nrecv + 1, sizeof *conns);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (with_sender) {
        sent_at = calloc((size_t)ops, sizeof *sent_at);
        remaining = calloc((size_t)ops, sizeof *remaining);
        latency_ms = calloc((size_t)ops, sizeof *latency_ms);
        seen = calloc(((size_t)nrecv * (size_t)ops + 7) / 8 + 1, 1);
        first_arrival = calloc((size_t)ops, sizeof *first_arrival);
        last_arrival = calloc((size_t)ops, sizeof *last_arrival);
        arrival_ms = calloc((size_t)ops, sizeof *arrival_ms);
        first_ms = calloc((size_t)ops, sizeof *first_ms);
        if (!sent_at || !remaining || !latency_ms || !seen || !first_arrival || !last_arrival || !arrival_ms || !first_ms) { fprintf(stderr, "loadgen: out of memory\n"); return 2; }
    }
    double cpu0 = cpu_seconds();
    realtime_less_monotonic = clock_offset();
    uint64_t t0 = now_ns();
    /* Connect the receivers first (a few hundred at a time), then the sender. */
    for (int r = 0; r < nrecv; r++) {
        open_conn(r);
        if (r % 200 == 199) {
            poll_once(10);
        }
    }
    /* With --settle-ms the receivers take what the master sends them on connecting before the
       sender connects: a master reading a large store for them must not hold up the sender's
       handshake past its deadline. */
    if (settle_ms > 0) {
        /* Until every receiver has its first message (the master has read the store for it). */
        uint64_t first_deadline = now_ns() + 600ull * 1000000000ull;
        for (;;) {
            int waiting = 0;
            for (int k = 0; k < nconns; k++) waiting += !conns[k].closed && conns[k].messages == 0;
            if (!waiting || now_ns() > first_deadline) break;
            poll_once(50);
        }
        settle();
    }
    struct conn *sender = with_sender ? open_conn(-1) : NULL;
    /* Wait until every terminal is open. */
    uint64_t deadline = now_ns() + 30ull * 1000000000ull;
    for (;;) {
        int open = 0;
        for (int k = 0; k < nconns; k++) open += conns[k].open && !conns[k].closed;
        if (open == nconns || now_ns() > deadline) break;
        poll_once(50);
        if (mode == MODE_SNAPSHOT && snapshot_done_ns) break;
    }
    settle();
    int connected = 0;
    for (int k = 0; k < nconns; k++) connected += conns[k].open && !conns[k].closed;
    /* The driver reads this line to take the server's CPU from here on. */
    fprintf(stderr, "measuring\n");
    fflush(stderr);
    uint64_t start = now_ns();
    uint64_t last_progress = start;
    long late_sends = 0;
    uint64_t end_at = start + (uint64_t)((mode == MODE_RATE ? duration + warmup : duration) * 1e9);
    if (mode == MODE_MAX && ops <= 0) ops = 1;
    /* Rate mode sends on a schedule: op k at start + k / rate. */
    for (;;) {
        uint64_t now = now_ns();
        if (mode == MODE_MAX) {
            int wrote = 0;
            while (sent < ops && sent - delivered_ops < window_size && sender && !sender->closed) { send_op(sender, sent); wrote = 1; }
            if (wrote) flush_out(sender);
            if (delivered_ops == ops) break;
        } else if (mode == MODE_RATE) {
            int wrote = 0;
            if (stop_sending && ops > sent) ops = sent;
            while (sent < ops && sender && !sender->closed) {
                uint64_t due = start + (uint64_t)((double)sent * 1e9 / rate);
                if (due > now) break;
                if (now - due > 1000000ull) late_sends++;
                send_op(sender, sent);
                wrote = 1;
            }
            if (wrote) flush_out(sender);
            if (sent == ops && delivered_ops == ops) break;
        } else if (mode == MODE_HOLD) {
            if (now >= end_at) break;
        } else if (mode == MODE_SNAPSHOT) {
            if (snapshot_done_ns) break;
        }
        if (delivered_ops > 0) last_progress = now;
        /* Give up when nothing moves for 30 s (a stuck master). */
        /* In snapshot mode any message moves (a StorePOS app's connect sequence starts with a
           Remove per order: a million of them bring no Create for many seconds). */
        static long last_delivered = -1, last_messages = -1;
        long messages = 0;
        if (mode == MODE_SNAPSHOT) for (int k = 0; k < nconns; k++) messages += conns[k].messages;
        if (delivered != last_delivered || messages != last_messages) {
            last_delivered = delivered;
            last_messages = messages;
            last_progress = now;
        }
        if (now - last_progress > 30ull * 1000000000ull) { error_note("no progress for 30 s"); break; }
        /* Rate mode wakes for the next send to the nanosecond (epoll_pwait2), not the millisecond. */
        uint64_t wait_ns = 50000000ull;
        if (mode == MODE_RATE && sent < ops) {
            uint64_t due = start + (uint64_t)((double)sent * 1e9 / rate);
            wait_ns = due > now ? due - now : 0;
        }
        struct timespec timeout = {.tv_sec = (time_t)(wait_ns / 1000000000ull), .tv_nsec = (long)(wait_ns % 1000000000ull)};
        struct epoll_event evs[512];
        int n = epoll_pwait2(epfd, evs, 512, &timeout, NULL);
        for (int k = 0; k < n; k++) {
            struct conn *c = evs[k].data.ptr;
            if (evs[k].events & EPOLLOUT) flush_out(c);
            if (evs[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_readable(c);
        }
        ack_round();
    }
    uint64_t stop = now_ns();
    double cpu = cpu_seconds() - cpu0;
    int still_open = 0;
    long received = 0;
    for (int k = 0; k < nconns; k++) still_open += conns[k].open && !conns[k].closed;
    for (int k = 0; k < nconns; k++) received += conns[k].messages;
    qsort(latency_ms, (size_t)latencies, sizeof *latency_ms, cmp_double);
    if (arrival_ms) qsort(arrival_ms, (size_t)latencies, sizeof *arrival_ms, cmp_double);
    if (first_ms) qsort(first_ms, (size_t)latencies, sizeof *first_ms, cmp_double);
    double a50 = arrival_ms ? pct_of(arrival_ms, 0.50) : 0, a99 = arrival_ms ? pct_of(arrival_ms, 0.99) : 0;
    double a999 = arrival_ms ? pct_of(arrival_ms, 0.999) : 0;
    double f50 = first_ms ? pct_of(first_ms, 0.50) : 0, f99 = first_ms ? pct_of(first_ms, 0.99) : 0;
    double f999 = first_ms ? pct_of(first_ms, 0.999) : 0;
    double wall = (double)(stop - start) / 1e9;
    long measured_ops = mode == MODE_RATE ? delivered_ops - measured_from : delivered_ops;
    double measured_wall = mode == MODE_RATE ? (double)(stop - start) / 1e9 - warmup : wall;
    int complete = with_sender ? (delivered_ops == ops && duplicates == 0) : (mode == MODE_HOLD ? still_open == nrecv : snapshot_done_ns != 0);
    int kept_up = mode == MODE_RATE ? (late_sends * 100 < ops) && complete : complete;
    const char *names[] = {"max", "rate", "hold", "snapshot"};
    printf("{\"mode\":\"%s\",\"receivers\":%d,\"sent\":%ld,\"delivered\":%ld,\"delivered_ops\":%ld,\"duplicates\":%ld,"
           "\"complete\":%s,\"wall_s\":%.6f,\"ops_per_s\":%.1f,\"deliveries_per_s\":%.1f,"
           "\"latency_ms\":{\"p50\":%.4f,\"p99\":%.4f,\"p999\":%.4f,\"max\":%.4f,\"count\":%ld},"
           "\"arrival_ms\":{\"p50\":%.4f,\"p99\":%.4f,\"p999\":%.4f},\"first_arrival_ms\":{\"p50\":%.4f,\"p99\":%.4f,\"p999\":%.4f},\"stamped_deliveries\":%ld,"
           "\"kept_up\":%s,\"late_sends\":%ld,\"connected\":%d,\"still_open\":%d,\"snapshot_orders\":%ld,\"snapshot_s\":%.6f,"
           "\"connect_s\":%.6f,\"generator_cpu_s\":%.6f,\"messages\":%ld,\"errors\":%ld,\"first_error\":\"%s\"}\n",
           names[mode], nrecv, sent, delivered, delivered_ops, duplicates, complete ? "true" : "false", wall,
           measured_wall > 0 ? (double)measured_ops / measured_wall : 0, wall > 0 ? (double)delivered / wall : 0,
           pct(0.50), pct(0.99), pct(0.999), latencies ? latency_ms[latencies - 1] : 0, latencies, a50, a99, a999, f50, f99, f999, stamped_deliveries,
           kept_up ? "true" : "false", late_sends, connected, still_open, snapshot_orders,
           snapshot_done_ns ? (double)(snapshot_done_ns - t0) / 1e9 : 0, (double)(start - t0) / 1e9, cpu, received, errors_count, first_error);
    (void)json_only;
    return complete ? 0 : 1;
}
