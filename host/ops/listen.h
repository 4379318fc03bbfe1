/* listen.h: what the host's network listeners share (ops/): the admin
 * console's TCP listener (admin_server.c) and the metrics endpoint's HTTP
 * server (http.c) bind "ADDRESS:PORT" and read a token file the same way. */
#ifndef PAWL_LISTEN_H
#define PAWL_LISTEN_H

#include <stddef.h>

/* The longest token a token file may hold. */
#define PAWL__TOKEN_MAX 4096

/* Binds and listens on "ADDRESS:PORT" (a numeric IPv4 address or an
 * [IPv6] one in brackets, PORT 0..65535, 0: any free one); `flag` names
 * the option in messages ("--admin-listen"). On success *fd is the
 * listening socket (non-blocking, close-on-exec; the caller's), `name`
 * the bound address as "ADDRESS:PORT" (the port chosen for 0), and
 * *loopback 1 when the address is a loopback one (127.0.0.0/8, ::1, or
 * 127.x mapped into IPv6). PAWL_EINVAL for a malformed value, PAWL_EIO
 * when the bind fails; the message in err. */
int pawl__tcp_listen(const char *spec, const char *flag, int *fd, char *name,
                     size_t namelen, int *loopback, char *err, size_t errlen);

/* Reads a token file: a regular file of 1..PAWL__TOKEN_MAX bytes that
 * neither its group nor others may read or write (mode & 0066 clear), one
 * line; the token is its text without trailing white space, NUL-terminated
 * in `token` (PAWL__TOKEN_MAX + 1 bytes), its length in *len. `what` names it in
 * messages ("admin token file"). PAWL_EIO (cannot open) or PAWL_EINVAL. */
int pawl__token_read(const char *file, const char *what, char *token,
                     size_t *len, char *err, size_t errlen);

/* 1 when `given` (glen bytes) is the token, compared in a time that
 * depends on the token's length only. */
int pawl__token_ok(const char *token, size_t len, const char *given,
                   size_t glen);

#endif
