-- Always fails, with a credential in its error message: the sanitizer
-- keeps it out of every stored place, and after three attempts (backing
-- off 1 s, then 2 s) the job lands in the dead-letter set. The card
-- number in its payload is shown as "<redacted>" by `pawl show` and the
-- console (`redact`; `--raw` shows it).
return {
  max_attempts = 3,
  redact = { "card" },
  retry = pawl.retry.exponential { base = 1, factor = 2, max = 10, jitter = 0 },
  run = function(job)
    error("card declined by https://shop:s3cr3t@payments.example/charge "
          .. "(token=tok_live_4242)")
  end,
  on_dead = function(job, err)
    print("charge " .. job.id .. " is in the dead-letter set")
  end,
}
