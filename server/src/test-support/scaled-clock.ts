import { realDeadline, realSleep, type Clock } from '../clock.ts';

/**
 * A clock running `factor` times faster than real time, from now on: a
 * second of it passes in 1/factor real seconds. With the fake OpenAI's
 * `timeScale` knob set to the same factor, a 60 s run and a 3 s poll
 * interval keep their proportions while the test takes a second.
 */
export function scaledClock(factor: number): Clock & { toReal(ms: number): number; fromReal(realMs: number): number } {
  const origin = Date.now();
  return {
    now: () => new Date(origin + (Date.now() - origin) * factor),
    sleep: (ms, signal) => realSleep(ms / factor, signal),
    deadline: (ms) => realDeadline(ms / factor),
    /** A duration of this clock in real milliseconds. */
    toReal: (ms) => ms / factor,
    /** A real duration in this clock's milliseconds. */
    fromReal: (realMs) => realMs * factor,
  };
}
