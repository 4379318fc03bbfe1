/* test_log.c: the host's event log (host/core/log.c): whatever text a job hands
 * it, a line stays one line and no control character reaches the reader's
 * terminal, in text and in JSON mode. */
#include "unit.h"

#include "log.h"

/* The last line the logger wrote. */
static char last_line[4096];

static void capture(void *data, int level, const char *line) {
  (void)data;
  (void)level;
  snprintf(last_line, sizeof last_line, "%s", line);
}

/* Logs `msg` with one field `text`, in text (json = 0) or JSON mode, and
 * returns the line. */
static const char *log_one(int json, const char *msg, const char *text) {
  host_logger_t lg;
  pawl__log_init(&lg, PAWL_LOG_DEBUG, json, capture, NULL);
  log_line_t line;
  pawl__log_begin(&line, &lg, PAWL_LOG_INFO, msg);
  pawl__log_str(&line, "text", text);
  pawl__log_end(&line);
  pawl__log_destroy(&lg);
  return last_line;
}

/* One line, ending in its newline, with no byte that a terminal obeys. */
static void check_clean(const char *line) {
  size_t n = strlen(line);
  CHECK(n > 0 && line[n - 1] == '\n');
  const unsigned char *p = (const unsigned char *)line;
  for (size_t i = 0; i + 1 < n; i++) {
    if (p[i] < 0x20 || p[i] == 0x7f)
      unit_fail(__FILE__, __LINE__, "byte 0x%02x at %zu in: %s", p[i], i, line);
    if (p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f)
      unit_fail(__FILE__, __LINE__, "a C1 control at %zu in: %s", i, line);
    if (p[i] == 0xe2 && p[i + 1] == 0x80 && i + 2 < n &&
        ((p[i + 2] >= 0xa8 && p[i + 2] <= 0xae)))
      unit_fail(__FILE__, __LINE__, "U+2028..202E at %zu in: %s", i, line);
    if (p[i] >= 0xf8 || p[i] == 0xc0 || p[i] == 0xc1)
      unit_fail(__FILE__, __LINE__, "invalid UTF-8 at %zu in: %s", i, line);
  }
}

static const char *const nasty[] = {
    "line one\n2026-01-01T00:00:00.000Z error forged job=x",
    "carriage\rreturn", "esc \x1b[31mred\x1b[0m", "bell\a and nul-free",
    "del \x7f", "csi \xc2\x9b" "31m", "nel \xc2\x85", "rlo \xe2\x80\xae",
    "lsep \xe2\x80\xa8", "fsi \xe2\x81\xa8", "bad \xff\xfe", "cut \xe2\x82",
    "overlong \xc0\xaf", "surrogate \xed\xa0\x80",
};

void test_log_escapes_text(void) {
  for (size_t i = 0; i < sizeof nasty / sizeof nasty[0]; i++) {
    check_clean(log_one(0, nasty[i], nasty[i]));
  }
  /* A message with a newline is quoted and escaped, and a field it tries
   * to forge stays inside the quotes. */
  const char *l = log_one(0, "a\nb job=forged", "v");
  CHECK(strstr(l, " info  \"a\\nb job=forged\" text=v\n") != NULL);
  l = log_one(0, "esc\x1b[2J", "x\x1b");
  CHECK(strstr(l, "\"esc\\u001b[2J\" text=\"x\\u001b\"") != NULL);
  l = log_one(0, "c1 \xc2\x9b and del \x7f", "bad\xff");
  CHECK(strstr(l, "\"c1 \\u009b and del \\u007f\" text=\"bad\\ufffd\"") != NULL);
  /* Ordinary text, UTF-8 included, is written as it is. */
  l = log_one(0, "job succeeded", "caf\xc3\xa9");
  CHECK(strstr(l, " info  job succeeded text=caf\xc3\xa9\n") != NULL);
  /* Values with spaces, quotes, '=' or backslashes are quoted. */
  l = log_one(0, "m", "a b=\"c\\");
  CHECK(strstr(l, " text=\"a b=\\\"c\\\\\"\n") != NULL);
}

void test_log_escapes_json(void) {
  for (size_t i = 0; i < sizeof nasty / sizeof nasty[0]; i++) {
    check_clean(log_one(1, nasty[i], nasty[i]));
  }
  const char *l = log_one(1, "a\nb\x1b \xc2\x9b \x7f \xe2\x80\xae \xff", "v");
  CHECK(strstr(l, "\"msg\":\"a\\nb\\u001b \\u009b \\u007f \\u202e \\ufffd\"") != NULL);
  l = log_one(1, "caf\xc3\xa9 \xe2\x82\xac", "\xf0\x9f\x98\x80");
  CHECK(strstr(l, "\"msg\":\"caf\xc3\xa9 \xe2\x82\xac\",\"text\":\"\xf0\x9f\x98\x80\"}") != NULL);
}
