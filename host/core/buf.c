/* buf.c: growable byte buffer; see buf.h. */
#include "alloc.h"
#include "buf.h"
#include "json.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* First allocation size: most buffers hold a short message or one SQL
 * statement, so start small enough to be cheap and big enough to rarely
 * regrow. */
#define BUF_MIN_CAP 64

void pawl__buf_init(pawl_buf_t *b) {
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
  b->oom = 0;
}

void pawl__buf_free(pawl_buf_t *b) {
  pawl__free(b->data);
  pawl__buf_init(b);
}

void pawl__buf_reset(pawl_buf_t *b) {
  b->len = 0;
  b->oom = 0;
  if (b->data != NULL) b->data[0] = '\0';
}

/* Makes room for n more bytes plus the NUL. Returns 0, or -1 with b->oom set
 * (also when len + n + 1 would overflow, so a bogus length cannot wrap into
 * a small allocation and a buffer overrun). */
static int buf_reserve(pawl_buf_t *b, size_t n) {
  if (b->oom) return -1;
  if (n > SIZE_MAX - 1 - b->len) {
    b->oom = 1;
    return -1;
  }
  size_t need = b->len + n + 1;
  if (need <= b->cap) return 0;
  /* Doubling keeps appends amortised O(1); fall back to the exact size
   * when doubling would overflow. */
  size_t cap = b->cap ? b->cap : BUF_MIN_CAP;
  while (cap < need) {
    if (cap > SIZE_MAX / 2) {
      cap = need;
      break;
    }
    cap *= 2;
  }
  char *p = pawl__realloc(b->data, cap);
  if (p == NULL) {
    b->oom = 1;
    return -1;
  }
  if (b->data == NULL) p[0] = '\0';
  b->data = p;
  b->cap = cap;
  return 0;
}

void pawl__buf_append(pawl_buf_t *b, const void *p, size_t n) {
  if (n == 0 || buf_reserve(b, n) != 0) return;
  memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void pawl__buf_puts(pawl_buf_t *b, const char *s) { pawl__buf_append(b, s, strlen(s)); }

void pawl__buf_putc(pawl_buf_t *b, char c) { pawl__buf_append(b, &c, 1); }

void pawl__buf_printf(pawl_buf_t *b, const char *fmt, ...) {
  if (b->oom) return;
  /* Try to format into the spare room first: the common short case then
   * costs one vsnprintf and no extra allocation. */
  size_t room = b->cap > b->len ? b->cap - b->len : 0;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(room ? b->data + b->len : NULL, room, fmt, ap);
  va_end(ap);
  if (n < 0) {
    /* vsnprintf may have scribbled into the spare room; restore the NUL. */
    if (b->data != NULL) b->data[b->len] = '\0';
    return;
  }
  if ((size_t)n < room) {
    b->len += (size_t)n;
    return;
  }
  if (buf_reserve(b, (size_t)n) != 0) {
    if (b->data != NULL) b->data[b->len] = '\0';
    return;
  }
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

const char *pawl__buf_cstr(pawl_buf_t *b) { return b->data ? b->data : ""; }

char *pawl__buf_detach(pawl_buf_t *b) {
  char *out = NULL;
  if (!b->oom) {
    if (b->data != NULL) {
      /* Hand over the allocation itself: no copy. Shrinking is not worth a
       * realloc, the caller usually frees the string soon. */
      out = b->data;
      b->data = NULL;
    } else {
      out = pawl__malloc(1);
      if (out != NULL) out[0] = '\0';
    }
  }
  pawl__buf_free(b);
  return out;
}

void pawl__buf_json_string(pawl_buf_t *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  /* s may be NULL when n == 0, and even NULL + 0 is undefined behaviour. */
  if (n == 0) {
    pawl__buf_append(b, "\"\"", 2);
    return;
  }
  const unsigned char *p = (const unsigned char *)s;
  /* Most strings need no escaping: reserve for the plain case up front and
   * copy runs of plain bytes with one append each. */
  if (n < SIZE_MAX - 2) buf_reserve(b, n + 2);
  pawl__buf_putc(b, '"');
  size_t i = 0, run = 0; /* p[run..i) is plain text not yet appended */
  while (i < n && !b->oom) {
    unsigned char c = p[i];
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      i++;
      continue;
    }
    if (c >= 0x80) {
      size_t k = pawl__json_utf8_len(p + i, n - i);
      if (k > 0) {
        i += k;
        continue;
      }
    }
    pawl__buf_append(b, p + run, i - run);
    switch (c) {
    case '"': pawl__buf_append(b, "\\\"", 2); break;
    case '\\': pawl__buf_append(b, "\\\\", 2); break;
    case '\n': pawl__buf_append(b, "\\n", 2); break;
    case '\r': pawl__buf_append(b, "\\r", 2); break;
    case '\t': pawl__buf_append(b, "\\t", 2); break;
    case '\b': pawl__buf_append(b, "\\b", 2); break;
    case '\f': pawl__buf_append(b, "\\f", 2); break;
    default:
      if (c == 0) {
        /* pawl's JSON has no \u0000 (json.h): a NUL is replaced like a
         * bad byte, so the output stays storable on every backend. */
        pawl__buf_append(b, "\\ufffd", 6);
      } else if (c < 0x20) {
        char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        pawl__buf_append(b, u, 6);
      } else {
        /* One replacement per bad byte: resynchronising at the next byte
         * never swallows a valid character that follows a broken one. */
        pawl__buf_append(b, "\\ufffd", 6);
      }
    }
    i++;
    run = i;
  }
  pawl__buf_append(b, p + run, i - run);
  pawl__buf_putc(b, '"');
}
