/* test_list_weburl.h: web destinations and webhook grants. */
TEST_ENTRY(weburl_dest)
TEST_ENTRY(weburl_grants)
