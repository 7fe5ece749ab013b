/* Cache-line ping-pong between two CPUs: prints the median round trip in ns over a few batches.
 * Usage: pingpong [CPU_A CPU_B [ROUND_TRIPS]]   (default 0 1 200000)
 * Tells which state the 2-vCPU VM is in ("near" ~165 ns, "far" ~680 ns; see shared/docs/measuring.md).
 * Built by peers/bench-dpdk-vhost.sh with gcc -O2 -pthread into the peers cache. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static _Alignas(64) atomic_long ball;
static long rounds;
static int cpu_b;

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static void *pong(void *arg) {
    (void)arg;
    pin(cpu_b);
    for (long i = 0; i < rounds; i++) {
        while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i + 1) { }
        atomic_store_explicit(&ball, 2 * i + 2, memory_order_release);
    }
    return NULL;
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int cpu_a = argc > 1 ? atoi(argv[1]) : 0;
    cpu_b = argc > 2 ? atoi(argv[2]) : 1;
    long total = argc > 3 ? atol(argv[3]) : 200000;
    enum { BATCHES = 5 };
    double ns[BATCHES];
    rounds = total / BATCHES;
    pin(cpu_a);
    for (int b = 0; b < BATCHES; b++) {
        pthread_t t;
        atomic_store(&ball, 0);
        pthread_create(&t, NULL, pong, NULL);
        double t0 = now_ns();
        for (long i = 0; i < rounds; i++) {
            atomic_store_explicit(&ball, 2 * i + 1, memory_order_release);
            while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i + 2) { }
        }
        ns[b] = (now_ns() - t0) / rounds;
        pthread_join(t, NULL);
    }
    qsort(ns, BATCHES, sizeof ns[0], cmp);
    printf("%.0f\n", ns[BATCHES / 2]);
    return 0;
}
