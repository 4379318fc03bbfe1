/* test_redact_json.c: secret members of payloads hidden in admin views
 * (host/core/redact_json.c). */
#include "buf.h"
#include "json.h"
#include "redact.h"
#include "unit.h"

#define R "\"<redacted>\""

/* json redacted with `names` (NULL-terminated, or NULL); the text, or
 * "ERR:" and the message. Caller frees. */
static char *rj(const char *json, const char *const *names) {
  size_t n = 0;
  while (names && names[n]) n++;
  pawl_buf_t b;
  pawl__buf_init(&b);
  char err[200];
  int rc = pawl__redact_json(json, strlen(json), names, n, &b, err, sizeof err);
  char *out;
  if (rc) {
    CHECK(err[0] != 0);
    out = malloc(strlen(err) + 5);
    sprintf(out, "ERR:%s", err);
  } else {
    out = strdup(pawl__buf_cstr(&b));
  }
  pawl__buf_free(&b);
  return out;
}

#define EXPECT(json, names, want)                                            \
  do {                                                                       \
    char *got_ = rj(json, names);                                            \
    CHECK_STR(got_, want);                                                   \
    free(got_);                                                              \
  } while (0)

void test_redact_json_words(void) {
  /* Each word, as a substring, in any case; the value whatever it is. */
  EXPECT("{\"password\":\"hunter2\",\"user\":\"ada\"}", NULL,
         "{\"password\":" R ",\"user\":\"ada\"}");
  EXPECT("{\"DB_PASSWD\":1,\"x\":2}", NULL, "{\"DB_PASSWD\":" R ",\"x\":2}");
  EXPECT("{\"accessToken\":null}", NULL, "{\"accessToken\":" R "}");
  EXPECT("{\"client_secret\":true}", NULL, "{\"client_secret\":" R "}");
  EXPECT("{\"Authorization\":\"Bearer x\"}", NULL, "{\"Authorization\":" R "}");
  EXPECT("{\"Set-Cookie\":[\"a\",\"b\"]}", NULL, "{\"Set-Cookie\":" R "}");
  EXPECT("{\"stripe_api_key\":\"sk\"}", NULL, "{\"stripe_api_key\":" R "}");
  EXPECT("{\"apiKey\":{\"a\":1}}", NULL, "{\"apiKey\":" R "}");
  EXPECT("{\"credentials\":{\"user\":\"u\",\"pw\":[1,2,{\"x\":\"}]\"}]}}",
         NULL, "{\"credentials\":" R "}");
  /* Keys that hold no word stay; "key" is a substring rule, on purpose
   * broad (monkey is hidden too: --raw shows it). */
  EXPECT("{\"user\":\"ada\",\"pass\":\"x\",\"n\":1}", NULL,
         "{\"user\":\"ada\",\"pass\":\"x\",\"n\":1}");
  EXPECT("{\"monkey\":1}", NULL, "{\"monkey\":" R "}");
  /* A value that names a word is not a key. */
  EXPECT("[\"password\",{\"note\":\"token\"}]", NULL,
         "[\"password\",{\"note\":\"token\"}]");
}

void test_redact_json_escaped_keys(void) {
  /* The key is looked at decoded: escapes, surrogate pairs. */
  EXPECT("{\"pass\\u0077ord\":\"x\"}", NULL, "{\"pass\\u0077ord\":" R "}");
  EXPECT("{\"\\u0050ASSWORD\":\"x\"}", NULL, "{\"\\u0050ASSWORD\":" R "}");
  EXPECT("{\"to\\u006ben\":\"x\"}", NULL, "{\"to\\u006ben\":" R "}");
  EXPECT("{\"a\\\"secret\":1}", NULL, "{\"a\\\"secret\":" R "}");
  EXPECT("{\"\\ud83d\\ude00token\":1,\"\\ud83d\\ude00\":2}", NULL,
         "{\"\\ud83d\\ude00token\":" R ",\"\\ud83d\\ude00\":2}");
  /* A type's own name matches the decoded key exactly. */
  static const char *const names[] = {"ssn", "card\"no", NULL};
  EXPECT("{\"\\u0073sn\":\"123\",\"SSN\":\"4\",\"ssn2\":5,\"card\\\"no\":6}",
         names,
         "{\"\\u0073sn\":" R ",\"SSN\":\"4\",\"ssn2\":5,\"card\\\"no\":" R "}");
}

void test_redact_json_depth_and_arrays(void) {
  static const char *const names[] = {"ssn", NULL};
  EXPECT("{\"users\":[{\"name\":\"a\",\"ssn\":\"1\"},{\"name\":\"b\","
         "\"token\":[1,[2]]},[{\"secret\":{}}]],\"ok\":[]}",
         names,
         "{\"users\":[{\"name\":\"a\",\"ssn\":" R "},{\"name\":\"b\","
         "\"token\":" R "},[{\"secret\":" R "}]],\"ok\":[]}");
  /* At the depth limit and one past it. */
  char deep[4 * JSON_MAX_DEPTH + 64], want[4 * JSON_MAX_DEPTH + 64];
  size_t k = 0;
  for (int i = 0; i < JSON_MAX_DEPTH - 1; i++) deep[k++] = '[';
  k += (size_t)sprintf(deep + k, "{\"key\":1}");
  for (int i = 0; i < JSON_MAX_DEPTH - 1; i++) deep[k++] = ']';
  deep[k] = 0;
  snprintf(want, sizeof want, "%s", deep);
  char *at = strstr(want, "1}");
  memmove(at + strlen(R), at + 1, strlen(at + 1) + 1);
  memcpy(at, R, strlen(R));
  EXPECT(deep, NULL, want);
  k = 0;
  for (int i = 0; i < JSON_MAX_DEPTH + 1; i++) deep[k++] = '[';
  for (int i = 0; i < JSON_MAX_DEPTH + 1; i++) deep[k++] = ']';
  deep[k] = 0;
  char *got = rj(deep, NULL);
  CHECK(strncmp(got, "ERR:", 4) == 0 && strstr(got, "deeper than 512"));
  free(got);
  /* A secret value that nests too deep is refused too, not skipped. */
  k = (size_t)sprintf(deep, "{\"token\":");
  for (int i = 0; i < JSON_MAX_DEPTH; i++) deep[k++] = '[';
  for (int i = 0; i < JSON_MAX_DEPTH; i++) deep[k++] = ']';
  deep[k++] = '}';
  deep[k] = 0;
  got = rj(deep, NULL);
  CHECK(strncmp(got, "ERR:", 4) == 0);
  free(got);
}

void test_redact_json_keeps_text(void) {
  /* Numbers keep every digit, members their order, whitespace and
   * escapes stay as written (PostgreSQL's jsonb text has spaces). */
  const char *in = "{\"z\": 123456789012345678901234567890.000000000001e-7, "
                   "\"a\": -0.0, \"m\": \"\\u00e9\\n\\/\",\n \"token\" : "
                   "\"x\" , \"b\":[ 1 , 2 ]}";
  EXPECT(in, NULL,
         "{\"z\": 123456789012345678901234567890.000000000001e-7, \"a\": "
         "-0.0, \"m\": \"\\u00e9\\n\\/\",\n \"token\" : " R
         " , \"b\":[ 1 , 2 ]}");
  EXPECT("  \"secret\"  ", NULL, "  \"secret\"  ");
  EXPECT("42", NULL, "42");
  EXPECT("{}", NULL, "{}");
  EXPECT("[]", NULL, "[]");
  EXPECT("null", NULL, "null");
  /* A key of more than 1 KiB counts as secret (never looked at in
   * pieces). */
  char big[1200 + 16];
  memset(big, 'a', sizeof big);
  big[0] = '{';
  big[1] = '"';
  sprintf(big + 1100, "\":1}");
  char *got = rj(big, NULL);
  CHECK(strstr(got, ":" R "}") != NULL);
  free(got);
}

void test_redact_json_invalid(void) {
  /* Stored payloads passed pawl's JSON check; anything else is an error
   * (the view shows a placeholder), never half-copied silently. */
  static const char *const bad[] = {
      "", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "[1,]", "[1 2]",
      "{\"token\":", "{\"token\":[1,2}", "{\"token\":\"abc", "{a:1}",
      "{\"a\":1}x", "\"\\q\"", "\"\\u12\"", "tru", "{\"a\":1]", "]",
      "{\"token\":]}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *got = rj(bad[i], NULL);
    if (strncmp(got, "ERR:not JSON: ", 14) != 0)
      unit_fail(__FILE__, __LINE__, "%s -> %s", bad[i], got);
    free(got);
  }
}
