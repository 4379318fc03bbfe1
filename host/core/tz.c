/* tz.c: IANA time zones from TZif files (RFC 8536); see tz.h.
 *
 * A zone is a sorted table of transitions (the instant, and the UTC offset
 * from then on) plus, for version 2+ files, the footer's POSIX TZ rule for
 * the instants after the table. Transitions that do not change the offset
 * (only the abbreviation or the DST flag) are dropped when the file is
 * read: all that scheduling needs is the offset. So that the common years
 * are one binary search, loading also appends the footer rule's transitions
 * up to PAWL__TZ_EXTEND_YEAR to the table; past that year the rule is
 * evaluated on the fly, for any year. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "alloc.h"
#include "tz.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pawl.h"

/* The footer rule is expanded into the table up to this year at load. */
#define PAWL__TZ_EXTEND_YEAR 2100
/* RFC 8536 section 3.2: utoff must lie in [-89999, 93599] (about +-25h). */
#define TZ_OFF_MIN (-89999)
#define TZ_OFF_MAX 93599
#define TZ_DEFAULT_DIR "/usr/share/zoneinfo"

/* ---- the calendar -------------------------------------------------------- */

int64_t pawl__days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  /* Eras are 400-year cycles starting on March 1st of year 0; the floor
   * division keeps negative years on the right era. */
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;                                  /* 0-399 */
  int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* 0-365 */
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;          /* 0-146096 */
  return era * 146097 + doe - 719468;
}

void pawl__civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

int pawl__weekday(int64_t z) {
  int w = (int)((z + 4) % 7); /* 1970-01-01 was a Thursday */
  return w < 0 ? w + 7 : w;
}

int pawl__is_leap(int64_t y) {
  return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

int pawl__month_days(int64_t y, int m) {
  static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && pawl__is_leap(y) ? 29 : days[m - 1];
}

static int64_t tz_floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* ---- POSIX TZ rules (the TZif footer) ----------------------------------- */

/* A rule date: Jn (day n of 1-365, February 29 never counted), n (day n of
 * 0-365, counting it), or Mm.w.d (weekday d of week w of month m, w = 5
 * meaning the last), plus the local time of day of the change. */
typedef struct tz_date {
  char kind; /* 'J', 'N' or 'M' */
  int a, b, c;
  int32_t time; /* seconds after local midnight; -167h to 167h (RFC 8536) */
} tz_date_t;

typedef struct tz_rule {
  int32_t std_off, dst_off; /* seconds east of UTC */
  int has_dst;              /* 0: std_off all year */
  tz_date_t start, end;     /* std -> dst at start (in std time), back at end */
} tz_rule_t;

struct pawl__tz {
  struct pawl__tz *next; /* the cache's list */
  char *name;
  char *path;            /* the cache key: the file read */
  size_t n;              /* transitions */
  int64_t *at;           /* ascending instants */
  int32_t *off;          /* offset from at[i] on */
  int32_t off0;          /* offset before at[0] (always, when n == 0) */
  int has_rule;          /* the footer rule applies from at[n-1] on */
  tz_rule_t rule;
};

static const char *tzs_name(const char *p) {
  const char *s = p;
  if (*p == '<') {
    for (p++; (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
              (*p >= '0' && *p <= '9') || *p == '+' || *p == '-';
         p++) {
    }
    if (*p != '>' || p - s - 1 < 3) return NULL;
    return p + 1;
  }
  while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')) p++;
  return p - s >= 3 ? p : NULL;
}

static const char *tzs_num(const char *p, int min, int max, int *out) {
  int v = 0, n = 0;
  for (; *p >= '0' && *p <= '9' && n < 4; p++, n++) v = v * 10 + (*p - '0');
  if (n == 0 || (*p >= '0' && *p <= '9') || v < min || v > max) return NULL;
  *out = v;
  return p;
}

/* [+-]hh[:mm[:ss]] with hh <= maxh, as signed seconds. */
static const char *tzs_hms(const char *p, int maxh, int32_t *out) {
  int sign = 1, h, m = 0, s = 0;
  if (*p == '+' || *p == '-') sign = *p++ == '-' ? -1 : 1;
  if (!(p = tzs_num(p, 0, maxh, &h))) return NULL;
  if (*p == ':' && !(p = tzs_num(p + 1, 0, 59, &m))) return NULL;
  if (*p == ':' && !(p = tzs_num(p + 1, 0, 59, &s))) return NULL;
  *out = sign * (h * 3600 + m * 60 + s);
  return p;
}

static const char *tzs_date(const char *p, tz_date_t *d) {
  d->time = 2 * 3600; /* POSIX: 02:00:00 unless given */
  if (*p == 'J') {
    d->kind = 'J';
    p = tzs_num(p + 1, 1, 365, &d->a);
  } else if (*p == 'M') {
    d->kind = 'M';
    if (!(p = tzs_num(p + 1, 1, 12, &d->a)) || *p != '.' ||
        !(p = tzs_num(p + 1, 1, 5, &d->b)) || *p != '.' ||
        !(p = tzs_num(p + 1, 0, 6, &d->c)))
      return NULL;
  } else {
    d->kind = 'N';
    p = tzs_num(p, 0, 365, &d->a);
  }
  if (p && *p == '/') p = tzs_hms(p + 1, 167, &d->time);
  return p;
}

/* The day (since the epoch) on which date d falls in year y. */
static int64_t tzr_day(const tz_date_t *d, int64_t y) {
  int64_t jan1 = pawl__days_from_civil(y, 1, 1);
  if (d->kind == 'J') return jan1 + d->a - 1 + (pawl__is_leap(y) && d->a >= 60);
  if (d->kind == 'N') return jan1 + d->a;
  int64_t first = pawl__days_from_civil(y, d->a, 1);
  int dd = (d->c - pawl__weekday(first) + 7) % 7 + 7 * (d->b - 1);
  if (dd >= pawl__month_days(y, d->a)) dd -= 7; /* week 5: the last one */
  return first + dd;
}

/* The instants of year y's changes to DST (*s) and back (*e). */
static void tzr_year(const tz_rule_t *r, int64_t y, int64_t *s, int64_t *e) {
  *s = tzr_day(&r->start, y) * 86400 + r->start.time - r->std_off;
  *e = tzr_day(&r->end, y) * 86400 + r->end.time - r->dst_off;
}

static int tzs_parse(const char *p, tz_rule_t *r) {
  int32_t v;
  memset(r, 0, sizeof *r);
  if (!(p = tzs_name(p)) || !(p = tzs_hms(p, 24, &v))) return -1;
  r->std_off = -v; /* POSIX counts west of UTC */
  if (*p == '\0') return 0;
  if (!(p = tzs_name(p))) return -1;
  r->has_dst = 1;
  r->dst_off = r->std_off + 3600;
  if (*p != ',' && *p != '\0') {
    if (!(p = tzs_hms(p, 24, &v))) return -1;
    r->dst_off = -v;
  }
  if (*p == '\0') { /* POSIX's default: the United States' rule */
    r->start = (tz_date_t){'M', 3, 2, 0, 7200};
    r->end = (tz_date_t){'M', 11, 1, 0, 7200};
    return 0;
  }
  if (*p != ',' || !(p = tzs_date(p + 1, &r->start)) || *p != ',' ||
      !(p = tzs_date(p + 1, &r->end)) || *p != '\0')
    return -1;
  /* DST all year ("EST5EDT,0/0,J365/25", RFC 8536 section 3.3.1: the end
   * of one year's DST meets the start of the next) or never (a period of
   * length zero): a constant offset, with no transitions at all. */
  int64_t s, e, s2, e2;
  tzr_year(r, 2001, &s, &e);
  tzr_year(r, 2002, &s2, &e2);
  if (e == s2 || e2 == s) {
    r->std_off = r->dst_off;
    r->has_dst = 0;
  } else if (s == e) {
    r->has_dst = 0;
  }
  return 0;
}

typedef struct tz_change {
  int64_t at;
  int32_t off;
} tz_change_t;

/* The rule's changes in years y0..y1 (at most 2 per year into out), sorted;
 * changes at the same instant cancel out (they alternate between std and
 * dst, so a pair at one instant is no change). Returns the count. */
static size_t tzr_changes(const tz_rule_t *r, int64_t y0, int64_t y1,
                          tz_change_t *out) {
  size_t n = 0;
  for (int64_t y = y0; y <= y1; y++) {
    int64_t s, e;
    tzr_year(r, y, &s, &e);
    out[n++] = (tz_change_t){s, r->dst_off};
    out[n++] = (tz_change_t){e, r->std_off};
  }
  for (size_t i = 1; i < n; i++) /* insertion sort: nearly sorted already */
    for (size_t j = i; j > 0 && out[j].at < out[j - 1].at; j--) {
      tz_change_t t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (i + 1 < n && out[i].at == out[i + 1].at) {
      i++;
      continue;
    }
    out[k++] = out[i];
  }
  return k;
}

/* The rule's span around t. */
static void tzr_span(const tz_rule_t *r, int64_t t, pawl__tz_span_t *sp) {
  if (!r->has_dst) {
    *sp = (pawl__tz_span_t){INT64_MIN, INT64_MAX, r->std_off, r->std_off,
                            r->std_off};
    return;
  }
  /* Years y-2..y+2 around t's year: a change may sit up to 167 hours away
   * from its date, so the neighbours of t always come from this window. */
  int64_t y;
  int m, d;
  pawl__civil_from_days(tz_floor_div(t, 86400), &y, &m, &d);
  tz_change_t ch[10];
  size_t n = tzr_changes(r, y - 2, y + 2, ch);
  size_t i = 0;
  while (i < n && ch[i].at <= t) i++;
  /* i: the first change after t. */
  int32_t other = r->std_off;
  if (n == 0) {
    *sp = (pawl__tz_span_t){INT64_MIN, INT64_MAX, other, other, other};
    return;
  }
  if (i == 0) {
    int32_t o = ch[0].off == r->dst_off ? r->std_off : r->dst_off;
    *sp = (pawl__tz_span_t){INT64_MIN, ch[0].at, o, o, ch[0].off};
    return;
  }
  sp->start = ch[i - 1].at;
  sp->offset = ch[i - 1].off;
  sp->prev_offset = i >= 2 ? ch[i - 2].off
                           : (sp->offset == r->dst_off ? r->std_off : r->dst_off);
  sp->end = i < n ? ch[i].at : INT64_MAX;
  sp->next_offset = i < n ? ch[i].off : sp->offset;
}

/* ---- zones --------------------------------------------------------------- */

static pawl__tz_t tz_utc_zone = {NULL, (char *)"UTC", NULL, 0, NULL, NULL,
                                 0, 0, {0, 0, 0, {0}, {0}}};

const pawl__tz_t *pawl__tz_utc(void) { return &tz_utc_zone; }

const char *pawl__tz_name(const pawl__tz_t *tz) { return tz->name; }

void pawl__tz_free(pawl__tz_t *tz) {
  if (!tz || tz == &tz_utc_zone) return;
  pawl__free(tz->name);
  pawl__free(tz->path);
  pawl__free(tz->at);
  pawl__free(tz->off);
  pawl__free(tz);
}

static int tz_fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int tz_fail(char *err, size_t errlen, int code, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return code;
}

static uint32_t tz_be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         p[3];
}

static int64_t tz_be64(const unsigned char *p) {
  return (int64_t)((uint64_t)tz_be32(p) << 32 | tz_be32(p + 4));
}

/* One TZif header's counts. */
typedef struct tz_hdr {
  uint32_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
} tz_hdr_t;

static void tz_hdr_read(const unsigned char *p, tz_hdr_t *h) {
  h->isutcnt = tz_be32(p + 20);
  h->isstdcnt = tz_be32(p + 24);
  h->leapcnt = tz_be32(p + 28);
  h->timecnt = tz_be32(p + 32);
  h->typecnt = tz_be32(p + 36);
  h->charcnt = tz_be32(p + 40);
}

/* Bytes of the data block after a header; tsize is 4 (v1) or 8 (v2+). */
static uint64_t tz_block_len(const tz_hdr_t *h, uint64_t tsize) {
  return (uint64_t)h->timecnt * (tsize + 1) + (uint64_t)h->typecnt * 6 +
         h->charcnt + (uint64_t)h->leapcnt * (tsize + 4) + h->isstdcnt +
         h->isutcnt;
}

/* Appends the footer rule's changes after the table's last one, up to
 * PAWL__TZ_EXTEND_YEAR, so that lookups in those years need no rule
 * arithmetic. Only for tables that reach 1800: a table ending earlier is
 * left to the rule alone. */
static int tz_extend(pawl__tz_t *z) {
  if (!z->has_rule || !z->rule.has_dst || z->n == 0) return 0;
  int64_t last = z->at[z->n - 1];
  int64_t y0, y1 = PAWL__TZ_EXTEND_YEAR;
  int m, d;
  pawl__civil_from_days(tz_floor_div(last, 86400), &y0, &m, &d);
  if (y0 < 1800 || y0 >= y1) return 0;
  size_t cap = z->n + (size_t)(y1 - y0 + 1) * 2;
  tz_change_t *ch = pawl__malloc((size_t)(y1 - y0 + 1) * 2 * sizeof *ch);
  int64_t *at = pawl__realloc(z->at, cap * sizeof *at);
  if (at) z->at = at;
  int32_t *off = at ? pawl__realloc(z->off, cap * sizeof *off) : NULL;
  if (off) z->off = off;
  if (!ch || !at || !off) {
    pawl__free(ch);
    return PAWL_ENOMEM;
  }
  size_t nch = tzr_changes(&z->rule, y0, y1, ch);
  int32_t cur = z->off[z->n - 1];
  for (size_t i = 0; i < nch; i++) {
    if (ch[i].at <= last || ch[i].off == cur) continue;
    z->at[z->n] = ch[i].at;
    z->off[z->n] = ch[i].off;
    z->n++;
    cur = ch[i].off;
  }
  pawl__free(ch);
  return 0;
}

int pawl__tz_parse(const char *name, const unsigned char *data, size_t len,
                   pawl__tz_t **out, char *err, size_t errlen) {
  const char *nm = name ? name : "(unnamed)";
  if (len < 44 || memcmp(data, "TZif", 4) != 0)
    return tz_fail(err, errlen, PAWL_EIO,
                   "time zone \"%s\": not a TZif file (no TZif header)", nm);
  int version = data[4] ? data[4] - '0' : 1;
  if (version < 1 || version > 9)
    return tz_fail(err, errlen, PAWL_EIO,
                   "time zone \"%s\": unknown TZif version byte 0x%02x", nm,
                   data[4]);
  tz_hdr_t h;
  tz_hdr_read(data, &h);
  uint64_t pos = 44, tsize = 4;
  if (version >= 2) {
    /* Skip the 32-bit data: the 64-bit block after the second header has
     * every transition, and the footer follows it. */
    pos += tz_block_len(&h, 4);
    if (pos + 44 > len || memcmp(data + pos, "TZif", 4) != 0)
      return tz_fail(err, errlen, PAWL_EIO,
                     "time zone \"%s\": truncated TZif file (no second "
                     "header)", nm);
    tz_hdr_read(data + pos, &h);
    pos += 44;
    tsize = 8;
  }
  if (h.typecnt == 0 || h.typecnt > 256 || h.charcnt == 0 ||
      (h.isstdcnt != 0 && h.isstdcnt != h.typecnt) ||
      (h.isutcnt != 0 && h.isutcnt != h.typecnt))
    return tz_fail(err, errlen, PAWL_EIO,
                   "time zone \"%s\": bad TZif header counts", nm);
  if (h.leapcnt != 0)
    return tz_fail(err, errlen, PAWL_EIO,
                   "time zone \"%s\": leap-second data (a right/ zone) is not "
                   "supported",
                   nm);
  uint64_t block = tz_block_len(&h, tsize);
  if (block > len - pos)
    return tz_fail(err, errlen, PAWL_EIO,
                   "time zone \"%s\": truncated TZif file", nm);
  const unsigned char *times = data + pos;
  const unsigned char *idx = times + (uint64_t)h.timecnt * tsize;
  const unsigned char *types = idx + h.timecnt;
  int32_t utoff[256];
  for (uint32_t i = 0; i < h.typecnt; i++) {
    const unsigned char *t = types + 6 * i;
    utoff[i] = (int32_t)tz_be32(t);
    if (utoff[i] < TZ_OFF_MIN || utoff[i] > TZ_OFF_MAX || t[4] > 1 ||
        t[5] >= h.charcnt)
      return tz_fail(err, errlen, PAWL_EIO,
                     "time zone \"%s\": bad local time type %u", nm, i);
  }
  tz_rule_t rule;
  int has_rule = 0;
  if (version >= 2) {
    /* The footer: "\n" TZ-string "\n". */
    const char *f = (const char *)data + pos + block;
    size_t flen = len - (size_t)(pos + block);
    const char *nl = flen > 0 ? memchr(f + 1, '\n', flen - 1) : NULL;
    if (flen < 2 || f[0] != '\n' || !nl)
      return tz_fail(err, errlen, PAWL_EIO,
                     "time zone \"%s\": TZif footer missing", nm);
    size_t slen = (size_t)(nl - f - 1);
    if (slen > 0) {
      char tzs[256];
      if (slen >= sizeof tzs || memchr(f + 1, '\0', slen))
        return tz_fail(err, errlen, PAWL_EIO,
                       "time zone \"%s\": TZif footer too long", nm);
      memcpy(tzs, f + 1, slen);
      tzs[slen] = '\0';
      if (tzs_parse(tzs, &rule) != 0)
        return tz_fail(err, errlen, PAWL_EIO,
                       "time zone \"%s\": bad POSIX TZ rule \"%s\" in the "
                       "TZif footer",
                       nm, tzs);
      has_rule = 1;
    }
  }

  pawl__tz_t *z = pawl__calloc(1, sizeof *z);
  if (!z) return tz_fail(err, errlen, PAWL_ENOMEM, "out of memory");
  z->name = pawl__strdup(nm);
  size_t cap = h.timecnt ? h.timecnt : 1;
  z->at = pawl__malloc(cap * sizeof *z->at);
  z->off = pawl__malloc(cap * sizeof *z->off);
  if (!z->name || !z->at || !z->off) {
    pawl__tz_free(z);
    return tz_fail(err, errlen, PAWL_ENOMEM, "out of memory");
  }
  /* RFC 8536 section 3.2: type 0 holds before the first transition. */
  z->off0 = utoff[0];
  int32_t cur = z->off0;
  int64_t prev = INT64_MIN;
  for (uint32_t i = 0; i < h.timecnt; i++) {
    int64_t at = tsize == 8 ? tz_be64(times + 8 * (uint64_t)i)
                            : (int64_t)(int32_t)tz_be32(times + 4 * (uint64_t)i);
    if (i > 0 && at <= prev) {
      pawl__tz_free(z);
      return tz_fail(err, errlen, PAWL_EIO,
                     "time zone \"%s\": TZif transitions out of order", nm);
    }
    prev = at;
    if (idx[i] >= h.typecnt) {
      pawl__tz_free(z);
      return tz_fail(err, errlen, PAWL_EIO,
                     "time zone \"%s\": bad type index in TZif data", nm);
    }
    int32_t o = utoff[idx[i]];
    if (o == cur) continue;
    z->at[z->n] = at;
    z->off[z->n] = o;
    z->n++;
    cur = o;
  }
  z->has_rule = has_rule;
  if (has_rule) z->rule = rule;
  if (tz_extend(z) != 0) {
    pawl__tz_free(z);
    return tz_fail(err, errlen, PAWL_ENOMEM, "out of memory");
  }
  *out = z;
  return 0;
}

void pawl__tz_span(const pawl__tz_t *z, int64_t t, pawl__tz_span_t *sp) {
  if (t > PAWL__TZ_T_MAX) t = PAWL__TZ_T_MAX;
  if (t < -PAWL__TZ_T_MAX) t = -PAWL__TZ_T_MAX;
  if (z->n == 0) {
    if (z->has_rule) {
      tzr_span(&z->rule, t, sp);
    } else {
      *sp = (pawl__tz_span_t){INT64_MIN, INT64_MAX, z->off0, z->off0, z->off0};
    }
    return;
  }
  if (t < z->at[0]) {
    *sp = (pawl__tz_span_t){INT64_MIN, z->at[0], z->off0, z->off0, z->off[0]};
    return;
  }
  /* The last transition at or before t. */
  size_t lo = 0, hi = z->n;
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (z->at[mid] <= t) lo = mid;
    else hi = mid;
  }
  int32_t before = lo > 0 ? z->off[lo - 1] : z->off0;
  if (lo + 1 < z->n) {
    *sp = (pawl__tz_span_t){z->at[lo], z->at[lo + 1], z->off[lo], before,
                            z->off[lo + 1]};
    return;
  }
  if (!z->has_rule) {
    *sp = (pawl__tz_span_t){z->at[lo], INT64_MAX, z->off[lo], before,
                            z->off[lo]};
    return;
  }
  /* Past the table: the footer rule, which starts at the last transition. */
  tzr_span(&z->rule, t, sp);
  if (sp->start <= z->at[lo]) {
    sp->start = z->at[lo];
    sp->prev_offset = before;
  }
}

int32_t pawl__tz_offset(const pawl__tz_t *tz, int64_t t) {
  pawl__tz_span_t sp;
  pawl__tz_span(tz, t, &sp);
  return sp.offset;
}

/* ---- the cache and the file system --------------------------------------- */

static pthread_mutex_t tz_lock = PTHREAD_MUTEX_INITIALIZER;
static pawl__tz_t *tz_cache; /* guarded by tz_lock; entries never freed */

/* A name that stays inside the zone directory: relative, parts neither
 * empty nor "." nor "..", and only the characters IANA names use. */
static int tz_name_ok(const char *name, char *err, size_t errlen) {
  size_t n = strlen(name);
  if (n == 0)
    return tz_fail(err, errlen, PAWL_EINVAL, "empty time zone name");
  if (n > PAWL__TZ_NAME_MAX)
    return tz_fail(err, errlen, PAWL_EINVAL,
                   "time zone name longer than %d characters",
                   PAWL__TZ_NAME_MAX);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)name[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
          (c >= '0' && c <= '9') || c == '/' || c == '_' || c == '-' ||
          c == '+' || c == '.'))
      /* Only the valid part is quoted: the rest may hold a newline. */
      return tz_fail(err, errlen, PAWL_EINVAL,
                     "time zone \"%.*s...\": character 0x%02x is not allowed "
                     "in a zone name (letters, digits and / _ - + .)",
                     (int)(i > 64 ? 64 : i), name, c);
  }
  const char *p = name;
  while (1) {
    const char *slash = strchr(p, '/');
    size_t plen = slash ? (size_t)(slash - p) : strlen(p);
    if (plen == 0 || (plen == 1 && p[0] == '.') ||
        (plen == 2 && p[0] == '.' && p[1] == '.'))
      return tz_fail(err, errlen, PAWL_EINVAL,
                     "time zone \"%s\": a zone name is relative to the zone "
                     "directory, with no empty, \".\" or \"..\" parts",
                     name);
    if (!slash) break;
    p = slash + 1;
  }
  return 0;
}

/* Reads the file at path (the name only for messages) and parses it. */
static int tz_load(const char *name, const char *path, pawl__tz_t **out,
                   char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return tz_fail(err, errlen, PAWL_EINVAL,
                     "unknown time zone \"%s\" (no file %s)", name, path);
    return tz_fail(err, errlen, PAWL_EIO, "time zone \"%s\": cannot open %s: %s",
                   name, path, strerror(errno));
  }
  struct stat sb;
  int rc = 0;
  unsigned char *data = NULL;
  if (fstat(fd, &sb) != 0) {
    rc = tz_fail(err, errlen, PAWL_EIO, "time zone \"%s\": cannot stat %s: %s",
                 name, path, strerror(errno));
  } else if (S_ISDIR(sb.st_mode)) {
    rc = tz_fail(err, errlen, PAWL_EINVAL,
                 "unknown time zone \"%s\" (%s is a directory of zones)", name,
                 path);
  } else if (!S_ISREG(sb.st_mode) || sb.st_size > PAWL__TZ_FILE_MAX) {
    rc = tz_fail(err, errlen, PAWL_EIO,
                 "time zone \"%s\": %s is not a TZif file of at most %d bytes",
                 name, path, PAWL__TZ_FILE_MAX);
  } else if (!(data = pawl__malloc((size_t)sb.st_size + 1))) {
    rc = tz_fail(err, errlen, PAWL_ENOMEM, "out of memory");
  } else {
    size_t got = 0, want = (size_t)sb.st_size;
    while (got < want) {
      ssize_t r = read(fd, data + got, want - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += (size_t)r;
    }
    if (got != want)
      rc = tz_fail(err, errlen, PAWL_EIO, "time zone \"%s\": cannot read %s",
                   name, path);
    else
      rc = pawl__tz_parse(name, data, got, out, err, errlen);
  }
  pawl__free(data);
  close(fd);
  return rc;
}

int pawl__tz_get(const char *name, const pawl__tz_t **out, char *err,
                 size_t errlen) {
  if (!name || strcmp(name, "UTC") == 0) {
    *out = &tz_utc_zone;
    return 0;
  }
  int rc = tz_name_ok(name, err, errlen);
  if (rc) return rc;
  /* $TZDIR is read on every call (getenv only; nothing here sets it), so
   * the cache is keyed by the file's path, not by the name alone. */
  const char *dir = getenv("TZDIR");
  if (!dir || !*dir) dir = TZ_DEFAULT_DIR;
  size_t plen = strlen(dir) + 1 + strlen(name) + 1;
  char *path = pawl__malloc(plen);
  if (!path) return tz_fail(err, errlen, PAWL_ENOMEM, "out of memory");
  snprintf(path, plen, "%s/%s", dir, name);

  pthread_mutex_lock(&tz_lock);
  pawl__tz_t *z = tz_cache;
  while (z && strcmp(z->path, path) != 0) z = z->next;
  if (!z) {
    /* Loading under the lock: zones are few, loads rare and short, and two
     * threads asking for the same new zone then read it once. */
    rc = tz_load(name, path, &z, err, errlen);
    if (!rc) {
      z->path = path;
      path = NULL;
      z->next = tz_cache;
      tz_cache = z;
    }
  }
  pthread_mutex_unlock(&tz_lock);
  pawl__free(path);
  if (!rc) *out = z;
  return rc;
}

/* ---- text ---------------------------------------------------------------- */

void pawl__tz_format(const pawl__tz_t *tz, int64_t ms,
                     char out[PAWL__TZ_STRLEN]) {
  int64_t s = tz_floor_div(ms, 1000);
  int frac = (int)(ms % 1000); /* not ms - s * 1000: that overflows */
  if (frac < 0) frac += 1000;
  if (s > PAWL__TZ_T_MAX) s = PAWL__TZ_T_MAX;
  if (s < -PAWL__TZ_T_MAX) s = -PAWL__TZ_T_MAX;
  int32_t off = pawl__tz_offset(tz, s);
  int64_t local = s + off;
  int64_t days = tz_floor_div(local, 86400);
  int sod = (int)(local - days * 86400);
  int64_t y;
  int m, d;
  pawl__civil_from_days(days, &y, &m, &d);
  int n;
  if (y >= 0 && y <= 9999)
    n = snprintf(out, PAWL__TZ_STRLEN, "%04d", (int)y);
  else
    n = snprintf(out, PAWL__TZ_STRLEN, "%+05lld", (long long)y);
  n += snprintf(out + n, (size_t)(PAWL__TZ_STRLEN - n), "-%02d-%02dT%02d:%02d:%02d",
                m, d, sod / 3600, sod / 60 % 60, sod % 60);
  if (frac) n += snprintf(out + n, (size_t)(PAWL__TZ_STRLEN - n), ".%03d", frac);
  int aoff = off < 0 ? -off : off;
  n += snprintf(out + n, (size_t)(PAWL__TZ_STRLEN - n), "%c%02d:%02d",
                off < 0 ? '-' : '+', aoff / 3600, aoff / 60 % 60);
  if (aoff % 60)
    snprintf(out + n, (size_t)(PAWL__TZ_STRLEN - n), ":%02d", aoff % 60);
}
