import type { MachineEffect, MachineTimings } from '../../src/serve/turn-machine.ts';

// What the turn machine's unit tests share: the production defaults of serve's timings, and a
// typed filter over the effects one input produced.

export const TIMINGS: MachineTimings = {
  interruptDeadlineMs: 10_000,
  stallMs: 120_000,
  toolStallMs: 900_000,
  cliStartMs: 60_000,
  killGraceMs: 5000,
  idleMs: 900_000,
  maxLifetimeMs: 8 * 3_600_000,
  shutdownFinishMs: 5000,
  shutdownDeadlineMs: 25_000,
  cliStopGraceMs: 3000,
};

/** The effects of one type, typed as that type. */
export const effectsOf = <K extends MachineEffect['type']>(fx: MachineEffect[], type: K) =>
  fx.filter((e): e is Extract<MachineEffect, { type: K }> => e.type === type);
