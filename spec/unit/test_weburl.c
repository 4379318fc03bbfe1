/* test_weburl.c: the destination of a web address and the grants that
 * cover it (weburl.h): one destination however a URL spells it, and no
 * URL that reaches one place while looking like another. */
#include <string.h>

#include "unit.h"
#include "weburl.h"

static void dest_is(const char *url, const char *want) {
  char out[PAWL__WEB_DEST_MAX];
  int rc = pawl__web_dest(url, out);
  if (!want) {
    CHECK_INT(rc, ==, -1);
    CHECK_STR(out, "");
    return;
  }
  CHECK_INT(rc, ==, 0);
  CHECK_STR(out, want);
}

void test_weburl_dest(void) {
  dest_is("http://example.com/x", "http://example.com:80");
  dest_is("HTTPS://Example.COM", "https://example.com:443");
  dest_is("http://u:pw@hooks.example:8080/a?b=c#d", "http://hooks.example:8080");
  /* The authority's last '@' ends the user information. */
  dest_is("http://evil.example@good.example/", "http://good.example:80");
  dest_is("http://a@b@127.0.0.1:9/", "http://127.0.0.1:9");
  dest_is("http://[::1]:8080/x", "http://[::1]:8080");
  dest_is("https://[fe80::1]", "https://[fe80::1]:443");
  dest_is("http://h?x=@other/", "http://h:80");
  dest_is("http://good.example\\@evil.example/", NULL);
  dest_is("ftp://example.com/", NULL);
  dest_is("http://", NULL);
  dest_is("http:///path", NULL);
  dest_is("http://host:/", NULL);
  dest_is("http://host:0/", NULL);
  dest_is("http://host:65536/", NULL);
  dest_is("http://host:123456/", NULL);
  dest_is("http://host:8o/", NULL);
  dest_is("http://ho st/", NULL);
  dest_is("http://ho\nst/", NULL);
  dest_is("http://[::1/", NULL);
  dest_is("http://[]/", NULL);
  dest_is("http://[zz::1]/", NULL);
}

void test_weburl_grants(void) {
  CHECK_INT(pawl__web_grant_covers("example.com", "http://example.com:80"), ==, 1);
  CHECK_INT(pawl__web_grant_covers("EXAMPLE.com", "https://example.com:443"), ==, 1);
  CHECK_INT(pawl__web_grant_covers("example.com", "http://example.com:8080"), ==, 0);
  CHECK_INT(pawl__web_grant_covers("example.com:8080", "http://example.com:8080"), ==, 1);
  CHECK_INT(pawl__web_grant_covers("example.com:443", "http://example.com:80"), ==, 0);
  CHECK_INT(pawl__web_grant_covers("example.com", "http://example.com.evil:80"), ==, 0);
  CHECK_INT(pawl__web_grant_covers("ample.com", "http://example.com:80"), ==, 0);
  CHECK_INT(pawl__web_grant_covers("[::1]:9", "http://[::1]:9"), ==, 1);
  CHECK_INT(pawl__web_grant_covers("127.0.0.1", "http://127.0.0.1:80"), ==, 1);
  char err[256];
  CHECK_INT(pawl__web_grant_check("hooks.example:8080", err, sizeof err), ==, 0);
  CHECK_INT(pawl__web_grant_check("[::1]", err, sizeof err), ==, 0);
  CHECK_INT(pawl__web_grant_check("http://hooks.example", err, sizeof err), ==, -1);
  CHECK(strstr(err, "must be HOST or HOST:PORT") != NULL);
  CHECK(strstr(err, "http://hooks.example") != NULL);
  CHECK_INT(pawl__web_grant_check("", err, sizeof err), ==, -1);
  CHECK_INT(pawl__web_grant_check("h:0", err, sizeof err), ==, -1);
  CHECK_INT(pawl__web_grant_check("h/x", err, sizeof err), ==, -1);
}
