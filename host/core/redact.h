/* redact.h: keeping database passwords out of what pawl shows.
 *
 * A database URL may carry a password: in a libpq URI's user information
 * (postgres://alice:pw@host/db), in its query (?password=pw), or as a
 * keyword of a connection string (postgres:host=x password=pw). Messages
 * about a connection (libpq's own, which quote a malformed URL or one of
 * its tokens, and pawl's) go to logs, terminals and pawl_errmsg(), so every
 * one that mentions a URL passes through here first.
 *
 * The rules do not depend on the URL being well formed: a URL libpq cannot
 * parse is exactly the one whose message quotes it. */
#ifndef PAWL_REDACT_H
#define PAWL_REDACT_H

#include <stddef.h>

/* What a redacted secret becomes. */
#define REDACT_MARK "***"

/* The database URL as it may be shown: the password in the user
 * information, in a password= query parameter or keyword, replaced by ***.
 * Whatever its shape; never fails (on out of memory it writes a fixed
 * placeholder). Writes at most len bytes, NUL included. */
void pawl__redact_url(const char *url, char *out, size_t len);

/* A web address (a webhook's) as logs may show it: its user information
 * and its query replaced, then as pawl__redact_url. Never fails; writes at
 * most len bytes, NUL included. */
void pawl__redact_web_url(const char *url, char *out, size_t len);

/* `msg` as it may be shown, given the connection string it is about
 * (`conninfo`, NULL if none): each form of the password that conninfo
 * carries (as written, percent-decoded, unquoted), conninfo itself where
 * it is quoted whole, and whatever looks like a password in a URL or a
 * password= pair, replaced by ***. When `malformed` (libpq could not parse
 * conninfo) and conninfo carries a password, every double-quoted part of
 * the message is replaced too: libpq quotes the piece it stumbled on, and
 * a malformed URL's pieces need not be where a well-formed one's would be.
 * Never fails; writes at most len bytes, NUL included. */
void pawl__redact_message(const char *conninfo, const char *msg, int malformed,
                    char *out, size_t len);

/* ---- JSON payloads in admin views -----------------------------------------
 *
 * Views (pawl show, pawl jobs --json, the console, log fields) never show a
 * payload as stored: the value of every object member whose key contains
 * one of REDACT_JSON_WORDS (ASCII case-insensitive, after the key's
 * escapes are decoded, so "pass\u0077ord" is "password"), or is exactly one
 * of the job type's own `redact` names, is replaced whole (a scalar, an
 * object or an array) by "<redacted>", at any depth, inside arrays too.
 * Everything else is copied byte for byte: numbers keep every digit,
 * members their order, strings their escapes, the text its whitespace. */

/* What a redacted JSON value becomes (a JSON string). */
#define REDACT_JSON_MARK "\"<redacted>\""

/* The words a secret key contains (lower case). */
#define REDACT_JSON_WORDS                                                    \
  "password", "passwd", "token", "secret", "authorization", "cookie",        \
      "api_key", "key", "credential"

struct pawl_buf;

/* 1 if an object member named key[0..len) (raw: escapes decoded, any case)
 * is secret by the built-in words or is one of names[0..nnames). */
int pawl__redact_key(const char *key, size_t len, const char *const *names,
                     size_t nnames);

/* Appends json[0..len) to `out` with the secret members' values replaced
 * by REDACT_JSON_MARK. The text is read as it streams (no tree), with at
 * most JSON_MAX_DEPTH (json.h) open arrays and objects. Returns 0; -1 when
 * the text is not JSON it can read (what stays in `out` is then partial:
 * the caller shows a placeholder, never the text), with `err` saying where;
 * -2 out of memory (out->oom). Stored payloads passed pawl's JSON check,
 * so -1 means the text did not come from the store. */
int pawl__redact_json(const char *json, size_t len, const char *const *names,
                      size_t nnames, struct pawl_buf *out, char *err,
                      size_t errlen);

/* The names of a JSON array of strings (a type's redact list as pawl_types
 * holds it), decoded: *names (n + 1 pointers, the last NULL, and the
 * strings, in one allocation: pawl__free(*names)), *n of them. -1 when
 * `json` is not an array of strings, -2 out of memory. */
int pawl__redact_names(const char *json, char ***names, size_t *n);

#endif
