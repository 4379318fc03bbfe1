/* cron.c: cron expressions and their fire times; see cron.h and the
 * docs/scheduling.md's "Cron expressions".
 *
 * Two layers. The wall-clock search (cron_next_wall) finds the first local
 * time at or after a given one that matches, jumping field by field with
 * bit scans: a month not in the set is skipped whole, a day comes from the
 * month's precomputed day mask, then the hour, minute and second. The zone
 * walk (pawl__cron_next) turns that into real instants, span of constant
 * offset by span, applying the daylight-saving rules at the transitions
 * between spans. */
#include "cron.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h> /* strncasecmp */

#include "pawl.h"

enum { F_SEC, F_MIN, F_HOUR, F_DOM, F_MON, F_DOW };

static const struct cron_field_def {
  const char *name;
  int lo, hi;   /* the values a field takes */
  int step_max; /* the largest step that can reach a second value */
} cron_fields[6] = {
    {"second", 0, 59, 59},      {"minute", 0, 59, 59},
    {"hour", 0, 23, 23},        {"day-of-month", 1, 31, 30},
    {"month", 1, 12, 11},       {"day-of-week", 0, 7, 6},
};

static const char *const cron_month_names[12] = {
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN",
    "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
static const char *const cron_dow_names[7] = {"SUN", "MON", "TUE", "WED",
                                              "THU", "FRI", "SAT"};

/* The day fields before they are folded into pawl__cron_t.days. */
typedef struct cron_days {
  uint32_t dom;      /* bit d: day d */
  uint32_t dom_w;    /* bit d: dW, the weekday nearest to day d */
  uint32_t dom_l;    /* bit n: L-n, n days before the last (L is L-0) */
  int dom_lw;        /* LW: the month's last weekday */
  int dom_star;      /* written as * or ?: unrestricted */
  uint32_t dow;      /* bit w: weekday w (0 = Sunday) */
  uint32_t dow_last; /* bit w: wL, the month's last weekday w */
  uint32_t dow_nth[7]; /* bit k: w#k, the k-th weekday w (1-5) */
  int dow_star;
} cron_days_t;

/* The parser's state: the message buffer and the current field's text. */
typedef struct cron_p {
  char *err;
  size_t errlen;
  int f;          /* the field being parsed */
  const char *tok; /* its text (not NUL-terminated) */
  size_t toklen;
} cron_p_t;

static int cron_fail(cron_p_t *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int cron_fail(cron_p_t *p, const char *fmt, ...) {
  if (p->err && p->errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, p->errlen, fmt, ap);
    va_end(ap);
  }
  return PAWL_EINVAL;
}

/* s[0..n) made safe for a one-line message: printable ASCII as is, other
 * bytes as \xNN, cut after 40 bytes with "...". */
static const char *cron_show(const char *s, size_t n, char out[200]) {
  size_t o = 0;
  for (size_t i = 0; i < n && i < 40; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c < 0x7f) out[o++] = (char)c;
    else o += (size_t)snprintf(out + o, 5, "\\x%02x", c);
  }
  if (n > 40) {
    memcpy(out + o, "...", 3);
    o += 3;
  }
  out[o] = '\0';
  return out;
}

static int cron_is_alpha(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
static int cron_is_digit(char c) { return c >= '0' && c <= '9'; }
static int cron_upper(char c) { return c >= 'a' && c <= 'z' ? c - 32 : c; }

/* A number at *s (at most `end`), within lo..hi; `what` names it in the
 * message when it is not ("day-of-month: 32 is out of range 1-31"). */
static int cron_number(cron_p_t *p, const char **s, const char *end, int lo,
                       int hi, const char *what, int *out) {
  const char *b = *s;
  long v = 0;
  while (*s < end && cron_is_digit(**s)) {
    if (v < 100000) v = v * 10 + (**s - '0');
    (*s)++;
  }
  char show[200];
  if (*s == b) {
    const char *e = b;
    while (e < end && *e != ',' && *e != '-' && *e != '/') e++;
    return cron_fail(p, "%s: expected a number, got \"%s\"",
                     cron_fields[p->f].name,
                     cron_show(b, (size_t)(e > b ? e - b : end - b), show));
  }
  if (v < lo || v > hi) {
    cron_show(b, (size_t)(*s - b), show);
    if (what)
      return cron_fail(p, "%s: %s in %s is out of range %d-%d",
                       cron_fields[p->f].name, show, what, lo, hi);
    return cron_fail(p, "%s: %s is out of range %d-%d", cron_fields[p->f].name,
                     show, lo, hi);
  }
  *out = (int)v;
  return 0;
}

/* A value: a number, or in the month and day-of-week fields a name.
 * *named is set when it was a name (SUN ends a range as 7). */
static int cron_value(cron_p_t *p, const char **s, const char *end, int *out,
                      int *named) {
  const struct cron_field_def *fd = &cron_fields[p->f];
  *named = 0;
  if (*s < end && cron_is_alpha(**s)) {
    const char *b = *s;
    while (*s < end && cron_is_alpha(**s)) (*s)++;
    size_t n = (size_t)(*s - b);
    char show[200];
    if (p->f == F_MON || p->f == F_DOW) {
      const char *const *names = p->f == F_MON ? cron_month_names : cron_dow_names;
      int count = p->f == F_MON ? 12 : 7;
      /* dL: a weekday name directly followed by L ("FRIL"). */
      if (p->f == F_DOW && n == 4 && cron_upper(b[3]) == 'L') {
        n = 3;
        (*s)--;
      }
      for (int i = 0; n == 3 && i < count; i++)
        if (cron_upper(b[0]) == names[i][0] && cron_upper(b[1]) == names[i][1] &&
            cron_upper(b[2]) == names[i][2]) {
          *out = p->f == F_MON ? i + 1 : i;
          *named = 1;
          return 0;
        }
      return cron_fail(p, "%s: unknown %s name %s (expected %s)", fd->name,
                       p->f == F_MON ? "month" : "weekday",
                       cron_show(b, n, show),
                       p->f == F_MON ? "JAN-DEC" : "SUN-SAT");
    }
    return cron_fail(p, "%s: expected a number, got \"%s\"", fd->name,
                     cron_show(b, n, show));
  }
  return cron_number(p, s, end, fd->lo, fd->hi, NULL, out);
}

/* Sets lo..hi step st into a field's bitset (day-of-week 7 is 0). */
static void cron_set(int f, int lo, int hi, int st, uint64_t *bits) {
  for (int v = lo; v <= hi; v += st) *bits |= (uint64_t)1 << (f == F_DOW ? v % 7 : v);
}

/* One list item of the day-of-month field that uses L or W. */
static int cron_dom_special(cron_p_t *p, const char *s, const char *end,
                            cron_days_t *k) {
  char show[200];
  const char *b = s;
  if (cron_upper(*s) == 'L') {
    s++;
    if (s == end) {
      k->dom_l |= 1;
      return 0;
    }
    if (s + 1 == end && cron_upper(*s) == 'W') {
      k->dom_lw = 1;
      return 0;
    }
    if (*s == '-') {
      int n;
      s++;
      if (cron_number(p, &s, end, 0, 30, "L-n", &n)) return PAWL_EINVAL;
      if (s == end) {
        k->dom_l |= 1u << n;
        return 0;
      }
    }
    return cron_fail(p, "day-of-month: bad L form \"%s\" (expected L, L-3 or LW)",
                     cron_show(b, (size_t)(end - b), show));
  }
  /* dW */
  int d;
  if (cron_number(p, &s, end, 1, 31, NULL, &d)) return PAWL_EINVAL;
  if (s + 1 != end || cron_upper(*s) != 'W')
    return cron_fail(p, "day-of-month: W takes a single day, like 15W, got \"%s\"",
                     cron_show(b, (size_t)(end - b), show));
  k->dom_w |= 1u << d;
  return 0;
}

/* One list item of any field: a star or ? (alone), v, v-v, a star with a
 * step, v-v/s, v/s, and the day fields' L, W and # forms. */
static int cron_item(cron_p_t *p, const char *s, const char *end, int in_list,
                     uint64_t *bits, cron_days_t *k) {
  const struct cron_field_def *fd = &cron_fields[p->f];
  char show[200];
  const char *b = s;
  int lo, hi, st = 1, named;
  if (s == end)
    return cron_fail(p, "%s: empty item in the list \"%s\"", fd->name,
                     cron_show(p->tok, p->toklen, show));
  if (p->f == F_DOM) {
    int special = 0;
    for (const char *q = s; q < end; q++)
      if (cron_upper(*q) == 'L' || cron_upper(*q) == 'W') special = 1;
    if (special) return cron_dom_special(p, s, end, k);
  }
  if (p->f == F_DOW && end - s == 1 && cron_upper(*s) == 'L')
    return cron_fail(p, "day-of-week: L needs a weekday before it, like 5L "
                        "(the last Friday)");
  if (*s == '?' || *s == '*') {
    if (*s == '?' && p->f != F_DOM && p->f != F_DOW)
      return cron_fail(p, "%s: ? is only for day-of-month and day-of-week",
                       fd->name);
    if (s + 1 == end) {
      if (in_list)
        return cron_fail(p, "%s: %c stands alone, not in a list (\"%s\")",
                         fd->name, *s, cron_show(p->tok, p->toklen, show));
      cron_set(p->f, fd->lo, fd->hi, 1, bits);
      return 0;
    }
    if (*s == '?' || s[1] != '/')
      return cron_fail(p, "%s: unexpected \"%s\" after %c", fd->name,
                       cron_show(s + 1, (size_t)(end - s - 1), show), *s);
    lo = fd->lo;
    hi = fd->hi;
    s++;
  } else {
    if (cron_value(p, &s, end, &lo, &named)) return PAWL_EINVAL;
    hi = lo;
    if (p->f == F_DOW && s < end && (cron_upper(*s) == 'L' || *s == '#')) {
      int w = lo % 7;
      if (cron_upper(*s) == 'L') {
        if (s + 1 != end)
          return cron_fail(p, "day-of-week: unexpected \"%s\" after L",
                           cron_show(s + 1, (size_t)(end - s - 1), show));
        k->dow_last |= 1u << w;
        return 0;
      }
      int nth;
      const char *q = s + 1;
      char what[64];
      snprintf(what, sizeof what, "#n (a month has at most 5 of a weekday)");
      if (cron_number(p, &q, end, 1, 5, what, &nth)) return PAWL_EINVAL;
      if (q != end)
        return cron_fail(p, "day-of-week: unexpected \"%s\" after #%d",
                         cron_show(q, (size_t)(end - q), show), nth);
      k->dow_nth[w] |= 1u << nth;
      return 0;
    }
    if (s < end && *s == '-') {
      s++;
      if (cron_value(p, &s, end, &hi, &named)) return PAWL_EINVAL;
      /* FRI-SUN: Sunday closes a range as 7. */
      if (p->f == F_DOW && named && hi == 0) hi = 7;
      if (hi < lo)
        return cron_fail(p, "%s: range %s goes backwards", fd->name,
                         cron_show(b, (size_t)(s - b), show));
    } else if (s < end && *s == '/') {
      hi = fd->hi; /* v/s: from v to the field's end (Quartz) */
    }
  }
  if (s < end && *s == '/') {
    s++;
    if (cron_number(p, &s, end, 1, fd->step_max, "step", &st))
      return PAWL_EINVAL;
  }
  if (s != end) {
    char show2[200];
    return cron_fail(p, "%s: unexpected \"%s\" in \"%s\"", fd->name,
                     cron_show(s, (size_t)(end - s), show),
                     cron_show(b, (size_t)(end - b), show2));
  }
  cron_set(p->f, lo, hi, st, bits);
  return 0;
}

static int cron_field(cron_p_t *p, uint64_t *bits, cron_days_t *k) {
  const char *s = p->tok, *end = p->tok + p->toklen;
  int in_list = memchr(s, ',', p->toklen) != NULL;
  if (p->f == F_DOM && p->toklen == 1 && (*s == '*' || *s == '?')) k->dom_star = 1;
  if (p->f == F_DOW && p->toklen == 1 && (*s == '*' || *s == '?')) k->dow_star = 1;
  while (1) {
    const char *comma = memchr(s, ',', (size_t)(end - s));
    const char *e = comma ? comma : end;
    int rc = cron_item(p, s, e, in_list, bits, k);
    if (rc) return rc;
    if (!comma) return 0;
    s = comma + 1;
  }
}

/* Folds the day fields into c->days, for every month length and weekday of
 * the month's first day. */
static void cron_build_days(pawl__cron_t *c, const cron_days_t *k) {
  for (int w = 0; w < 7; w++) {
    /* What depends only on the weekday of the 1st: day d is weekday
     * (w + d - 1) % 7, the ((d - 1) / 7 + 1)-th of its kind. */
    uint32_t dow = 0, last_kind = 0;
    for (int d = 1, wd = w; d <= 31; d++, wd = wd == 6 ? 0 : wd + 1) {
      if ((k->dow >> wd & 1) || (k->dow_nth[wd] >> ((d + 6) / 7) & 1))
        dow |= 1u << d;
      if (k->dow_last >> wd & 1) last_kind |= 1u << d;
    }
    for (int len = 28; len <= 31; len++) {
      uint32_t all = len == 31 ? 0xFFFFFFFEu : ((1u << (len + 1)) - 2u);
      /* dL: a day of kind L within the month's last 7 days. */
      uint32_t last7 = all & ~((1u << (len - 6)) - 1u);
      uint32_t dw = (dow | (last_kind & last7)) & all;
      uint32_t dom = k->dom & all;
      for (uint32_t l = k->dom_l; l; l &= l - 1) { /* L-n */
        int n = __builtin_ctz(l);
        if (len - n >= 1) dom |= 1u << (len - n);
      }
      if (k->dom_lw) {
        int d = len, wd = (w + len - 1) % 7;
        if (wd == 6) d -= 1;      /* Saturday: Friday */
        else if (wd == 0) d -= 2; /* Sunday: Friday */
        dom |= 1u << d;
      }
      for (uint32_t ws = k->dom_w & all; ws; ws &= ws - 1) { /* nW */
        int n = __builtin_ctz(ws);
        int wd = (w + n - 1) % 7, d = n;
        if (wd == 6) d = n == 1 ? 3 : n - 1;            /* Saturday */
        else if (wd == 0) d = n == len ? n - 2 : n + 1; /* Sunday */
        dom |= 1u << d;
      }
      uint32_t days;
      if (k->dom_star && k->dow_star) days = all;
      else if (k->dom_star) days = dw;
      else if (k->dow_star) days = dom;
      else days = dom | dw; /* Vixie: both restricted, either matches */
      c->days[w][len - 28] = days;
    }
  }
}

static int cron_is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f';
}

static int cron_popcount(uint64_t v) { return __builtin_popcountll(v); }

int pawl__cron_parse(const char *text, pawl__cron_t *out, char *err,
                     size_t errlen) {
  cron_p_t p = {err, errlen, 0, NULL, 0};
  char show[200];
  size_t tlen = strnlen(text, PAWL__CRON_TEXT_MAX + 1);
  if (tlen > PAWL__CRON_TEXT_MAX)
    return cron_fail(&p, "expression longer than %d characters",
                     PAWL__CRON_TEXT_MAX);
  const char *s = text;
  while (cron_is_space(*s)) s++;
  static const struct {
    const char *name, *expr;
  } macros[] = {{"@yearly", "0 0 1 1 *"},   {"@annually", "0 0 1 1 *"},
                {"@monthly", "0 0 1 * *"},  {"@weekly", "0 0 * * 0"},
                {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
                {"@hourly", "0 * * * *"}};
  if (*s == '@') {
    const char *e = s;
    while (*e && !cron_is_space(*e)) e++;
    const char *rest = e;
    while (cron_is_space(*rest)) rest++;
    size_t n = (size_t)(e - s);
    if (n == 7 && strncasecmp(s, "@reboot", 7) == 0)
      return cron_fail(&p, "@reboot is not supported: pawl schedules by time "
                           "only");
    for (size_t i = 0; i < sizeof macros / sizeof macros[0]; i++)
      if (strlen(macros[i].name) == n && strncasecmp(s, macros[i].name, n) == 0) {
        if (*rest)
          return cron_fail(&p, "unexpected \"%s\" after %s",
                           cron_show(rest, strlen(rest), show), macros[i].name);
        return pawl__cron_parse(macros[i].expr, out, err, errlen);
      }
    return cron_fail(&p, "unknown macro %s (expected @yearly, @annually, "
                         "@monthly, @weekly, @daily, @midnight or @hourly)",
                     cron_show(s, n, show));
  }

  const char *tok[6];
  size_t toklen[6];
  int nf = 0;
  while (*s) {
    const char *b = s;
    while (*s && !cron_is_space(*s)) s++;
    if (nf < 6) {
      tok[nf] = b;
      toklen[nf] = (size_t)(s - b);
    }
    nf++;
    while (cron_is_space(*s)) s++;
  }
  if (nf != 5 && nf != 6)
    return cron_fail(&p, "expected 5 or 6 fields, got %d", nf);

  pawl__cron_t c;
  cron_days_t k;
  memset(&c, 0, sizeof c);
  memset(&k, 0, sizeof k);
  uint64_t bits[6] = {0};
  int first = 0;
  if (nf == 5) {
    bits[F_SEC] = 1; /* second 0 */
    first = 1;
  }
  for (int f = first; f < 6; f++) {
    p.f = f;
    p.tok = tok[f - first];
    p.toklen = toklen[f - first];
    int rc = cron_field(&p, &bits[f], &k);
    if (rc) return rc;
  }
  k.dom = (uint32_t)bits[F_DOM];
  k.dow = (uint32_t)bits[F_DOW];
  c.seconds = bits[F_SEC];
  c.minutes = bits[F_MIN];
  c.hours = (uint32_t)bits[F_HOUR];
  c.months = (uint16_t)bits[F_MON];
  c.fields = (uint8_t)nf;
  cron_build_days(&c, &k);

  /* Can it ever fire? Every month length of a month in the set, with every
   * weekday of its 1st, occurs within 400 years (February 29th too), so
   * this check is exact. */
  int fires = 0;
  for (int m = 1; m <= 12 && !fires; m++) {
    if (!(c.months >> m & 1)) continue;
    int lens[2] = {pawl__month_days(2001, m), pawl__month_days(2004, m)};
    for (int i = 0; i < 2 && !fires; i++)
      for (int w = 0; w < 7 && !fires; w++)
        if (c.days[w][lens[i] - 28]) fires = 1;
  }
  if (!fires) {
    char show2[200];
    return cron_fail(&p, "never fires: day-of-month %s does not occur in "
                         "month %s",
                     cron_show(tok[F_DOM - first], toklen[F_DOM - first], show),
                     cron_show(tok[F_MON - first], toklen[F_MON - first], show2));
  }
  c.interval = cron_popcount(c.seconds) > 1 || cron_popcount(c.minutes) > 1 ||
               c.hours == 0xFFFFFFu;
  *out = c;
  return 0;
}

/* ---- the wall-clock search ----------------------------------------------- */

/* How many months the search may visit: every expression that passed the
 * parse check fires within 400 years. */
#define CRON_MONTH_STEPS (12 * 401)
/* How many zone transitions (or repeated ranges) one call may cross after
 * it has jumped close to the answer. */
#define CRON_SPAN_STEPS 1000
/* No UTC offset is larger (RFC 8536 allows about 25 hours). */
#define CRON_MAX_OFFSET 93600
/* Last second and first second of the supported range. */
#define CRON_MAX_S (PAWL__CRON_MAX_MS / 1000)
#define CRON_MIN_S (PAWL__CRON_MIN_MS / 1000)

static int64_t cron_floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int cron_next32(uint32_t m, int from) {
  if (from > 31) return -1;
  m &= ~0u << from;
  return m ? __builtin_ctz(m) : -1;
}

static int cron_next64(uint64_t m, int from) {
  if (from > 63) return -1;
  m &= ~UINT64_C(0) << from;
  return m ? __builtin_ctzll(m) : -1;
}

/* The first time of day at or after h:mi:s that matches; -1 if none is
 * left today. */
static int cron_next_time(const pawl__cron_t *c, int *h, int *mi, int *s) {
  int H = cron_next32(c->hours, *h);
  if (H < 0) return -1;
  if (H == *h) {
    int M = cron_next64(c->minutes, *mi);
    if (M == *mi) {
      int S = cron_next64(c->seconds, *s);
      if (S >= 0) {
        *s = S;
        return 0;
      }
      M = cron_next64(c->minutes, *mi + 1);
    }
    if (M >= 0) {
      *mi = M;
      *s = __builtin_ctzll(c->seconds);
      return 0;
    }
    H = cron_next32(c->hours, *h + 1);
    if (H < 0) return -1;
  }
  *h = H;
  *mi = __builtin_ctzll(c->minutes);
  *s = __builtin_ctzll(c->seconds);
  return 0;
}

/* The first matching wall time >= wall, into *out; -1 if there is none up
 * to the end of year 9999. */
static int cron_next_wall(const pawl__cron_t *c, int64_t wall, int64_t *out) {
  int64_t day = cron_floor_div(wall, 86400);
  int sod = (int)(wall - day * 86400);
  int64_t y;
  int m, d;
  pawl__civil_from_days(day, &y, &m, &d);
  int h = sod / 3600, mi = sod / 60 % 60, s = sod % 60;
  for (int step = 0; step < CRON_MONTH_STEPS; step++) {
    if (y > 9999) return -1;
    if (c->months >> m & 1) {
      int len = pawl__month_days(y, m);
      int64_t first = pawl__days_from_civil(y, m, 1);
      uint32_t mask = c->days[pawl__weekday(first)][len - 28] & (~0u << d);
      /* At most two rounds: a later day always has a time (from 00:00:00). */
      while (mask) {
        int nd = __builtin_ctz(mask);
        if (nd != d) {
          d = nd;
          h = mi = s = 0;
        }
        if (cron_next_time(c, &h, &mi, &s) == 0) {
          *out = (first + d - 1) * 86400 + h * 3600 + mi * 60 + s;
          return 0;
        }
        mask &= mask - 1;
        h = mi = s = 0;
      }
    }
    int nm = cron_next32(c->months, m + 1);
    if (nm < 0) {
      y++;
      nm = __builtin_ctz(c->months);
    }
    m = nm;
    d = 1;
    h = mi = s = 0;
  }
  return -1;
}

int pawl__cron_matches_wall(const pawl__cron_t *c, int64_t wall) {
  int64_t day = cron_floor_div(wall, 86400);
  int sod = (int)(wall - day * 86400);
  int64_t y;
  int m, d;
  pawl__civil_from_days(day, &y, &m, &d);
  int len = pawl__month_days(y, m);
  int w = pawl__weekday(day - (d - 1));
  return (c->months >> m & 1) && (c->days[w][len - 28] >> d & 1) &&
         (c->hours >> (sod / 3600) & 1) && (c->minutes >> (sod / 60 % 60) & 1) &&
         (c->seconds >> (sod % 60) & 1);
}

/* ---- the zone walk ------------------------------------------------------- */

/* Walks the zone's spans of constant offset from t_min on. Invariants: sp
 * is the span the walk is in, `wall` a wall time such that no matching
 * wall time lies in [wall, w) for the instants still ahead, and w the first
 * match at or after it. A candidate instant w - offset inside the span is
 * the answer, except for the second occurrence of a repeated time of a
 * wall-clock expression; past the span's end, the transition decides: a
 * gap that swallows w (spring forward) fires a wall-clock expression at the
 * gap's end and skips w for an interval one; a fall back re-searches from
 * the earlier wall time when it goes below `wall`. */
int pawl__cron_next(const pawl__cron_t *c, const pawl__tz_t *tz,
                    int64_t after_ms, int64_t *out_ms) {
  if (after_ms < PAWL__CRON_MIN_MS || after_ms > PAWL__CRON_MAX_MS)
    return PAWL_EINVAL;
  if (!tz) tz = pawl__tz_utc();
  int64_t t = cron_floor_div(after_ms, 1000) + 1;
  pawl__tz_span_t sp;
  pawl__tz_span(tz, t, &sp);
  int64_t wall = t + sp.offset, w;
  if (cron_next_wall(c, wall, &w)) return PAWL_ENOTFOUND;
  for (int step = 0; step < CRON_SPAN_STEPS; step++) {
    int64_t cand = w - sp.offset;
    if (cand < sp.end) {
      if (!c->interval && sp.start != INT64_MIN &&
          sp.prev_offset > sp.offset && w < sp.start + sp.prev_offset) {
        /* w happened before, in the previous span: it fired there (or,
         * before t_min, was due there). Skip the repeated range. */
        wall = sp.start + sp.prev_offset;
        if (cron_next_wall(c, wall, &w)) return PAWL_ENOTFOUND;
        continue;
      }
      if (cand > CRON_MAX_S) return PAWL_ENOTFOUND;
      *out_ms = cand * 1000;
      return 0;
    }
    int64_t T = sp.end;
    if (cand - T > 4 * 86400 && T + sp.next_offset >= wall) {
      /* w is days past this span, and the change at its end does not go
       * back below `wall` (a fall back right after t must be walked, its
       * repeated times may match): jump to 52 hours before w, where every
       * wall time is still below w (|offset| <= 26h), skipping the spans
       * between without looking at each. */
      int64_t tj = w - 2 * CRON_MAX_OFFSET;
      pawl__tz_span(tz, tj, &sp);
      wall = tj + sp.offset;
      continue;
    }
    pawl__tz_span_t nsp;
    pawl__tz_span(tz, T, &nsp);
    int64_t wall2 = T + nsp.offset;
    sp = nsp;
    if (w < wall2) {
      /* Spring forward: w is in the gap [T + old offset, T + new). */
      if (!c->interval) {
        if (T > CRON_MAX_S) return PAWL_ENOTFOUND;
        *out_ms = T * 1000;
        return 0;
      }
      wall = wall2;
      if (cron_next_wall(c, wall, &w)) return PAWL_ENOTFOUND;
      continue;
    }
    if (wall2 < wall) {
      /* Fall back to below where the search started: look again. */
      wall = wall2;
      if (cron_next_wall(c, wall, &w)) return PAWL_ENOTFOUND;
    } else {
      wall = wall2;
    }
  }
  return PAWL_ENOTFOUND;
}

int pawl__cron_between(const pawl__cron_t *c, const pawl__tz_t *tz,
                       int64_t after_ms, int64_t until_ms, int64_t *out,
                       size_t max, size_t *n) {
  *n = 0;
  if (after_ms < PAWL__CRON_MIN_MS || after_ms > PAWL__CRON_MAX_MS)
    return PAWL_EINVAL;
  int64_t t = after_ms;
  while (*n < max && t < until_ms) {
    int64_t f;
    int rc = pawl__cron_next(c, tz, t, &f);
    if (rc == PAWL_ENOTFOUND) break;
    if (rc) return rc;
    if (f > until_ms) break;
    out[(*n)++] = f;
    t = f;
  }
  return 0;
}
