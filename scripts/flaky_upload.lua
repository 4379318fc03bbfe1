-- Fails on its first two attempts, then succeeds: the retry policy waits
-- one second between attempts.
return {
  max_attempts = 5,
  retry = pawl.retry.fixed { delay = 1 },
  run = function(job, ctx)
    if job.attempt < 3 then
      error(("storage timed out on attempt %d"):format(job.attempt))
    end
    ctx:progress(1, 1)
    return { uploaded = job.payload.file, attempts = job.attempt }
  end,
}
