/* json.c: pawl's one JSON tokenizer, and the validator and readers built
 * on it; see json.h.
 *
 * The checks (a string's escapes and UTF-8, a number's grammar, range and
 * integer rule) are written once, below, and the tokenizer calls them for
 * each token; its loop is further down ("the tokenizer"). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strtod_l, newlocale */
#endif
#include "json.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tokenizer's state is the lexer (json.h); the checks below read it
 * under the name they were written with. */
typedef pawl_json_lexer_t json_parser_t;

/* 1-based line and byte column of offset at. */
static void json_where(const json_parser_t *p, size_t at, size_t *line,
                       size_t *col) {
  size_t l = 1, start = 0;
  for (size_t i = 0; i < at && i < p->len; i++) {
    if (p->s[i] == '\n') {
      l++;
      start = i + 1;
    }
  }
  *line = l;
  *col = at - start + 1;
}

/* Records "<message> at line L, column C" for offset at; returns -1 so that
 * callers can `return json_fail(...)`. */
static int json_fail(json_parser_t *p, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int json_fail(json_parser_t *p, size_t at, const char *fmt, ...) {
  if (p->err == NULL || p->errlen == 0) return -1;
  char msg[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t line, col;
  json_where(p, at, &line, &col);
  snprintf(p->err, p->errlen, "%s at line %zu, column %zu", msg, line, col);
  return -1;
}

/* End of input where more was needed. The position would always be "the
 * end", so name the innermost unclosed container instead, which is where
 * the author has to look. */
static int json_fail_eof(json_parser_t *p) {
  if (p->err == NULL || p->errlen == 0) return -1;
  if (p->depth == 0) {
    snprintf(p->err, p->errlen, "unexpected end of input");
    return -1;
  }
  size_t line, col;
  json_where(p, p->open_at[p->depth - 1], &line, &col);
  snprintf(p->err, p->errlen,
           "unexpected end of input ('%c' at line %zu, column %zu is not "
           "closed)",
           p->open[p->depth - 1], line, col);
  return -1;
}

/* Writes a printable description of byte c into out: 'x' or byte 0xNN. */
static const char *json_byte_name(unsigned char c, char out[16]) {
  if (c > 0x20 && c < 0x7F)
    snprintf(out, 16, "'%c'", c);
  else
    snprintf(out, 16, "byte 0x%02x", c);
  return out;
}

static void json_skip_ws(json_parser_t *p) {
  while (p->pos < p->len) {
    unsigned char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    p->pos++;
  }
}

size_t pawl__json_utf8_len(const unsigned char *p, size_t n) {
  unsigned char c = p[0];
  if (c < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    else if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    else if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (n < len) return 0;
  if (p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < len; i++)
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  return len;
}

static int json_is_hex(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
         (c >= 'A' && c <= 'F');
}

/* End of input inside the string or key that starts at offset start. */
static int json_fail_eof_in(json_parser_t *p, const char *what,
                            size_t start) {
  if (p->err == NULL || p->errlen == 0) return -1;
  size_t line, col;
  json_where(p, start, &line, &col);
  snprintf(p->err, p->errlen,
           "unexpected end of input in %s starting at line %zu, column %zu",
           what, line, col);
  return -1;
}

/* The four hex digits of the \u escape at `esc` into *cu. */
static int json_hex4(json_parser_t *p, size_t esc, const char *what,
                     size_t start, unsigned *cu) {
  char name[16];
  *cu = 0;
  for (size_t i = 0; i < 4; i++) {
    if (esc + 2 + i >= p->len) return json_fail_eof_in(p, what, start);
    unsigned char c = p->s[esc + 2 + i];
    if (!json_is_hex(c))
      return json_fail(p, esc,
                       "invalid \\u escape in %s: %s is not a hex digit",
                       what, json_byte_name(c, name));
    *cu = *cu << 4 |
          (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return 0;
}

/* A string starting at the '"' at p->pos; leaves pos after the closing
 * quote. `what` ("string" or "object key") makes messages more precise. */
static int json_string(json_parser_t *p, const char *what) {
  size_t start = p->pos++;
  char name[16];
  p->escaped = 0;
  for (;;) {
    if (p->pos >= p->len) return json_fail_eof_in(p, what, start);
    unsigned char c = p->s[p->pos];
    if (c == '"') {
      p->pos++;
      return 0;
    }
    if (c < 0x20)
      return json_fail(p, p->pos,
                       "control character 0x%02x in %s (must be escaped)", c,
                       what);
    if (c == '\\') {
      size_t esc = p->pos;
      p->escaped = 1;
      if (esc + 1 >= p->len) return json_fail_eof_in(p, what, start);
      unsigned char e = p->s[esc + 1];
      switch (e) {
      case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r':
      case 't':
        p->pos += 2;
        continue;
      case 'u': {
        unsigned cu = 0;
        int rc = json_hex4(p, esc, what, start, &cu);
        if (rc) return rc;
        if (p->mode == JSON_GRAMMAR) {
          p->pos += 6;
          continue;
        }
        if (cu == 0)
          return json_fail(p, esc,
                           "\\u0000 in %s: NUL is not allowed (see json.h)",
                           what);
        if (cu >= 0xDC00 && cu <= 0xDFFF)
          return json_fail(p, esc,
                           "lone UTF-16 surrogate \\u%04x in %s: a low "
                           "surrogate must follow a high one (see json.h)",
                           cu, what);
        if (cu >= 0xD800 && cu <= 0xDBFF) {
          unsigned lo = 0;
          if (esc + 7 < p->len && p->s[esc + 6] == '\\' &&
              p->s[esc + 7] == 'u') {
            if ((rc = json_hex4(p, esc + 6, what, start, &lo))) return rc;
          } else if (esc + 6 >= p->len) {
            return json_fail_eof_in(p, what, start);
          }
          if (lo < 0xDC00 || lo > 0xDFFF)
            return json_fail(p, esc,
                             "lone UTF-16 surrogate \\u%04x in %s: a high "
                             "surrogate must be followed by a low one (see "
                             "json.h)",
                             cu, what);
          p->pos += 12;
          continue;
        }
        p->pos += 6;
        continue;
      }
      default:
        if (e > 0x20 && e < 0x7F)
          return json_fail(p, esc, "invalid escape '\\%c' in %s", e, what);
        return json_fail(p, esc, "invalid escape: '\\' followed by %s in %s",
                         json_byte_name(e, name), what);
      }
    }
    if (c < 0x80) {
      p->pos++;
      continue;
    }
    size_t k = pawl__json_utf8_len(p->s + p->pos, p->len - p->pos);
    if (k == 0)
      return json_fail(p, p->pos, "invalid UTF-8 (byte 0x%02x) in %s", c,
                       what);
    p->pos += k;
  }
}

static int json_digit(const json_parser_t *p, size_t at) {
  return at < p->len && p->s[at] >= '0' && p->s[at] <= '9';
}

static int json_number_syntax(json_parser_t *p, int *plain);

/* ---- numbers in the C locale ---------------------------------------------- */

static pthread_once_t json_once = PTHREAD_ONCE_INIT;
static locale_t json_c_locale; /* written once, under json_once */

static void json_locale_init(void) {
  json_c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

double pawl__json_strtod(const char *s, char **end) {
  pthread_once(&json_once, json_locale_init);
  if (json_c_locale) return strtod_l(s, end, json_c_locale);
  return strtod(s, end); /* no locale object: the process's (usually C) */
}

/* snprintf of a double, with a locale's decimal point (a ',' in some)
 * written as '.'. */
static void json_fmt(char *out, size_t len, const char *fmt, int prec,
                     double d) {
  char tmp[64];
  snprintf(tmp, sizeof tmp, fmt, prec, d);
  size_t k = 0;
  int dot = 0;
  for (const char *c = tmp; *c && k + 1 < len; c++) {
    if ((*c >= '0' && *c <= '9') || *c == '-' || *c == '+' || *c == 'e') {
      out[k++] = *c;
      dot = 0;
    } else if (!dot) { /* the decimal point, however many bytes */
      out[k++] = '.';
      dot = 1;
    }
  }
  out[k] = 0;
}

void pawl__json_number_text(double d, char *out, size_t len) {
  if (!isfinite(d)) {
    snprintf(out, len, "null");
    return;
  }
  if (d == floor(d) && fabs(d) <= (double)JSON_MAX_SAFE_INT) {
    if (d == 0) snprintf(out, len, signbit(d) ? "-0" : "0");
    else snprintf(out, len, "%lld", (long long)d);
    return;
  }
  int integral = d == floor(d);
  for (int prec = integral ? 0 : 15; prec <= 17; prec++) {
    json_fmt(out, len, integral ? "%.*e" : "%.*g", prec, d);
    if (pawl__json_strtod(out, NULL) == d) return;
  }
}

/* The smallest decimal that a double cannot hold: halfway between DBL_MAX
 * and 2^1024, 2^1024 - 2^970, which rounds (to even) to infinity. Its
 * significant digits; the value is 1.797...e308. */
static const char json_overflow_digits[] =
    "179769313486231580793728971405303415079934132710037826936173778980444968"
    "292764750946649017977587207096330286416692887910946555547851940402630657"
    "488671505820681908902000708383676273854845817711531764475730270069855571"
    "366959622842914819860834936475292719074168444365510704342711559699508093"
    "042880177904174497792";

/* Whether the number p->s[start..end) (valid JSON) is outside what a double
 * holds, judged on its digits (exactly, and whatever the locale): its
 * decimal exponent, then its significant digits against the limit's. */
static int json_number_overflows(const json_parser_t *p, size_t start,
                                 size_t end) {
  const unsigned char *s = p->s;
  size_t i = start + (s[start] == '-');
  size_t int0 = i, int1, frac0 = 0, frac1 = 0;
  while (i < end && s[i] >= '0' && s[i] <= '9') i++;
  int1 = i;
  if (i < end && s[i] == '.') {
    frac0 = ++i;
    while (i < end && s[i] >= '0' && s[i] <= '9') i++;
    frac1 = i;
  }
  long long exp = 0;
  if (i < end && (s[i] == 'e' || s[i] == 'E')) {
    int neg = s[++i] == '-';
    if (s[i] == '-' || s[i] == '+') i++;
    for (; i < end; i++)
      if (exp < 1000000) exp = exp * 10 + (s[i] - '0'); /* saturates */
    if (neg) exp = -exp;
  }
  /* The power of ten of the first significant digit decides, but for
   * numbers of the limit's magnitude: only those collect their digits. */
  long long first = 0;
  int seen = 0;
  for (size_t k = int0; k < int1 && !seen; k++)
    if (s[k] != '0') first = (long long)(int1 - k) - 1, seen = 1;
  for (size_t k = frac0; k < frac1 && !seen; k++)
    if (s[k] != '0') first = -(long long)(k - frac0) - 1, seen = 1;
  if (!seen) return 0; /* zero */
  long long pow10 = first + exp;
  if (pow10 != 308) return pow10 > 308;
  /* The significant digits, int part then fraction. */
  char sig[sizeof json_overflow_digits + 1];
  size_t nsig = 0;
  seen = 0;
  for (size_t k = int0; k < int1; k++) {
    if (!seen && s[k] == '0') continue;
    seen = 1;
    if (nsig < sizeof sig - 1) sig[nsig++] = (char)s[k];
  }
  for (size_t k = frac0; k < frac1; k++) {
    if (!seen && s[k] == '0') continue;
    seen = 1;
    if (nsig < sizeof sig - 1) sig[nsig++] = (char)s[k];
  }
  while (nsig > 0 && sig[nsig - 1] == '0') nsig--;
  size_t nlim = sizeof json_overflow_digits - 1;
  for (size_t k = 0; k < nsig && k < nlim; k++)
    if (sig[k] != json_overflow_digits[k]) return sig[k] > json_overflow_digits[k];
  /* One is a prefix of the other: the longer is the larger (neither ends
   * in a zero). sig was cut at nlim + 1 digits, enough to tell. */
  return nsig >= nlim;
}

/* The significant digits of a decimal's text (no sign, point, exponent,
 * leading or trailing zeros) into out; returns their number. */
static size_t json_sig_digits(const char *t, char *out, size_t cap) {
  size_t n = 0;
  for (; *t && *t != 'e' && *t != 'E'; t++) {
    if (*t < '0' || *t > '9') continue;
    if (n == 0 && *t == '0') continue;
    if (n + 1 < cap) out[n++] = *t;
  }
  while (n > 0 && out[n - 1] == '0') n--;
  out[n] = 0;
  return n;
}

/* number = [ "-" ] int [ frac ] [ exp ], at p->pos (a '-' or a digit).
 * Beyond the grammar, pawl's policy (json.h): a number must fit a double,
 * and an integer written without fraction or exponent must read back as
 * itself from one. */
static int json_number(json_parser_t *p) {
  size_t start = p->pos;
  int plain = 1;
  int rc = json_number_syntax(p, &plain);
  p->plain = plain;
  if (rc || p->mode == JSON_GRAMMAR) return rc;
  size_t end = p->pos, len = end - start;
  const char *text = (const char *)p->s + start;
  int show = len > 24 ? 24 : (int)len;
  const char *more = len > 24 ? "..." : "";
  if (json_number_overflows(p, start, end))
    return json_fail(p, start,
                     "number %.*s%s is out of the range of a double "
                     "(about +-1.8e308)",
                     show, text, more);
  /* Up to 15 digits, every integer is exact. Longer ones fit the range
   * (checked above), so at most 309 digits. */
  if (plain && p->mode == JSON_POLICY && len - (text[0] == '-') > 15) {
    char tok[400], as[48], want[400], got[48];
    memcpy(tok, text, len);
    tok[len] = 0;
    double d = pawl__json_strtod(tok, NULL);
    pawl__json_number_text(d, as, sizeof as);
    json_sig_digits(tok, want, sizeof want);
    json_sig_digits(as, got, sizeof got);
    if (strcmp(want, got) != 0)
      return json_fail(p, start,
                       "integer %.*s%s would reach job code as %s (a double "
                       "holds about 16 digits): send it as a string (see "
                       "json.h)",
                       show, text, more, as);
  }
  return 0;
}

/* The grammar of a number; *plain = 0 if it has a fraction or exponent. */
static int json_number_syntax(json_parser_t *p, int *plain) {
  if (p->s[p->pos] == '-') {
    p->pos++;
    if (!json_digit(p, p->pos))
      return json_fail(p, p->pos, "expected a digit after '-' in number");
  }
  if (p->s[p->pos] == '0') {
    p->pos++;
    if (json_digit(p, p->pos))
      return json_fail(p, p->pos - 1, "leading zero in number");
  } else {
    while (json_digit(p, p->pos)) p->pos++;
  }
  if (p->pos < p->len && p->s[p->pos] == '.') {
    *plain = 0;
    p->pos++;
    if (!json_digit(p, p->pos))
      return json_fail(p, p->pos, "expected a digit after '.' in number");
    while (json_digit(p, p->pos)) p->pos++;
  }
  if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
    *plain = 0;
    p->pos++;
    if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
      p->pos++;
    if (!json_digit(p, p->pos))
      return json_fail(p, p->pos, "expected a digit in number exponent");
    while (json_digit(p, p->pos)) p->pos++;
  }
  return 0;
}

static int json_literal(json_parser_t *p, const char *word) {
  size_t n = strlen(word);
  if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
    return json_fail(p, p->pos, "invalid literal (expected '%s')", word);
  p->pos += n;
  return 0;
}

/* Opens a container at p->pos. */
static int json_push(json_parser_t *p) {
  if (p->depth >= JSON_MAX_DEPTH)
    return json_fail(p, p->pos, "nesting deeper than %d", JSON_MAX_DEPTH);
  p->open[p->depth] = p->s[p->pos];
  p->open_at[p->depth] = p->pos;
  p->depth++;
  p->pos++;
  return 0;
}

/* An object key and its ':' at p->pos (after whitespace); on success the
 * caller expects the member's value next. */
static int json_key(json_parser_t *p, int after_comma, size_t *end) {
  char name[16];
  if (p->pos >= p->len) return json_fail_eof(p);
  unsigned char c = p->s[p->pos];
  if (c != '"') {
    if (after_comma && c == '}')
      return json_fail(p, p->pos, "trailing comma before '}'");
    if (c == '\'')
      return json_fail(p, p->pos,
                       "object key in single quotes (JSON needs double "
                       "quotes)");
    return json_fail(p, p->pos,
                     after_comma ? "expected a double-quoted object key, "
                                   "found %s"
                                 : "expected a double-quoted object key or "
                                   "'}', found %s",
                     json_byte_name(c, name));
  }
  if (json_string(p, "object key") != 0) return -1;
  *end = p->pos;
  json_skip_ws(p);
  if (p->pos >= p->len) return json_fail_eof(p);
  if (p->s[p->pos] != ':')
    return json_fail(p, p->pos, "expected ':' after object key");
  p->pos++;
  return 0;
}

/* ---- the tokenizer (json.h) ------------------------------------------------
 *
 * A loop over the states below, with the explicit stack of open containers
 * in the lexer. It never recurses, so hostile input such as a million '['
 * costs a bounded amount of C stack and is refused as soon as it passes
 * JSON_MAX_DEPTH. */

enum {
  LX_START,      /* nothing read yet */
  LX_VALUE,      /* a value is expected (after ':', or ',' in an array) */
  LX_FIRST_KEY,  /* after '{': a key or '}' */
  LX_FIRST_ELEM, /* after '[': a value or ']' */
  LX_AFTER,      /* a value just ended */
  LX_DONE,
  LX_ERROR
};

void pawl__json_lex_init(pawl_json_lexer_t *lx, const char *s, size_t len,
                         int mode, char *err, size_t errlen) {
  lx->s = (const unsigned char *)s;
  lx->len = s ? len : 0;
  lx->pos = 0;
  lx->mode = mode;
  lx->state = LX_START;
  lx->err = err;
  lx->errlen = errlen;
  lx->escaped = lx->plain = 0;
  lx->depth = 0;
  if (err != NULL && errlen > 0) err[0] = '\0';
}

static inline int json_error(json_parser_t *p) {
  p->state = LX_ERROR;
  return -1;
}

/* A closing bracket at p->pos that ends the innermost container. */
static inline __attribute__((always_inline)) int
json_close(json_parser_t *p, pawl_json_tok_t *t, int kind) {
  t->kind = kind;
  t->start = p->pos++;
  t->end = p->pos;
  p->depth--;
  p->state = LX_AFTER;
  return kind;
}

/* A key at p->pos (after whitespace) as a token; a value follows. */
static inline __attribute__((always_inline)) int
json_key_tok(json_parser_t *p, pawl_json_tok_t *t, int after_comma) {
  size_t start = p->pos, end = start;
  if (json_key(p, after_comma, &end) != 0) return json_error(p);
  t->kind = JSON_TOK_KEY;
  t->start = start;
  t->end = end;
  t->escaped = p->escaped;
  p->state = LX_VALUE;
  return JSON_TOK_KEY;
}

/* Inlined into the validator's loop, so that checking a text costs what
 * it cost before the walk was split into tokens. */
static inline __attribute__((always_inline)) int
json_next(json_parser_t *p, pawl_json_tok_t *t) {
  char name[16];
  unsigned char c;
  switch (p->state) {
  case LX_VALUE: break;
  case LX_AFTER: {
    json_skip_ws(p);
    if (p->depth == 0) {
      if (p->pos < p->len) {
        json_fail(p, p->pos, "trailing characters after the JSON value");
        return json_error(p);
      }
      p->state = LX_DONE;
      t->kind = JSON_TOK_END;
      t->start = t->end = p->pos;
      return JSON_TOK_END;
    }
    if (p->pos >= p->len) {
      json_fail_eof(p);
      return json_error(p);
    }
    unsigned char open = p->open[p->depth - 1];
    c = p->s[p->pos];
    if (c == (open == '[' ? ']' : '}'))
      return json_close(p, t,
                        open == '[' ? JSON_TOK_ARRAY_END : JSON_TOK_OBJECT_END);
    if (c != ',') {
      json_fail(p, p->pos,
                open == '[' ? "expected ',' or ']' after array element, "
                              "found %s"
                            : "expected ',' or '}' after object member, "
                              "found %s",
                json_byte_name(c, name));
      return json_error(p);
    }
    p->pos++;
    if (open == '{') {
      json_skip_ws(p);
      return json_key_tok(p, t, 1);
    }
    p->state = LX_VALUE;
    break;
  }
  case LX_FIRST_KEY:
    json_skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == '}')
      return json_close(p, t, JSON_TOK_OBJECT_END);
    return json_key_tok(p, t, 0);
  case LX_FIRST_ELEM:
    json_skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ']')
      return json_close(p, t, JSON_TOK_ARRAY_END);
    p->state = LX_VALUE;
    break;
  case LX_START:
    json_skip_ws(p);
    if (p->pos >= p->len) {
      if (p->err != NULL && p->errlen > 0)
        snprintf(p->err, p->errlen, "empty input (expected a JSON value)");
      return json_error(p);
    }
    p->state = LX_VALUE;
    break;
  case LX_DONE:
    t->kind = JSON_TOK_END;
    t->start = t->end = p->pos;
    return JSON_TOK_END;
  default: return -1;
  }

  /* A value is expected at p->pos (whitespace not yet skipped). */
  json_skip_ws(p);
  if (p->pos >= p->len) {
    json_fail_eof(p);
    return json_error(p);
  }
  size_t start = p->pos;
  int rc = 0, kind;
  c = p->s[p->pos];
  switch (c) {
  case '{':
  case '[':
    if (json_push(p) != 0) return json_error(p);
    p->state = c == '{' ? LX_FIRST_KEY : LX_FIRST_ELEM;
    t->kind = c == '{' ? JSON_TOK_OBJECT : JSON_TOK_ARRAY;
    t->start = start;
    t->end = p->pos;
    return t->kind;
  case '"':
    rc = json_string(p, "string");
    kind = JSON_TOK_STRING;
    t->escaped = p->escaped;
    break;
  case 't': rc = json_literal(p, "true"), kind = JSON_TOK_TRUE; break;
  case 'f': rc = json_literal(p, "false"), kind = JSON_TOK_FALSE; break;
  case 'n': rc = json_literal(p, "null"), kind = JSON_TOK_NULL; break;
  case '-': case '0': case '1': case '2': case '3': case '4': case '5':
  case '6': case '7': case '8': case '9':
    rc = json_number(p);
    kind = JSON_TOK_NUMBER;
    t->plain = p->plain;
    break;
  case '\'':
    json_fail(p, p->pos, "string in single quotes (JSON needs double quotes)");
    return json_error(p);
  case ']': case '}':
    /* Only reachable right after a ',' or ':' (empty containers and a
     * closer after a value are handled above) or at the very start. */
    if (p->depth > 0 && p->open[p->depth - 1] == '[' && c == ']')
      json_fail(p, p->pos, "trailing comma before ']'");
    else
      json_fail(p, p->pos, "expected a JSON value, found '%c'", c);
    return json_error(p);
  default:
    json_fail(p, p->pos, "expected a JSON value, found %s",
              json_byte_name(c, name));
    return json_error(p);
  }
  if (rc != 0) return json_error(p);
  p->state = LX_AFTER;
  t->kind = kind;
  t->start = start;
  t->end = p->pos;
  return kind;
}

int pawl__json_next(pawl_json_lexer_t *lx, pawl_json_tok_t *t) {
  return json_next(lx, t);
}

int pawl__json_validate(const char *s, size_t len, char *err, size_t errlen) {
  return pawl__json_check(s, len, JSON_POLICY, err, errlen);
}

/* The validator: the tokenizer run to the end. */
int pawl__json_check(const char *s, size_t len, int mode, char *err,
                     size_t errlen) {
  json_parser_t p;
  pawl_json_tok_t t;
  pawl__json_lex_init(&p, s, len, mode, err, errlen);
  int k;
  while ((k = json_next(&p, &t)) > 0) {
  }
  return k;
}

/* ---- decoding strings -------------------------------------------------- */

static unsigned json_hex_value(const char *p) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    unsigned char c = (unsigned char)p[i];
    v = v << 4 | (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return v;
}

size_t pawl__json_unescape_one(const char *p, size_t n, char out[4],
                               size_t *used) {
  char e = n > 1 ? p[1] : '\\';
  *used = 2;
  switch (e) {
  case 'b': out[0] = '\b'; return 1;
  case 'f': out[0] = '\f'; return 1;
  case 'n': out[0] = '\n'; return 1;
  case 'r': out[0] = '\r'; return 1;
  case 't': out[0] = '\t'; return 1;
  case 'u': break;
  default: out[0] = e; return 1; /* " \ / */
  }
  uint32_t cp = json_hex_value(p + 2);
  *used = 6;
  if (cp >= 0xD800 && cp <= 0xDBFF && n >= 12 && p[6] == '\\' &&
      p[7] == 'u') {
    uint32_t lo = json_hex_value(p + 8);
    if (lo >= 0xDC00 && lo <= 0xDFFF) {
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      *used = 12;
    }
  }
  if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD; /* lone: JSON_GRAMMAR */
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | cp >> 12);
    out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | cp >> 18);
  out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
  out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

size_t pawl__json_unescape(const char *s, size_t n, char *out, size_t cap) {
  size_t i = 0, k = 0;
  while (i < n) {
    const char *q = memchr(s + i, '\\', n - i);
    size_t run = q ? (size_t)(q - (s + i)) : n - i;
    if (k < cap) memcpy(out + k, s + i, run < cap - k ? run : cap - k);
    k += run;
    i += run;
    if (i >= n) break;
    char u[4];
    size_t used, m = pawl__json_unescape_one(s + i, n - i, u, &used);
    for (size_t j = 0; j < m; j++, k++)
      if (k < cap) out[k] = u[j];
    i += used;
  }
  return k;
}

/* Whether a key's contents k[0..kn) (escapes undecoded) read name. */
static int json_key_is(const char *k, size_t kn, int escaped,
                       const char *name, size_t nl) {
  if (!escaped) return kn == nl && memcmp(k, name, nl) == 0;
  size_t i = 0, j = 0;
  while (i < kn) {
    if (k[i] != '\\') {
      if (j >= nl || k[i] != name[j]) return 0;
      i++, j++;
      continue;
    }
    char u[4];
    size_t used, m = pawl__json_unescape_one(k + i, kn - i, u, &used);
    if (j + m > nl || memcmp(u, name + j, m) != 0) return 0;
    i += used;
    j += m;
  }
  return j == nl;
}

/* ---- readers on the tokenizer ------------------------------------------ */

int pawl__json_members(const char *s, size_t len, int mode,
                       const char *const *names, size_t n, size_t (*spans)[2],
                       char *err, size_t errlen) {
  if (n > JSON_MEMBERS_MAX) {
    if (err && errlen)
      snprintf(err, errlen, "%zu member names asked for; at most %d", n,
               JSON_MEMBERS_MAX);
    return -1;
  }
  size_t nl[JSON_MEMBERS_MAX];
  for (size_t i = 0; i < n; i++) {
    nl[i] = strlen(names[i]);
    spans[i][0] = spans[i][1] = 0;
  }
  json_parser_t p;
  pawl_json_tok_t t;
  pawl__json_lex_init(&p, s, len, mode, err, errlen);
  int k = json_next(&p, &t);
  if (k < 0) return -1;
  if (k != JSON_TOK_OBJECT) {
    if (err && errlen) snprintf(err, errlen, "expected a JSON object");
    return -1;
  }
  while ((k = json_next(&p, &t)) > 0) {
    if (k != JSON_TOK_KEY || p.depth != 1) continue;
    const char *kt = s + t.start + 1;
    size_t kn = t.end - t.start - 2;
    int escaped = t.escaped;
    /* The value: one token, or a container up to its closing bracket. */
    if ((k = json_next(&p, &t)) < 0) return -1;
    size_t vstart = t.start;
    if (k == JSON_TOK_OBJECT || k == JSON_TOK_ARRAY)
      while (p.depth > 1)
        if (json_next(&p, &t) < 0) return -1;
    for (size_t i = 0; i < n; i++)
      if (json_key_is(kt, kn, escaped, names[i], nl[i])) {
        spans[i][0] = vstart;
        spans[i][1] = t.end;
      }
  }
  return k;
}

int pawl__json_is_object(const char *s, size_t len) {
  json_parser_t p;
  pawl_json_tok_t t;
  pawl__json_lex_init(&p, s, len, JSON_POLICY, NULL, 0);
  int k = pawl__json_next(&p, &t), first = k;
  while (k > 0) k = pawl__json_next(&p, &t);
  return k == 0 && first == JSON_TOK_OBJECT;
}
