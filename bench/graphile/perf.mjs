// graphile-worker side of pawl's PostgreSQL benchmark (run by Node 22).
//
//   node perf.mjs URL [WORKERS=1] [JOBS=100000]
//
// Prints one JSON line on stdout; progress and errors go to stderr.
//
// It follows graphile-worker's own perfTest (github.com/graphile/worker,
// perfTest/): what was copied from where is said at each place below.
//
// URL is a libpq-style URL. node-postgres (pg-connection-string) already
// reads `?host=/socket/dir&port=N` as a unix-socket directory, the way
// libpq does, so the URL that spec/support/pg_server.sh prints is passed
// through unchanged (checked: inet_server_addr() is NULL, i.e. a socket).
import { fork } from "node:child_process";
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { Logger, run, runMigrations } from "graphile-worker";

const SCHEMA = "graphile_worker"; // graphile-worker's default; pawl uses others
const LATENCY_SAMPLES = 200;
const LATENCY_PAUSE_MS = 10; // idle gap between latency samples

// Wall-clock milliseconds with sub-ms precision, comparable across processes
// on one machine (each process's timeOrigin is the wall clock at its start).
const now = () => performance.timeOrigin + performance.now();
const log = (...a) => console.error("[graphile-bench]", ...a);

// graphile-worker logs INFO lines to stdout by default; stdout must carry
// only the JSON line, so keep warnings and errors, on stderr.
const logger = new Logger(() => (level, message) => {
  if (level === "error" || level === "warning") {
    console.error(`[graphile-worker] ${level}: ${message}`);
  }
});

// The worker settings of perfTest's fastest ("With batching") configuration:
// perfTest/graphile.config.js and the docs' "Performance" page
// (worker.graphile.org/docs/performance): concurrentJobs 24 (run.js: CONCURRENCY = 24,
// passed as `-j 24 -m 25`), maxPoolSize concurrency + 1, localQueue of 500,
// completeJobBatchDelay 0 and failJobBatchDelay 0 (batched completion,
// flushed on the next tick). graphile.config.js also sets
// localQueue.refetchDelay = 10ms; the documented fastest preset does not,
// and neither do we. perfTest runs PARALLELISM = 4 worker processes; here
// the process count is the WORKERS argument, to match what pawl runs.
const CONCURRENCY = 24;
const workerPreset = (connectionString) => ({
  worker: {
    connectionString,
    schema: SCHEMA,
    concurrentJobs: CONCURRENCY,
    maxPoolSize: CONCURRENCY + 1,
    localQueue: { size: 500 },
    completeJobBatchDelay: 0,
    failJobBatchDelay: 0,
    logger,
  },
});

// Starts a runner with perfTest's settings; tasks comes from the caller.
const startRunner = (url, taskList) =>
  run({
    preset: workerPreset(url),
    taskList,
    parsedCronItems: [], // no crontab file lookup in the cwd
    noHandleSignals: true,
  });

// ---- worker process: `perf.mjs --worker URL` (forked by the parent) ----
// Runs the no-op task, tells the parent (over IPC) when its first job
// started and how many jobs it has run; stops when told to.
async function workerMain(url) {
  let done = 0;
  let reported = 0;
  const runner = await startRunner(url, {
    noop: () => {
      if (done++ === 0) process.send({ first: now() });
    },
  });
  // Counts go up in batches (not per job) so IPC costs little.
  const tick = setInterval(() => {
    if (done !== reported) process.send({ done: done - reported });
    reported = done;
  }, 20);
  process.on("message", async (m) => {
    if (m !== "stop") return;
    clearInterval(tick);
    await runner.stop();
    process.exit(0);
  });
  process.send({ ready: true });
}

// ---- parent process ----

// Drops and recreates graphile-worker's schema so every run starts empty
// and nothing outside that schema (e.g. pawl's tables) is touched.
async function resetSchema(pool, url) {
  await pool.query(`drop schema if exists ${SCHEMA} cascade`);
  await runMigrations({ connectionString: url, schema: SCHEMA, logger });
}

// Bulk enqueue as perfTest/init.js does it: one add_jobs() call with the
// whole batch as a JSON array, expanded server-side by
// json_populate_recordset. Timed from building the array to commit.
async function enqueue(pool, jobs) {
  const t0 = now();
  const specs = [];
  for (let i = 0; i < jobs; i++) specs.push({ identifier: "noop", payload: { id: i } });
  await pool.query(
    `select 1 from ${SCHEMA}.add_jobs(array(
       select json_populate_recordset(null::${SCHEMA}.job_spec, $1::json)))`,
    [JSON.stringify(specs)],
  );
  return jobs / ((now() - t0) / 1000);
}

const remaining = async (pool) =>
  Number((await pool.query(`select count(*) from ${SCHEMA}._private_jobs`)).rows[0].count);

// Runs `workers` processes until the queue is empty. The clock runs from
// the first job started in any process (process and module start-up is
// left out, as perfTest subtracts its measured start-up time) to the
// moment the jobs table is seen empty, i.e. every completion committed
// (completions are batched, so a job can have run before its row goes).
async function processAll(pool, url, workers, jobs) {
  const self = new URL(import.meta.url).pathname;
  let first = Infinity;
  let ran = 0;
  let ready = 0;
  let allRan;
  const allRanP = new Promise((r) => (allRan = r));
  const children = [];
  for (let i = 0; i < workers; i++) {
    const child = fork(self, ["--worker", url], { stdio: ["ignore", "ignore", "inherit", "ipc"] });
    child.on("message", (m) => {
      if (m.ready) ready++;
      if (m.first) first = Math.min(first, m.first);
      if (m.done && (ran += m.done) >= jobs) allRan();
    });
    child.on("exit", (code) => {
      if (code) {
        log(`worker ${i} exited with ${code}`);
        process.exit(1);
      }
    });
    children.push(child);
  }
  await allRanP;
  // Poll only now, so the polling itself does not load the run.
  while ((await remaining(pool)) > 0) await sleep(2);
  const end = now();
  log(`${ready}/${workers} workers ran ${ran} jobs`);
  await Promise.all(
    children.map((c) => new Promise((r) => { c.removeAllListeners("exit"); c.on("exit", r); c.send("stop"); })),
  );
  return jobs / ((end - first) / 1000);
}

// Pickup latency on an idle worker, as perfTest/latencyTest.js measures it:
// time from just before add_job() (one job per call, from another
// connection) to the task body starting, one job at a time. latencyTest
// runs 1000 samples after a 100-job warm-up with default (unbatched)
// options; here the worker uses the same perfTest settings as above.
async function pickupLatency(pool, url) {
  const started = new Map(); // id -> resolve(time the task body started)
  const runner = await startRunner(url, {
    latency: ({ id }) => started.get(id)(now()),
  });
  const client = await pool.connect();
  const one = async (id) => {
    const ran = new Promise((r) => started.set(id, r));
    const t0 = now();
    await client.query(`select ${SCHEMA}.add_job('latency', json_build_object('id', $1::int))`, [id]);
    return (await ran) - t0;
  };
  try {
    for (let id = -20; id < 0; id++) await one(id); // warm-up, not counted
    await sleep(500);
    const samples = [];
    for (let id = 0; id < LATENCY_SAMPLES; id++) {
      samples.push(await one(id));
      await sleep(LATENCY_PAUSE_MS);
    }
    samples.sort((a, b) => a - b);
    const pct = (p) => samples[Math.ceil((p / 100) * samples.length) - 1]; // nearest rank
    return { p50: pct(50), p99: pct(99) };
  } finally {
    client.release();
    await runner.stop();
  }
}

async function main() {
  const [url, w = "1", n = "100000"] = process.argv.slice(2);
  const workers = parseInt(w, 10);
  const jobs = parseInt(n, 10);
  if (!url || !(workers > 0) || !(jobs > 0)) {
    console.error("usage: perf.mjs URL [WORKERS=1] [JOBS=100000]");
    process.exit(2);
  }
  const version = JSON.parse(
    readFileSync(new URL("node_modules/graphile-worker/package.json", import.meta.url)),
  ).version;
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    log("resetting schema");
    await resetSchema(pool, url);
    log(`enqueueing ${jobs} jobs`);
    const enqueuePerS = await enqueue(pool, jobs);
    log(`processing with ${workers} worker process(es)`);
    const processedPerS = await processAll(pool, url, workers, jobs);
    log("measuring pickup latency");
    const lat = await pickupLatency(pool, url);
    const r1 = (x) => Math.round(x * 10) / 10;
    const r2 = (x) => Math.round(x * 100) / 100;
    console.log(JSON.stringify({
      system: "graphile-worker",
      version,
      node: process.version,
      workers,
      jobs,
      enqueue_per_s: r1(enqueuePerS),
      processed_per_s: r1(processedPerS),
      pickup_p50_ms: r2(lat.p50),
      pickup_p99_ms: r2(lat.p99),
    }));
  } finally {
    await pool.end();
  }
}

const fail = (e) => {
  console.error(e);
  process.exit(1);
};
if (process.argv[2] === "--worker") workerMain(process.argv[3]).catch(fail);
else main().catch(fail);
