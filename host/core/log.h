/* log.h: the host's event log: one line per event, text or JSON.
 *
 * A line is built with pawl__log_begin(), fields are added, pawl__log_end() writes it
 * with one write under the logger's lock, so lines from different threads
 * never interleave. Building a line below the logger's level costs nothing
 * beyond the level check. */
#ifndef PAWL_LOG_H
#define PAWL_LOG_H

#include <pthread.h>
#include <stdint.h>

#include "buf.h"
#include "pawl.h"

typedef struct host_logger {
  _Atomic int level;    /* PAWL_LOG_* at or above which lines are written
                           (pawl_log_level() changes it while threads log) */
  int json;             /* 1: JSON lines */
  pawl_log_fn fn;       /* NULL: stderr */
  void *data;
  pthread_mutex_t lock;
} host_logger_t;

typedef struct log_line {
  host_logger_t *lg;
  int on;               /* 0: below level, every call is a no-op */
  int level;
  pawl_buf_t buf;
} log_line_t;

void pawl__log_init(host_logger_t *lg, int level, int json, pawl_log_fn fn,
              void *data);
void pawl__log_destroy(host_logger_t *lg);

void pawl__log_begin(log_line_t *l, host_logger_t *lg, int level, const char *msg);
void pawl__log_str(log_line_t *l, const char *key, const char *value);
void pawl__log_int(log_line_t *l, const char *key, int64_t value);
void pawl__log_num(log_line_t *l, const char *key, double value);
void pawl__log_id(log_line_t *l, const char *key, const pawl_id_t *id);
void pawl__log_end(log_line_t *l);

/* "debug", "info", "warn", "error"; PAWL_EINVAL for others. */
int pawl__log_level_parse(const char *name);
const char *pawl__log_level_name(int level);

#endif
