/* The kernel's own cost of a fan-out over loopback TCP: one thread (pinned to core 0) writes a
 * message of BYTES to each of N connected sockets, RATE times a second; another thread (core 1)
 * reads them all with epoll, and the time from the first write to the last read is recorded.
 *
 *   fanout_floor N [RATE] [SECONDS] [BYTES]
 *
 * Prints p50 / p99 / p99.9 of that time in microseconds. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int n, bytes = 300;
static int *senders, *receivers;
static _Atomic uint64_t sent_at;
static _Atomic long rounds_done;
static double *samples;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void pin(int core) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static long total_rounds;

static void *reader(void *arg) {
    (void)arg;
    pin(1);
    int ep = epoll_create1(0);
    for (int i = 0; i < n; i++) {
        struct epoll_event e = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, receivers[i], &e);
    }
    long *got = calloc((size_t)n, sizeof *got);
    char *buf = malloc(65536);
    struct epoll_event *events = malloc(sizeof *events * (size_t)n);
    long round = 0;
    int done_in_round = 0;
    while (round < total_rounds) {
        int k = epoll_wait(ep, events, n, 1000);
        for (int j = 0; j < k; j++) {
            int i = (int)events[j].data.u32;
            ssize_t r = read(receivers[i], buf, 65536);
            if (r <= 0) continue;
            got[i] += r;
            while (got[i] >= bytes) {
                got[i] -= bytes;
                if (++done_in_round == n) {
                    samples[round] = (double)(now_ns() - atomic_load(&sent_at)) / 1000.0;
                    done_in_round = 0;
                    round++;
                    atomic_store(&rounds_done, round);
                }
            }
        }
    }
    return NULL;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s N [RATE] [SECONDS] [BYTES]\n", argv[0]);
        return 2;
    }
    n = atoi(argv[1]);
    int rate = argc > 2 ? atoi(argv[2]) : 1000;
    double seconds = argc > 3 ? atof(argv[3]) : 5;
    if (argc > 4) bytes = atoi(argv[4]);
    total_rounds = (long)(rate * seconds);
    samples = calloc((size_t)total_rounds, sizeof *samples);
    senders = calloc((size_t)n, sizeof *senders);
    receivers = calloc((size_t)n, sizeof *receivers);
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t length = sizeof address;
    bind(listener, (struct sockaddr *)&address, sizeof address);
    listen(listener, n);
    getsockname(listener, (struct sockaddr *)&address, &length);
    int one = 1;
    for (int i = 0; i < n; i++) {
        receivers[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(receivers[i], (struct sockaddr *)&address, sizeof address) != 0) {
            perror("connect");
            return 1;
        }
        senders[i] = accept(listener, NULL, NULL);
        setsockopt(senders[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    pthread_t thread;
    pthread_create(&thread, NULL, reader, NULL);
    pin(0);
    char *message = malloc((size_t)bytes);
    memset(message, 'x', (size_t)bytes);
    uint64_t period = 1000000000ull / (uint64_t)rate, next = now_ns() + period;
    for (long round = 0; round < total_rounds; round++) {
        while (now_ns() < next) {
            struct timespec t = {0, (long)(next - now_ns())};
            nanosleep(&t, NULL);
        }
        next += period;
        while (atomic_load(&rounds_done) < round) sched_yield();
        atomic_store(&sent_at, now_ns());
        for (int i = 0; i < n; i++) {
            if (write(senders[i], message, (size_t)bytes) != bytes) {
                perror("write");
                return 1;
            }
        }
    }
    pthread_join(thread, NULL);
    qsort(samples, (size_t)total_rounds, sizeof *samples, cmp);
    printf("fanout_floor: %d sockets, %d B, %d/s, %ld rounds: first write to last read p50 %.0f us, p99 %.0f us, p99.9 %.0f us\n",
           n, bytes, rate, total_rounds, samples[total_rounds / 2], samples[(long)(total_rounds * 0.99)],
           samples[(long)(total_rounds * 0.999)]);
    return 0;
}
