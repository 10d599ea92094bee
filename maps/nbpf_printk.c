/*
 * nbpf_printk.c: bpf_trace_printk (bpf_printk). Formats up to three scalar
 * arguments into a bounded buffer, applies a process-wide rate limit and
 * hands the line to a settable log sink (NCCL's logger in the plugin,
 * stderr by default).
 *
 * Conversions: %d %i %u %x %X %c and %% with optional flags '-' and '0', a
 * width up to 64, and length modifiers l, ll (64-bit; without them the value
 * is truncated to 32 bits like C's int). Pointers and strings (%p, %s) are
 * refused: programs may only print scalars.
 *
 * Rate limit: a generic cell rate algorithm on one atomic word (lock-free):
 * a line is allowed when the "theoretical arrival time" is at most
 * (burst - 1) intervals ahead of now. Dropped lines are counted and reported
 * in one line before the next allowed one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "nbpf_internal.h"

#define LINE_MAX_BYTES 512u

/* ---- formatting ---- */

struct out {
  char *buf;
  uint32_t cap, len; /* len counts every byte, also those that did not fit */
};

static void put(struct out *o, char c) {
  if (o->len + 1 < o->cap) o->buf[o->len] = c;
  o->len++;
}

/* Writes the digits of v (base 10 or 16) with sign, width and padding. */
static void put_number(struct out *o, uint64_t v, int neg, unsigned base, int upper,
                       unsigned width, int left, int zero) {
  char tmp[24];
  unsigned n = 0;
  const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  do {
    tmp[n++] = digits[v % base];
    v /= base;
  } while (v != 0);
  unsigned body = n + (neg ? 1u : 0u);
  unsigned pad = width > body ? width - body : 0;
  if (!left && !zero)
    while (pad) put(o, ' '), pad--;
  if (neg) put(o, '-');
  if (!left && zero)
    while (pad) put(o, '0'), pad--;
  while (n) put(o, tmp[--n]);
  while (pad) put(o, ' '), pad--;
}

int nbpf_printk_format(char *buf, uint32_t cap, const char *fmt, uint32_t fmt_size,
                       const uint64_t args[3]) {
  struct out o = {buf, cap, 0};
  if (fmt == NULL || fmt_size == 0 || fmt[fmt_size - 1] != '\0') return -EINVAL;
  unsigned used = 0;
  for (const char *p = fmt; *p; p++) {
    if (*p != '%') {
      put(&o, *p);
      continue;
    }
    p++;
    if (*p == '%') {
      put(&o, '%');
      continue;
    }
    int left = 0, zero = 0, longs = 0;
    unsigned width = 0;
    for (;; p++) {
      if (*p == '-') left = 1;
      else if (*p == '0') zero = 1;
      else break;
    }
    while (*p >= '0' && *p <= '9') {
      width = width * 10u + (unsigned)(*p++ - '0');
      if (width > 64) return -EINVAL;
    }
    while (*p == 'l' && longs < 2) longs++, p++;
    if (used == 3) return -EINVAL;
    uint64_t a = args[used];
    switch (*p) {
    case 'd':
    case 'i': {
      int64_t s = longs ? (int64_t)a : (int64_t)(int32_t)a;
      uint64_t mag = s < 0 ? 0 - (uint64_t)s : (uint64_t)s;
      put_number(&o, mag, s < 0, 10, 0, width, left, zero);
      break;
    }
    case 'u': put_number(&o, longs ? a : (uint32_t)a, 0, 10, 0, width, left, zero); break;
    case 'x':
    case 'X': put_number(&o, longs ? a : (uint32_t)a, 0, 16, *p == 'X', width, left, zero); break;
    case 'c':
      if (longs) return -EINVAL;
      put(&o, (char)a);
      break;
    default: return -EINVAL; /* %s, %p, unknown, or '%' at the end */
    }
    used++;
  }
  if (cap > 0) o.buf[o.len < cap ? o.len : cap - 1] = '\0';
  return (int)o.len;
}

/* ---- sinks ---- */

static void stderr_sink(void *ctx, const char *line, uint32_t len) {
  (void)ctx;
  char buf[LINE_MAX_BYTES + 32];
  int n = snprintf(buf, sizeof buf, "ncclbpf: bpf_printk: %.*s\n", (int)len, line);
  if (n > 0) {
    ssize_t w = write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
    (void)w;
  }
}

struct sink {
  nbpf_log_fn fn;
  void *ctx;
};
static struct sink sink_default = {stderr_sink, NULL};
static struct sink *sink_cur = &sink_default; /* atomic */

void nbpf_set_log_sink(nbpf_log_fn fn, void *ctx) {
  struct sink *s = &sink_default, *cur = LOAD_ACQ(&sink_cur);
  if (fn != NULL && cur->fn == fn && cur->ctx == ctx) return; /* unchanged: no new copy */
  if (fn != NULL) {
    /* Sinks change rarely; the old one is kept because a concurrent
     * printk may still be reading it. */
    s = malloc(sizeof *s);
    if (s == NULL) return;
    s->fn = fn;
    s->ctx = ctx;
  }
  STORE_REL(&sink_cur, s);
}

/* ---- rate limit ---- */

static uint64_t rl_interval = 1000000000ull / 20; /* atomic; 0: unlimited */
static uint64_t rl_tau = 1000000000ull / 20 * 39; /* atomic; (burst-1) intervals */
static uint64_t rl_tat;                           /* atomic */
static uint64_t dropped_total, dropped_unreported; /* atomic */

void nbpf_printk_set_rate(uint32_t per_sec, uint32_t burst) {
  uint64_t iv = per_sec ? 1000000000ull / per_sec : 0;
  STORE_RLX(&rl_tau, iv * (burst ? burst - 1u : 0u));
  STORE_RLX(&rl_interval, iv);
  STORE_RLX(&rl_tat, 0);
}

uint64_t nbpf_printk_dropped(void) { return LOAD_RLX(&dropped_total); }

static int rate_allow(void) {
  uint64_t iv = LOAD_RLX(&rl_interval), tau = LOAD_RLX(&rl_tau);
  if (iv == 0) return 1;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  uint64_t tat = LOAD_RLX(&rl_tat);
  for (;;) {
    uint64_t t = tat > now ? tat : now;
    if (t - now > tau) return 0;
    if (__atomic_compare_exchange_n(&rl_tat, &tat, t + iv, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return 1;
  }
}

uint64_t nbpf_h_trace_printk(uint64_t fmt, uint64_t fmt_size, uint64_t a1, uint64_t a2, uint64_t a3) {
  char line[LINE_MAX_BYTES];
  uint64_t args[3] = {a1, a2, a3};
  if (fmt_size > UINT32_MAX) return (uint64_t)-EINVAL;
  int n = nbpf_printk_format(line, sizeof line, (const char *)(uintptr_t)fmt, (uint32_t)fmt_size, args);
  if (n < 0) return (uint64_t)(int64_t)n;
  uint32_t len = (uint32_t)n < sizeof line ? (uint32_t)n : sizeof line - 1;
  if (len > 0 && line[len - 1] == '\n') line[--len] = '\0'; /* the sink ends lines */
  if (!rate_allow()) {
    __atomic_add_fetch(&dropped_total, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&dropped_unreported, 1, __ATOMIC_RELAXED);
    return (uint64_t)n;
  }
  struct sink *s = LOAD_ACQ(&sink_cur);
  uint64_t d = __atomic_exchange_n(&dropped_unreported, 0, __ATOMIC_RELAXED);
  if (d != 0) {
    char note[96];
    int k = snprintf(note, sizeof note, "%llu bpf_printk lines dropped by the rate limit",
                     (unsigned long long)d);
    s->fn(s->ctx, note, (uint32_t)k);
  }
  s->fn(s->ctx, line, len);
  return (uint64_t)n;
}

/* ---- capture sink: lines kept in memory for the control plane ---- */

static char cap_buf[1u << 16];
static uint32_t cap_len, cap_lock;

void nbpf_capture_sink(void *ctx, const char *line, uint32_t len) {
  (void)ctx;
  nbpf_spin_lock(&cap_lock);
  if (cap_len + len + 1 <= sizeof cap_buf) { /* full: the line is lost */
    memcpy(cap_buf + cap_len, line, len);
    cap_buf[cap_len + len] = '\n';
    cap_len += len + 1;
  }
  nbpf_spin_unlock(&cap_lock);
}

uint32_t nbpf_capture_drain(char *out, uint32_t cap) {
  nbpf_spin_lock(&cap_lock);
  uint32_t n = cap_len < cap ? cap_len : cap;
  memcpy(out, cap_buf, n);
  memmove(cap_buf, cap_buf + n, cap_len - n);
  cap_len -= n;
  nbpf_spin_unlock(&cap_lock);
  return n;
}
