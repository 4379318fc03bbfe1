/* json.c: strict RFC 8259 JSON validator; see json.h.
 *
 * The validator is a loop over two states, "a value is expected" and "a
 * value just ended", with an explicit stack of open containers. It never
 * recurses, so hostile input such as a million '[' costs a bounded amount of
 * C stack and is rejected as soon as it passes JSON_MAX_DEPTH. */
#include "json.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct json_parser {
  const unsigned char *s;
  size_t len;
  size_t pos;
  char *err;
  size_t errlen;
  size_t depth;
  /* Opening byte ('[' or '{') and its offset for each open container; the
   * offset lets an end-of-input error say which container is unclosed. */
  unsigned char open[JSON_MAX_DEPTH];
  size_t open_at[JSON_MAX_DEPTH];
} json_parser_t;

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

size_t json_utf8_len(const unsigned char *p, size_t n) {
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

/* A string starting at the '"' at p->pos; leaves pos after the closing
 * quote. `what` ("string" or "object key") makes messages more precise. */
static int json_string(json_parser_t *p, const char *what) {
  size_t start = p->pos++;
  char name[16];
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
      if (esc + 1 >= p->len) return json_fail_eof_in(p, what, start);
      unsigned char e = p->s[esc + 1];
      switch (e) {
      case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r':
      case 't':
        p->pos += 2;
        continue;
      case 'u':
        for (size_t i = 0; i < 4; i++) {
          if (esc + 2 + i >= p->len)
            return json_fail_eof_in(p, what, start);
          if (!json_is_hex(p->s[esc + 2 + i]))
            return json_fail(p, esc,
                             "invalid \\u escape in %s: %s is not a hex "
                             "digit",
                             what, json_byte_name(p->s[esc + 2 + i], name));
        }
        /* Lone surrogates are accepted on purpose: see json.h. */
        p->pos += 6;
        continue;
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
    size_t k = json_utf8_len(p->s + p->pos, p->len - p->pos);
    if (k == 0)
      return json_fail(p, p->pos, "invalid UTF-8 (byte 0x%02x) in %s", c,
                       what);
    p->pos += k;
  }
}

static int json_digit(const json_parser_t *p, size_t at) {
  return at < p->len && p->s[at] >= '0' && p->s[at] <= '9';
}

/* number = [ "-" ] int [ frac ] [ exp ], at p->pos (a '-' or a digit). */
static int json_number(json_parser_t *p) {
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
    p->pos++;
    if (!json_digit(p, p->pos))
      return json_fail(p, p->pos, "expected a digit after '.' in number");
    while (json_digit(p, p->pos)) p->pos++;
  }
  if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
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
static int json_key(json_parser_t *p, int after_comma) {
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
  json_skip_ws(p);
  if (p->pos >= p->len) return json_fail_eof(p);
  if (p->s[p->pos] != ':')
    return json_fail(p, p->pos, "expected ':' after object key");
  p->pos++;
  return 0;
}

int json_validate(const char *s, size_t len, char *err, size_t errlen) {
  /* The parser holds the 512-entry stack (about 4.5 KB): fine on any thread
   * stack, and it avoids a heap allocation per call. */
  json_parser_t p;
  p.s = (const unsigned char *)s;
  p.len = s ? len : 0;
  p.pos = 0;
  p.err = err;
  p.errlen = errlen;
  p.depth = 0;
  if (err != NULL && errlen > 0) err[0] = '\0';

  json_skip_ws(&p);
  if (p.pos >= p.len) {
    if (err != NULL && errlen > 0)
      snprintf(err, errlen, "empty input (expected a JSON value)");
    return -1;
  }

  char name[16];
  for (;;) {
    /* State 1: a value is expected at p.pos (whitespace not yet skipped). */
    json_skip_ws(&p);
    if (p.pos >= p.len) return json_fail_eof(&p);
    unsigned char c = p.s[p.pos];
    int rc = 0;
    switch (c) {
    case '{':
      if (json_push(&p) != 0) return -1;
      json_skip_ws(&p);
      if (p.pos < p.len && p.s[p.pos] == '}') {
        p.pos++;
        p.depth--;
        break; /* empty object: a complete value */
      }
      if (json_key(&p, 0) != 0) return -1;
      continue; /* the member's value */
    case '[':
      if (json_push(&p) != 0) return -1;
      json_skip_ws(&p);
      if (p.pos < p.len && p.s[p.pos] == ']') {
        p.pos++;
        p.depth--;
        break; /* empty array */
      }
      continue; /* the first element */
    case '"': rc = json_string(&p, "string"); break;
    case 't': rc = json_literal(&p, "true"); break;
    case 'f': rc = json_literal(&p, "false"); break;
    case 'n': rc = json_literal(&p, "null"); break;
    case '-': case '0': case '1': case '2': case '3': case '4': case '5':
    case '6': case '7': case '8': case '9':
      rc = json_number(&p);
      break;
    case '\'':
      return json_fail(&p, p.pos,
                       "string in single quotes (JSON needs double quotes)");
    case ']': case '}':
      /* Only reachable right after a ',' (empty containers and a closer
       * after a value are handled elsewhere) or at the very start. */
      if (p.depth > 0 && p.open[p.depth - 1] == '[' && c == ']')
        return json_fail(&p, p.pos, "trailing comma before ']'");
      return json_fail(&p, p.pos, "expected a JSON value, found '%c'", c);
    default:
      return json_fail(&p, p.pos, "expected a JSON value, found %s",
                       json_byte_name(c, name));
    }
    if (rc != 0) return -1;

    /* State 2: a value just ended; close containers until one continues
     * with ',' or the top-level value is complete. */
    for (;;) {
      json_skip_ws(&p);
      if (p.depth == 0) {
        if (p.pos < p.len)
          return json_fail(&p, p.pos,
                           "trailing characters after the JSON value");
        return 0;
      }
      if (p.pos >= p.len) return json_fail_eof(&p);
      unsigned char open = p.open[p.depth - 1];
      unsigned char close = open == '[' ? ']' : '}';
      c = p.s[p.pos];
      if (c == close) {
        p.pos++;
        p.depth--;
        continue;
      }
      if (c != ',')
        return json_fail(&p, p.pos,
                         open == '[' ? "expected ',' or ']' after array "
                                       "element, found %s"
                                     : "expected ',' or '}' after object "
                                       "member, found %s",
                         json_byte_name(c, name));
      p.pos++;
      if (open == '{') {
        json_skip_ws(&p);
        if (json_key(&p, 1) != 0) return -1;
      }
      break; /* back to state 1 for the next element or member value */
    }
  }
}

int json_is_object(const char *s, size_t len) {
  if (json_validate(s, len, NULL, 0) != 0) return 0;
  size_t i = 0;
  while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' ||
                     s[i] == '\r'))
    i++;
  return s[i] == '{';
}
