/* test_list_metrics_unit.h: the metrics endpoint's label escaping and
 * option checks. */
TEST_ENTRY(metrics_label_escapes)
TEST_ENTRY(metrics_bad_options)
