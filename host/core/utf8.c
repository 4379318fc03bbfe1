/* utf8.c: text made safe for every backend (see utf8.h). */
#include "alloc.h"
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

#include "json.h"

char *pawl__utf8_scrub(const char *s, size_t len, size_t *outlen) {
  /* At most three bytes (U+FFFD) for each byte in. */
  if (len > ((size_t)-1 - 1) / 3) return NULL;
  char *out = pawl__malloc(len * 3 + 1);
  if (!out) return NULL;
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0, k = 0;
  while (i < len) {
    size_t n = p[i] ? pawl__json_utf8_len(p + i, len - i) : 0;
    if (n) {
      memcpy(out + k, p + i, n);
      k += n;
      i += n;
    } else {
      memcpy(out + k, "\xef\xbf\xbd", 3);
      k += 3;
      i++;
    }
  }
  out[k] = 0;
  if (outlen) *outlen = k;
  return out;
}

void pawl__utf8_json_no_nul(char *json) {
  int in_string = 0;
  for (char *c = json; *c; c++) {
    if (!in_string) {
      if (*c == '"') in_string = 1;
      continue;
    }
    if (*c == '"') {
      in_string = 0;
    } else if (*c == '\\') {
      if (c[1] == 'u' && strncmp(c + 2, "0000", 4) == 0) {
        memcpy(c + 2, "fffd", 4);
        c += 5;
      } else if (c[1]) {
        c++; /* the escaped character, whatever it is */
      }
    }
  }
}
