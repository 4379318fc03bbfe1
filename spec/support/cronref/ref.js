// ref.js: the reference side of pawl's cron cross-check (spec/unit/test_cron.c,
// test cron_vs_croner). Reads cases, one per line:
//
//   ID <TAB> EXPRESSION <TAB> ZONE <TAB> AFTER_MS <TAB> COUNT
//
// and prints, one line per case, the next COUNT fire times strictly after
// AFTER_MS as computed by croner (pinned in package.json / package-lock.json):
//
//   ID <TAB> MS MS ...        or        ID <TAB> ERR message
//
// croner runs with its defaults: Vixie's OR of day-of-month and day-of-week,
// Sunday 0 and 7, and its Vixie-style daylight-saving rules.
'use strict';
const fs = require('fs');
const path = require('path');
const { Cron } = require(path.join(__dirname, 'node_modules', 'croner'));

const input = fs.readFileSync(process.argv[2] || 0, 'utf8');
const out = [];
for (const line of input.split('\n')) {
  if (!line) continue;
  const [id, expr, zone, after, count] = line.split('\t');
  try {
    const job = new Cron(expr, { timezone: zone, paused: true });
    const runs = job.nextRuns(Number(count), new Date(Number(after)));
    out.push(id + '\t' + runs.map((d) => d.getTime()).join(' '));
  } catch (e) {
    out.push(id + '\tERR ' + String(e.message).replace(/[\t\n]/g, ' '));
  }
}
process.stdout.write(out.join('\n') + '\n');
