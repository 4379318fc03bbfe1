/* buf.h: a growable byte buffer for building messages, SQL and JSON.
 *
 * Out-of-memory handling is sticky: the first failed allocation sets
 * b->oom = 1 and every later append is a no-op, so a caller can build a whole
 * document with unchecked calls and test b->oom once at the end. Whenever
 * data != NULL it is NUL-terminated at data[len], so pawl__buf_cstr() is free.
 *
 * A zeroed pawl_buf_t is a valid empty buffer (same as pawl__buf_init). */
#ifndef PAWL_BUF_H
#define PAWL_BUF_H

#include <stddef.h>

typedef struct pawl_buf {
  char *data; /* NULL until the first append, else NUL-terminated */
  size_t len; /* bytes used, excluding the NUL */
  size_t cap; /* bytes allocated, including room for the NUL */
  int oom;    /* 1 once an allocation failed; appends are then no-ops */
} pawl_buf_t;

/* Empty, owning nothing. */
void pawl__buf_init(pawl_buf_t *b);
/* Frees the memory and returns to the pawl__buf_init state (oom cleared). */
void pawl__buf_free(pawl_buf_t *b);
/* len = 0 and oom cleared, keeping the memory for reuse. */
void pawl__buf_reset(pawl_buf_t *b);

/* Appends n bytes from p (p may be NULL when n == 0). */
void pawl__buf_append(pawl_buf_t *b, const void *p, size_t n);
void pawl__buf_puts(pawl_buf_t *b, const char *s);
void pawl__buf_putc(pawl_buf_t *b, char c);
/* printf-style append. An encoding error from vsnprintf appends nothing. */
void pawl__buf_printf(pawl_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Borrowed NUL-terminated view of the contents; "" when empty. Valid until
 * the next change to b. Contents may be truncated when b->oom is set. */
const char *pawl__buf_cstr(pawl_buf_t *b);

/* Hands the contents to the caller as a malloc'd NUL-terminated string (free
 * it with pawl__free()) and leaves b empty as after pawl__buf_init. Returns NULL, still
 * emptying b, if b->oom was set or the copy could not be allocated. */
char *pawl__buf_detach(pawl_buf_t *b);

/* Appends s[0..n) as a double-quoted JSON string. Escapes '"', '\\' and
 * every control character below 0x20 (\n \r \t \b \f by name, the rest as
 * \u00XX, but NUL, which pawl's JSON excludes (json.h), becomes \ufffd).
 * Valid UTF-8 is copied as is. Each byte that is not part of a
 * well-formed UTF-8 sequence (bad lead byte, stray continuation byte,
 * truncated sequence, overlong form, UTF-16 surrogate, above U+10FFFF) is
 * replaced by \ufffd, so the output is always valid JSON whatever the input.
 * s may be NULL when n == 0. */
void pawl__buf_json_string(pawl_buf_t *b, const char *s, size_t n);

#endif
