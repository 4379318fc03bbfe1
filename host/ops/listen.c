/* listen.c: binding "ADDRESS:PORT" and reading token files, for the
 * admin console's TCP listener and the metrics endpoint (listen.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pawl.h"

static int listen_is_loopback(const struct sockaddr *sa) {
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (sa->sa_family == AF_INET6) {
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(a)) return 1;
    return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
  }
  return 0;
}

int pawl__tcp_listen(const char *spec, const char *flag, int *fd_out,
                     char *name, size_t namelen, int *loopback, char *err,
                     size_t errlen) {
  char host[64];
  const char *colon = strrchr(spec, ':');
  const char *hs = spec;
  size_t hl = colon ? (size_t)(colon - spec) : 0;
  if (hl >= 2 && hs[0] == '[' && hs[hl - 1] == ']') hs++, hl -= 2;
  char *end = NULL;
  long port = colon ? strtol(colon + 1, &end, 10) : -1;
  if (!colon || hl == 0 || hl >= sizeof host || !end || *end ||
      end == colon + 1 || port < 0 || port > 65535) {
    snprintf(err, errlen,
             "%s expects ADDRESS:PORT with a numeric address and a port "
             "0..65535 (got \"%s\")",
             flag, spec);
    return PAWL_EINVAL;
  }
  memcpy(host, hs, hl);
  host[hl] = 0;
  struct addrinfo hints = {.ai_family = AF_UNSPEC,
                           .ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV |
                                       AI_PASSIVE};
  struct addrinfo *res = NULL;
  char ps[8];
  snprintf(ps, sizeof ps, "%ld", port);
  if (getaddrinfo(host, ps, &hints, &res) != 0 || !res) {
    snprintf(err, errlen, "%s: \"%s\" is not a numeric address", flag, host);
    return PAWL_EINVAL;
  }
  if (loopback) *loopback = listen_is_loopback(res->ai_addr);
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                  0);
  int one = 1;
  int ok = fd >= 0 &&
           setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
           bind(fd, res->ai_addr, res->ai_addrlen) == 0 && listen(fd, 16) == 0;
  int e = errno;
  freeaddrinfo(res);
  if (!ok) {
    if (fd >= 0) close(fd);
    snprintf(err, errlen, "%s %s: %s", flag, spec, strerror(e));
    return PAWL_EIO;
  }
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  char hb[INET6_ADDRSTRLEN] = "?", pb[8] = "?";
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
    getnameinfo((struct sockaddr *)&ss, sl, hb, sizeof hb, pb, sizeof pb,
                NI_NUMERICHOST | NI_NUMERICSERV);
  snprintf(name, namelen, strchr(hb, ':') ? "[%s]:%s" : "%s:%s", hb, pb);
  *fd_out = fd;
  return 0;
}

int pawl__token_read(const char *file, const char *what, char *token,
                     size_t *len, char *err, size_t errlen) {
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    snprintf(err, errlen, "%s %s: %s", what, file, strerror(errno));
    if (fd >= 0) close(fd);
    return PAWL_EIO;
  }
  const char *why = NULL;
  char modewhy[120];
  if (!S_ISREG(st.st_mode)) {
    why = "is not a regular file";
  } else if (st.st_mode & 0066) {
    /* Any bit for the group or others: a group the operator did not
     * think about (the web server's, the deploy user's) reads the secret
     * as easily as everybody does. */
    snprintf(modewhy, sizeof modewhy,
             "is mode %04o: its group or others may read or write it "
             "(chmod 600 it)",
             (unsigned)(st.st_mode & 07777));
    why = modewhy;
  } else if (st.st_size > PAWL__TOKEN_MAX)
    why = "is larger than 4 KiB";
  ssize_t n = 0;
  if (!why) {
    n = read(fd, token, PAWL__TOKEN_MAX);
    if (n < 0) why = "cannot be read";
  }
  close(fd);
  while (!why && n > 0 &&
         (token[n - 1] == '\n' || token[n - 1] == '\r' ||
          token[n - 1] == ' ' || token[n - 1] == '\t'))
    n--;
  if (!why && n == 0) why = "is empty";
  if (!why && memchr(token, '\n', (size_t)n)) why = "holds more than one line";
  if (why) {
    snprintf(err, errlen, "%s %s %s", what, file, why);
    return PAWL_EINVAL;
  }
  token[n] = 0;
  *len = (size_t)n;
  return 0;
}

int pawl__token_ok(const char *token, size_t len, const char *given,
                   size_t glen) {
  volatile unsigned char diff = glen != len;
  for (size_t i = 0; i < len; i++)
    diff |= (unsigned char)token[i] ^
            (unsigned char)(i < glen ? given[i] : 0);
  return diff == 0;
}
