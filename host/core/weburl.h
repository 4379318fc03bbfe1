/* weburl.h: where a web address sends data to, for webhook grants and
 * per-destination queues.
 *
 * A destination is the scheme, host and port of an http:// or https://
 * URL, written "scheme://host:port" with the host in lower case and the
 * port always given (80 and 443 when the URL names none), so that two
 * spellings of one place are one destination. An IPv6 host keeps its
 * brackets ("http://[::1]:8080"). */
#ifndef PAWL_WEBURL_H
#define PAWL_WEBURL_H

#include <stddef.h>

/* The longest destination text, NUL included. */
#define PAWL__WEB_DEST_MAX 300

/* Writes the destination of `url` into out (PAWL__WEB_DEST_MAX bytes).
 * Returns 0, or -1 when url is not an http:// or https:// URL with a
 * host and a port 1..65535 (out then holds ""). */
int pawl__web_dest(const char *url, char *out);

/* A grant as an operator writes it: HOST or HOST:PORT ([V6]:PORT for an
 * IPv6 address), any case. Returns 1 when it covers destination `dest`
 * (from pawl__web_dest): the same host, and the same port, or with no
 * port in the grant, the default port of dest's scheme. */
int pawl__web_grant_covers(const char *grant, const char *dest);

/* Checks a grant's form; returns 0, or -1 with the reason in err. */
int pawl__web_grant_check(const char *grant, char *err, size_t errlen);

#endif
