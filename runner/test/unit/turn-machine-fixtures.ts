import {
  type MachineEffect,
  type MachineInput,
  type MachineTimings,
  TurnMachine,
} from '../../src/serve/turn-machine.ts';

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

/** A machine whose hub link is up and whose first CLI is ready; `run` hands it one input. */
export function readyMachine() {
  const m = new TurnMachine(TIMINGS);
  const run = (input: MachineInput) => m.handle(input);
  run({ type: 'start' });
  run({ type: 'linked' });
  run({ type: 'cli_ready', gen: 1 });
  return run;
}
