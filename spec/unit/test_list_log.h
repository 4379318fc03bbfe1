TEST_ENTRY(log_escapes_text)
TEST_ENTRY(log_escapes_json)
