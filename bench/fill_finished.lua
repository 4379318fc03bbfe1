-- fill_finished.lua: the benchmarks' way to keep finished jobs as history
-- (bench/stats_cost.lua, bench/metrics_fill.lua): enqueues n jobs of
-- `jtype` through the Lua module, 1,000 a transaction, in the queues
-- queue_of(i) names, claims them and finishes them (one in ten failed,
-- the rest succeeded) at the handle's clock. Loaded with dofile; returns
-- the function.
return function(db, jtype, n, queue_of)
  local done = 0
  while done < n do
    local k = math.min(1000, n - done)
    local items = {}
    for i = 1, k do
      items[i] = { jtype, { i = done + i }, { queue = queue_of(done + i) } }
    end
    assert(db:enqueue_many(items))
    local jobs = assert(db:claim(k))
    assert(#jobs > 0, "claimed nothing")
    local outs = {}
    for i, j in ipairs(jobs) do
      local failed = (done + i) % 10 == 0
      outs[i] = { id = j.id, attempt = j.attempt,
                  kind = failed and "failed" or "succeeded",
                  result = not failed and { ok = true } or nil,
                  error = failed and "boom" or nil }
    end
    assert(db:finish(outs))
    done = done + #jobs
  end
end
