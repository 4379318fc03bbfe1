/* test_list_metrics_unit.h: the metrics endpoint's label escaping and
 * option checks. */
TEST_ENTRY_THREADS(metrics_label_escapes)
TEST_ENTRY_HTTP_THREADS(metrics_bad_options)
