/* test_list_json_readers.h: every JSON reader against one table
 * (test_json_readers.c). */
TEST_ENTRY(json_readers_agree)
TEST_ENTRY(json_readers_depth)
TEST_ENTRY(json_readers_keys)
TEST_ENTRY(json_readers_tokens)
