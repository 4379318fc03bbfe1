-- A job that just works: logs what it does and returns a result.
return {
  queue = "mail",
  run = function(job, ctx)
    ctx:log("info", "sending welcome mail", { to = job.payload.to })
    return { sent = true, to = job.payload.to }
  end,
}
