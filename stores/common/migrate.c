/* migrate.c: the migration checksums every backend records and checks,
 * and the rule for migrations whose comments alone were edited after they
 * shipped (migration_comment_edits.h, beside this file). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "iso8601.h"
#include "redact.h"
#include "store.h"

/* CRC-32 (IEEE 802.3, reflected), bit by bit: it runs once per migration at
 * start-up, so a table would buy nothing. */
static uint32_t store_crc32_add(uint32_t crc, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) {
    crc ^= p[i];
    for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
  }
  return crc;
}

uint32_t pawl__store_crc32(const void *data, size_t len) {
  return ~store_crc32_add(0xffffffffu, data, len);
}

/* CRC-32 of a migration's text without its comment-only lines (those whose
 * first characters after blanks are "--"), each kept line with its end. */
static uint32_t store_crc32_code(const char *sql, size_t len) {
  uint32_t crc = 0xffffffffu;
  size_t i = 0;
  while (i < len) {
    size_t end = i;
    while (end < len && sql[end] != '\n') end++;
    if (end < len) end++; /* the line's end belongs to it */
    size_t k = i;
    while (k < end && (sql[k] == ' ' || sql[k] == '\t')) k++;
    int comment = k + 1 < end && sql[k] == '-' && sql[k + 1] == '-';
    if (!comment) crc = store_crc32_add(crc, sql + i, end - i);
    i = end;
  }
  return ~crc;
}

/* Migrations whose comments were edited after they shipped (they cited
 * the tracker's numbers, which a reader of the schema cannot look up): a
 * database records the checksum of the text as shipped, which is still
 * accepted as long as the text without its comment lines is what it was
 * (`code`). Changing a statement of one of these files is refused like any
 * other edit. The sums are those of the files as shipped and as they are. */
static const struct {
  const char *backend, *name, *shipped, *code;
} store_comment_edits[] = {
#include "migration_comment_edits.h"
};

int pawl__store_sum_ok(const char *backend, const store_migration_t *m,
                       const char *recorded, char want[16]) {
  snprintf(want, 16, "%08x", pawl__store_crc32(m->sql, m->len));
  if (!recorded) return 0;
  if (!strcmp(recorded, want)) return 1;
  for (size_t i = 0; i < sizeof store_comment_edits / sizeof *store_comment_edits;
       i++) {
    if (strcmp(store_comment_edits[i].backend, backend) ||
        strcmp(store_comment_edits[i].name, m->name) ||
        strcmp(store_comment_edits[i].shipped, recorded))
      continue;
    char code[16];
    snprintf(code, sizeof code, "%08x", store_crc32_code(m->sql, m->len));
    return !strcmp(code, store_comment_edits[i].code);
  }
  return 0;
}
