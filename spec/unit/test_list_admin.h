TEST_ENTRY(admin_duration)
