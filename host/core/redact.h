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

#endif
