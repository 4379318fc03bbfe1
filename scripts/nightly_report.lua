-- A longer job: reports progress as it goes, checks whether it was
-- canceled, and enqueues a mail job when done.
return {
  queue = "reports",
  timeout = 60,
  run = function(job, ctx)
    local sections = job.payload.sections or 5
    for i = 1, sections do
      if ctx:canceled() then
        return { stopped_at = i }
      end
      local t = pawl.time() + 0.2
      while pawl.time() < t do end -- stands in for real work
      ctx:progress(i, sections)
    end
    pawl.enqueue("send_welcome", { to = job.payload.mail_to })
    return { sections = sections }
  end,
}
