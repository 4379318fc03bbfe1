/* weburl.c: destinations of web addresses (weburl.h). */
#include "weburl.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Splits "host[:port]" (n bytes at s) into a lower-case host and a port
 * (0 when none is given). A host is a name or an IPv4 address of letters,
 * digits, '.', '-' and '_', or an IPv6 address in brackets. Returns 0, or
 * -1 when s is not of that form. */
static int web_hostport(const char *s, size_t n, char *host, size_t hostlen,
                        int *port) {
  size_t h = 0; /* the host's length, brackets included */
  if (n && s[0] == '[') {
    const char *close = memchr(s, ']', n);
    if (!close) return -1;
    h = (size_t)(close - s) + 1;
    for (size_t i = 1; i + 1 < h; i++)
      if (!isxdigit((unsigned char)s[i]) && s[i] != ':' && s[i] != '.')
        return -1;
    if (h < 3) return -1;
  } else {
    while (h < n && s[h] != ':') {
      unsigned char c = (unsigned char)s[h];
      if (!isalnum(c) && c != '.' && c != '-' && c != '_') return -1;
      h++;
    }
    if (h == 0) return -1;
  }
  if (h >= hostlen) return -1;
  for (size_t i = 0; i < h; i++) host[i] = (char)tolower((unsigned char)s[i]);
  host[h] = 0;
  *port = 0;
  if (h == n) return 0;
  if (s[h] != ':' || h + 1 == n || n - h - 1 > 5) return -1;
  int p = 0;
  for (size_t i = h + 1; i < n; i++) {
    if (!isdigit((unsigned char)s[i])) return -1;
    p = p * 10 + (s[i] - '0');
  }
  if (p < 1 || p > 65535) return -1;
  *port = p;
  return 0;
}

int pawl__web_dest(const char *url, char *out) {
  out[0] = 0;
  const char *scheme;
  size_t skip;
  if (strncasecmp(url, "http://", 7) == 0) {
    scheme = "http", skip = 7;
  } else if (strncasecmp(url, "https://", 8) == 0) {
    scheme = "https", skip = 8;
  } else {
    return -1;
  }
  const char *auth = url + skip;
  size_t n = strcspn(auth, "/?#");
  /* A backslash is read as a slash by some parsers and not by others:
   * refuse what could reach another host than the one named here. */
  if (memchr(auth, '\\', n)) return -1;
  /* User information ends at the authority's last '@'. */
  for (size_t i = n; i > 0; i--) {
    if (auth[i - 1] == '@') {
      auth += i;
      n -= i;
      break;
    }
  }
  char host[256];
  int port;
  if (web_hostport(auth, n, host, sizeof host, &port) != 0) return -1;
  if (!port) port = scheme[4] == 's' ? 443 : 80;
  snprintf(out, PAWL__WEB_DEST_MAX, "%s://%s:%d", scheme, host, port);
  return 0;
}

int pawl__web_grant_check(const char *grant, char *err, size_t errlen) {
  char host[256];
  int port;
  if (grant && web_hostport(grant, strlen(grant), host, sizeof host, &port) == 0)
    return 0;
  snprintf(err, errlen,
           "webhook destination must be HOST or HOST:PORT (a name, an IPv4 "
           "address or [IPv6], and a port 1..65535; got \"%.200s\")",
           grant ? grant : "");
  return -1;
}

int pawl__web_grant_covers(const char *grant, const char *dest) {
  char ghost[256], dhost[256];
  int gport, dport;
  const char *sep = strstr(dest, "://");
  if (!sep) return 0;
  int https = sep - dest == 5;
  if (web_hostport(grant, strlen(grant), ghost, sizeof ghost, &gport) != 0 ||
      web_hostport(sep + 3, strlen(sep + 3), dhost, sizeof dhost, &dport) != 0)
    return 0;
  if (!gport) gport = https ? 443 : 80;
  return strcmp(ghost, dhost) == 0 && gport == dport;
}
