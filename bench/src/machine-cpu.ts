import { readdirSync, readFileSync } from 'node:fs';

/** Linux counts CPU time in /proc in ticks of 1/100 s (USER_HZ, 100 on every architecture Node runs on). */
const TICK_MS = 10;

/** CPU time spent so far, in ms: by the whole machine, and within it by the local PostgreSQL server's processes and by this process's threads. */
export interface MachineCpu {
  busyMs: number;
  postgresMs: number;
  /** This process's threads by name (a worker's `name`; V8's helpers share theirs). */
  threadsMs: Record<string, number>;
  /** The time those threads were ready to run but waited for a core (the kernel's run delay, /proc/<tid>/schedstat). */
  threadsWaitMs: Record<string, number>;
}

/**
 * The machine's busy CPU time (every core, every process: the server's
 * threads, the load, PostgreSQL, the kernel's network work) from /proc/stat,
 * and the local PostgreSQL processes' share from /proc/<pid>/stat; null where
 * there is no /proc. Two readings around a round give what its answers cost
 * the machine, which a 2-core machine runs out of before one thread does.
 */
export function machineCpu(): MachineCpu | null {
  let stat: string;
  try {
    stat = readFileSync('/proc/stat', 'utf8');
  } catch {
    return null;
  }
  // cpu  user nice system idle iowait irq softirq steal …
  const [user, nice, system, , , irq, softirq, steal] = stat.slice(0, stat.indexOf('\n')).trim().split(/\s+/).slice(1).map(Number);
  const busy = [user, nice, system, irq, softirq, steal].reduce<number>((total, ticks) => total + (ticks ?? 0), 0);
  let postgres = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let line: string;
    try {
      line = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // gone since the listing
    }
    if (!line.slice(line.indexOf('(') + 1, line.lastIndexOf(')')).startsWith('postgres')) continue;
    postgres += cpuTicks(line);
  }
  const threadsMs: Record<string, number> = {};
  const threadsWaitMs: Record<string, number> = {};
  for (const task of readdirSync('/proc/self/task')) {
    try {
      const line = readFileSync(`/proc/self/task/${task}/stat`, 'utf8');
      const name = line.slice(line.indexOf('(') + 1, line.lastIndexOf(')'));
      threadsMs[name] = (threadsMs[name] ?? 0) + cpuTicks(line) * TICK_MS;
      // "time on a core, time waiting on a run queue, time slices", in ns.
      const waitedNs = Number(readFileSync(`/proc/self/task/${task}/schedstat`, 'utf8').split(' ')[1]);
      if (Number.isFinite(waitedNs)) threadsWaitMs[name] = (threadsWaitMs[name] ?? 0) + waitedNs / 1e6;
    } catch {
      // ended since the listing
    }
  }
  return { busyMs: busy * TICK_MS, postgresMs: postgres * TICK_MS, threadsMs, threadsWaitMs };
}

/** User and system ticks of a /proc stat line: after "pid (comm) ", state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime. */
function cpuTicks(line: string): number {
  const fields = line.slice(line.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** What the machine spent between two readings. */
export function machineCpuSince(before: MachineCpu | null): MachineCpu | null {
  const now = machineCpu();
  if (!before || !now) return null;
  const since = (now: Record<string, number>, before: Record<string, number>) => Object.fromEntries(Object.entries(now).map(([name, ms]) => [name, ms - (before[name] ?? 0)]));
  return { busyMs: now.busyMs - before.busyMs, postgresMs: now.postgresMs - before.postgresMs, threadsMs: since(now.threadsMs, before.threadsMs), threadsWaitMs: since(now.threadsWaitMs, before.threadsWaitMs) };
}
